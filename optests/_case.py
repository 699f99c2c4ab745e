"""The sweep's cases: which samples of which ops a run checks, in which modes, dtypes and devices.
Imports torch (and the OpInfo databases) only when cases are made."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._findings import Outcome, Stage, Verdict
from ._key import DEFAULT_BACKEND, Mode, SampleKey
from ._pipeline import Base, Unmade, plan, transforms_for
from ._pipeline import made as _made
from ._results import SampleResult
from ._settings import Settings
from .errors import SelectionError as SelectionError

if TYPE_CHECKING:
    from ._opinfo import OpRef


@dataclass(frozen=True)
class Case:
    """One sample of one op (``key``) and the OpInfo it comes from. A key without a sample has
    nothing to check: ``reason`` says why (no samples for the dtype, or they cannot be made)."""

    ref: OpRef
    key: SampleKey
    reason: str = ""

    @classmethod
    def of(
        cls,
        ref: OpRef,
        mode: str,
        dtype: str,
        device: str,
        sample: int | None,
        reason: str = "",
        broken: bool = False,
        transform: str = "",
        backend: str = DEFAULT_BACKEND,
    ) -> Case:
        key = SampleKey(ref.name, ref.variant, Mode(mode), dtype, device, sample, broken, transform, backend)
        return cls(ref, key, reason)

    @property
    def id(self) -> str:
        return self.key.id

    def result(
        self,
        outcome: Outcome,
        stage: Stage | None = None,
        message: str = "",
        duration: float = 0.0,
        verdict: Verdict | None = None,
        tolerance: str = "",
    ) -> SampleResult:
        return SampleResult(self.key, self.ref.db, outcome, stage, message, duration, verdict, tolerance)


def select_ops(settings: Settings) -> list[OpRef]:
    """The ops the settings select; a :class:`SelectionError` for a bad database or no match."""
    from . import _opinfo

    try:
        refs = _opinfo.select(_opinfo.all_ops(settings.dbs), settings.ops)
        _opinfo.refuse_clashes(refs)
    except _opinfo.DatabaseError as e:
        raise SelectionError(f"--optests-dbs: {e}") from None
    if not refs:
        raise SelectionError(f"--optests-ops: no op matches {', '.join(settings.ops)} in {', '.join(settings.dbs)}")
    if settings.ids is not None:
        named = settings.ids.op_ids
        refs = [r for r in refs if r.id in named]
        if not refs:
            raise SelectionError(
                f"--optests-ids: {settings.ids.path} names no op that --optests-ops and --optests-dbs select "
                f"(it names {len(named)}, e.g. {min(named)})"
            )
    return refs


def collect(settings: Settings) -> list[Case]:
    """Every case of the sweep, op-major (an op's modes run back to back and share samples), as
    :func:`optests._pipeline.plan` names them: keys without a sample where an op has none for a
    dtype (not applicable) or its samples cannot be made (broken)."""
    import torch

    from . import _opinfo

    cases: list[Case] = []
    for ref in select_ops(settings):
        op = _opinfo.opinfo(ref)
        chosen = transforms_for(op, settings.transforms)
        for dtype_name in settings.dtypes:
            dtype = getattr(torch, dtype_name)
            for device in settings.devices:
                if device == "cuda" and not torch.cuda.is_available():
                    made: Sequence[Base] | Unmade = Unmade("cuda is not available on this machine")
                else:
                    make = functools.partial(_bases, ref, device, dtype)
                    made = _made(ref.id, dtype_name, device, _opinfo.applicable(ref, device, dtype), make)
                samples = {dtype_name: made if isinstance(made, Unmade) else dict(enumerate(made))}
                planned = plan(ref.name, ref.variant, device, settings.modes, settings.backends, samples, chosen, settings.select)
                cases.extend(Case(ref, p.key, p.reason) for p in planned)
    if settings.ids is not None:  # the ids it lacks are counted at the end of the run
        listed, runs = settings.ids.ids, settings.ids.runs
        cases = [c for c in cases if c.id in listed or (c.key.sample is None and c.key.run in runs)]
    ids = Counter(c.id for c in cases)
    clashes = [i for i, n in ids.items() if n > 1]
    if clashes:
        raise SelectionError(
            f"--optests-dbs: ops from different databases share test ids, e.g. {clashes[0]}; select fewer databases"
        )
    return cases


def _bases(ref: OpRef, device: str, dtype: Any) -> list[Base]:
    """The op's samples as the plan takes them (what :func:`optests._pipeline.suffixes` needs)."""
    from . import _opinfo

    op = _opinfo.opinfo(ref)
    return [Base(s.func, s.args, s.kwargs, s.check_gradients, opinfo=op) for s in _opinfo.cached_samples(ref, device, dtype)]


def split_of(refs: list[OpRef]) -> dict[str, tuple[str, str]]:
    """Op id -> (name, variant) for ``SampleKey.parse``."""
    return {r.id: (r.name, r.variant) for r in refs}
