"""Test-only ops whose findings depend on the process that checks them, for flaky verdicts:
``flaky_once``'s fake kernel is wrong (a float64 output) in the first process that traces it and
right in every later one, so a check fails in one process and passes in the next;
``flaky_always``'s is wrong in every process. The first process writes its pid to
``$OPTESTS_FLAKY_DIR/first``. Use with ``--optests-dbs=flaky_ops:ops``, or as the custom ops
``optests_flaky::once`` and ``optests_flaky::always`` (``--samples flaky_ops:samples``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch.testing._internal.common_dtype import _dispatch_dtypes
from torch.testing._internal.opinfo.core import OpInfo, SampleInput


def first_process() -> bool:
    """Whether this process is the first to ask (in the folder ``$OPTESTS_FLAKY_DIR`` names)."""
    marker = Path(os.environ["OPTESTS_FLAKY_DIR"]) / "first"
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return marker.read_text() == str(os.getpid())
    with os.fdopen(fd, "w") as f:
        f.write(str(os.getpid()))
    return True


@torch.library.custom_op("optests_flaky::once", mutates_args=())
def once(x: torch.Tensor) -> torch.Tensor:
    return x.sin()


@once.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x, dtype=torch.float64 if first_process() else x.dtype)


@torch.library.custom_op("optests_flaky::always", mutates_args=())
def always(x: torch.Tensor) -> torch.Tensor:
    return x.sin()


@always.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x, dtype=torch.float64)


def samples() -> list[tuple[list[torch.Tensor], dict[str, Any]]]:
    """One sample, for ``optests check --samples flaky_ops:samples``."""
    return [([torch.randn(3)], {})]


def _samples(op: Any, device: str, dtype: torch.dtype, requires_grad: bool, **kwargs: Any) -> Iterator[SampleInput]:
    yield SampleInput(torch.randn(3, device=device, dtype=dtype, requires_grad=requires_grad))


ops = [
    OpInfo(name, op=op, dtypes=_dispatch_dtypes((torch.float32,)), sample_inputs_func=_samples, supports_autograd=False)
    for name, op in (
        ("flaky_once", torch.ops.optests_flaky.once.default),
        ("flaky_always", torch.ops.optests_flaky.always.default),
    )
]
