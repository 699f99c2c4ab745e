"""The ``single`` call pattern, the default: one call; one loss, ``sum(out.sum().abs())`` over
the tensor outputs; one ``torch.autograd.grad`` w.r.t. the inputs that require grad
(``allow_unused=True``). ``SPEC.md`` section 1, steps 3 and 5. The other patterns build on it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.utils._pytree as pytree

from .base import Called


class Single:
    """One call, one loss, one ``autograd.grad``."""

    def call(self, fn: Callable[[list[torch.Tensor]], Any], inputs: list[torch.Tensor]) -> Called:
        out = fn(inputs)
        return Called(out, out)

    def gradients(self, called: Called, inputs: list[torch.Tensor]) -> tuple[torch.Tensor | None, ...]:
        diff = [t for t in inputs if t.requires_grad]
        return tuple(torch.autograd.grad(loss(called.out), diff, allow_unused=True))


def tensors(out: Any) -> list[torch.Tensor]:
    """The tensor leaves of ``out``, in order."""
    return [leaf for leaf in pytree.tree_leaves(out) if isinstance(leaf, torch.Tensor)]


def loss(out: Any) -> torch.Tensor:
    """``sum(t.sum().abs())`` over the tensor outputs (abs: complex outputs, so ``autograd.grad``
    needs no ``grad_outputs``)."""
    return _total(out, lambda t: t.sum().abs())


def linear_loss(out: Any) -> torch.Tensor:
    """The sum of every element of the tensor outputs (of its real and imaginary parts, for a
    complex one): each output's gradient is ones (1+1j for a complex one), whatever its values.
    Where a pattern observes the outputs' gradients themselves (their hooks, their ``.grad``),
    :func:`loss` will not do: its gradient is the sign of each output's sum, which rounding flips
    (or zeroes) where that sum is 0 (``_softmax_backward_data``'s output sums to 0 by construction)."""
    return _total(out, lambda t: t.real.sum() + t.imag.sum() if t.is_complex() else t.sum())


def _total(out: Any, term: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    total: Any = 0
    for leaf in tensors(out):
        total = total + term(leaf)
    if not isinstance(total, torch.Tensor):
        raise AssertionError(f"expected the op to return at least one tensor to differentiate, got {type(out).__name__}")
    return total
