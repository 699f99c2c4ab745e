"""``subclass``: every tensor input wrapped as ``TwoTensor(x, x.clone())``
(``torch.testing._internal.two_tensor``), a traceable wrapper subclass whose every op runs on
both halves. AOTAutograd must desugar it, trace the inner tensors and rewrap the outputs.
Outputs and gradients are compared through their inner tensors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.utils._pytree as pytree

from ..patterns import Called, Made, Sample, Transform
from .derived import same
from .single import Single, loss


def _two_tensor() -> type[torch.Tensor]:
    from torch.testing._internal.two_tensor import TwoTensor

    return TwoTensor


def _wrap(t: torch.Tensor) -> torch.Tensor:
    """``t`` as a TwoTensor: its first half shares ``t``'s memory (a mutation shows in ``t``)."""
    two = _two_tensor()
    wrapped = two(t.detach(), t.detach().clone())
    return wrapped.requires_grad_(t.requires_grad) if t.requires_grad else wrapped


def _halves(x: Any) -> Any:
    return (getattr(x, "a"), getattr(x, "b")) if isinstance(x, _two_tensor()) else x  # noqa: B009 (Tensor types no a, b)


class Subclass(Single):
    """One call on the inputs wrapped as TwoTensors; one loss; one ``autograd.grad``."""

    def __init__(self, index: int) -> None:
        pass

    def call(self, fn: Callable[[list[torch.Tensor]], Any], inputs: list[torch.Tensor]) -> Called:
        memo: dict[int, torch.Tensor] = {}
        for t in inputs:
            if id(t) not in memo:
                memo[id(t)] = _wrap(t)
        wrapped = [memo[id(t)] for t in inputs]  # a tensor passed twice stays one
        out = fn(wrapped)
        return Called(out, pytree.tree_map(_halves, out), state=wrapped, rounds=("first half", "second half"))

    def gradients(self, called: Called, inputs: list[torch.Tensor]) -> tuple[torch.Tensor | None, ...]:
        diff = [w for w in called.state if w.requires_grad]
        grads = torch.autograd.grad(loss(called.out), diff, allow_unused=True)
        parts = [_halves(g) if g is not None else (None, None) for g in grads]
        parts = [p if isinstance(p, tuple) else (p, p) for p in parts]
        return (*(p[0] for p in parts), *(p[1] for p in parts))


def _derive(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    if not sample.inputs or len(sample.inputs) != sum(
        isinstance(x, torch.Tensor) for x in pytree.tree_leaves((sample.args, sample.kwargs))
    ):
        return {}  # a tensor the wrapper cannot take (sparse, meta, a subclass already)
    return {0: same(sample, "every tensor input wrapped as TwoTensor(x, x.clone())")}


SUBCLASS = Transform(_derive, unindexed=True, pattern=Subclass)
