"""OpInfo databases: which ops exist, their samples (deterministic), and how to check each."""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

#: The databases of ``torch.testing._internal`` that the sweep walks, by our name.
DATABASES = ("op_db", "hop_db", "custom_op_db")

#: Seed set before every ``sample_inputs`` call so samples are identical on every worker and run.
SAMPLE_SEED = 0

#: Ops whose samples carry values that random data breaks in ways eager does not reject
#: (the randomized rerun is skipped for them, with this reason recorded).
NO_RANDOM_DATA: dict[str, str] = {}


@dataclass(frozen=True)
class OpRef:
    """One OpInfo of one database; ``id`` is ``name`` or ``name.variant``."""

    db: str
    name: str
    variant: str
    index: int  # position in its database (OpInfos may share a name across databases)

    @property
    def id(self) -> str:
        return f"{self.name}.{self.variant}" if self.variant else self.name


@functools.cache
def _load(db: str) -> tuple[Any, ...]:
    if db == "op_db":
        from torch.testing._internal.common_methods_invocations import op_db

        return tuple(op_db)
    if db == "hop_db":
        from torch.testing._internal.hop_db import hop_db

        return tuple(hop_db)
    if db == "custom_op_db":
        from torch.testing._internal.custom_op_db import custom_op_db

        return tuple(custom_op_db)
    raise ValueError(f"unknown OpInfo database {db!r}; known: {', '.join(DATABASES)}")


def opinfo(ref: OpRef) -> Any:
    return _load(ref.db)[ref.index]


def all_ops(dbs: Sequence[str] = DATABASES) -> list[OpRef]:
    refs = []
    for db in dbs:
        for i, op in enumerate(_load(db)):
            refs.append(OpRef(db, op.name, op.variant_test_name, i))
    return refs


def select(refs: Sequence[OpRef], patterns: Sequence[str]) -> list[OpRef]:
    """Ops whose id (``name`` or ``name.variant``) or name matches any glob in ``patterns``."""
    if not patterns:
        return list(refs)
    return [r for r in refs if any(fnmatch.fnmatchcase(r.id, p) or fnmatch.fnmatchcase(r.name, p) for p in patterns)]


@dataclass(frozen=True)
class SampleCall:
    """One sample as the check takes it, with the settings the OpInfo asks for."""

    func: Any
    args: list[Any]
    kwargs: dict[str, Any]
    check_gradients: bool
    randomize: bool
    skip_correctness_check: bool
    no_random_reason: str


def applicable(ref: OpRef, device: str, dtype: torch.dtype) -> bool:
    return bool(opinfo(ref).supports_dtype(dtype, device))


def samples(ref: OpRef, device: str, dtype: torch.dtype) -> Iterator[SampleCall]:
    """The op's samples in order, generated under a fixed seed (same values everywhere)."""
    op = opinfo(ref)
    grad = bool(op.supports_autograd)
    reason = NO_RANDOM_DATA.get(ref.id, "")
    skip_correctness = bool(getattr(op, "skip_correctness_check_compile_vs_eager", False))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SAMPLE_SEED)
        generated = list(op.sample_inputs(device, dtype, requires_grad=grad))
    for s in generated:
        yield SampleCall(op.op, [s.input, *s.args], dict(s.kwargs), grad, not reason, skip_correctness, reason)


def repro_setup(ref: OpRef, device: str, dtype: torch.dtype, index: int) -> str:
    """Script lines that rebuild sample ``index`` of ``ref`` by name (defines func, args, kwargs)."""
    module = {
        "op_db": "torch.testing._internal.common_methods_invocations",
        "hop_db": "torch.testing._internal.hop_db",
        "custom_op_db": "torch.testing._internal.custom_op_db",
    }[ref.db]
    return "\n".join(
        [
            f"from {module} import {ref.db}",
            f"op = {ref.db}[{ref.index}]  # {ref.id}",
            f"torch.manual_seed({SAMPLE_SEED})",
            f"sample = list(op.sample_inputs({device!r}, {dtype}, requires_grad=op.supports_autograd))[{index}]",
            "func, args, kwargs = op.op, [sample.input, *sample.args], sample.kwargs",
        ]
    )
