"""``checkpoint``: activation checkpointing (``torch.utils.checkpoint.checkpoint``, non-reentrant)
and compiled code, one derived sample each: 0, the checkpoint around the compiled call (its
backward calls the compiled function again to recompute what it saved); 1, a compiled function
whose body checkpoints the call (the compiler's recomputation). Eager runs the same checkpoint
around, or in the body of, the plain call. Outputs and gradients are compared. A call that changes
an input in place is not applicable: a checkpointed function must have no side effects, and
eager's recomputation writes the change again (``batch_norm``'s running stats) where a
compiler's need not."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils.checkpoint import checkpoint

from ..patterns import Called, Made, Sample, Transform
from .derived import differentiable, same
from .single import Single

#: The derived samples, by index.
CHECKPOINTS = (
    "torch.utils.checkpoint.checkpoint(use_reentrant=False) around the compiled call",
    "a compiled function whose body is checkpointed (use_reentrant=False)",
)


def _checkpointed(fn: Callable[[list[torch.Tensor]], Any], tensors: Sequence[torch.Tensor]) -> Any:
    return checkpoint(fn, list(tensors), use_reentrant=False)


class CheckpointAround(Single):
    """The call checkpointed (0)."""

    #: The backward calls the function again (:data:`~optests._patterns.base.RECOMPUTES`).
    recomputes = True

    def __init__(self, index: int) -> None:
        self.index = index

    def call(self, fn: Callable[[list[torch.Tensor]], Any], inputs: list[torch.Tensor]) -> Called:
        out = _checkpointed(fn, inputs)
        return Called(out, out)


class CheckpointInside(Single):
    """A body that checkpoints the call (1): compiled whole."""

    #: The backward calls the function again (:data:`~optests._patterns.base.RECOMPUTES`).
    recomputes = True

    def __init__(self, index: int) -> None:
        self.index = index

    def body(self, fn: Callable[[list[torch.Tensor]], Any]) -> Callable[[list[torch.Tensor]], Any]:
        return lambda tensors: _checkpointed(fn, tensors)


def pattern(index: int) -> CheckpointAround | CheckpointInside:
    """The pattern that checks ``checkpoint-INDEX``."""
    return CheckpointAround(index) if index == 0 else CheckpointInside(index)


def _derive(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    if not differentiable(sample):
        return {}  # a checkpoint saves nothing without autograd
    return {i: same(sample, what) for i, what in enumerate(CHECKPOINTS)}


CHECKPOINT = Transform(_derive, pattern=pattern, count=len(CHECKPOINTS))
