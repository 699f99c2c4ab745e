"""The ``single`` call pattern, the default: one call; one loss, ``sum(out.sum().abs())`` over
the tensor outputs; one ``torch.autograd.grad`` w.r.t. the inputs that require grad
(``allow_unused=True``). ``SPEC.md`` section 1, steps 3 and 5."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.utils._pytree as pytree


class Single:
    """One call, one loss, one ``autograd.grad``."""

    def call(self, fn: Callable[[list[torch.Tensor]], Any], inputs: list[torch.Tensor]) -> Any:
        return fn(inputs)

    def gradients(self, out: Any, inputs: list[torch.Tensor]) -> tuple[torch.Tensor | None, ...]:
        diff = [t for t in inputs if t.requires_grad]
        return tuple(torch.autograd.grad(_loss(out), diff, allow_unused=True))


def _loss(out: Any) -> torch.Tensor:
    total: Any = 0
    for leaf in pytree.tree_leaves(out):
        if isinstance(leaf, torch.Tensor):
            # abs(): complex outputs, so autograd.grad needs no grad_outputs
            total = total + leaf.sum().abs()
    if not isinstance(total, torch.Tensor):
        raise AssertionError(f"expected the op to return at least one tensor to differentiate, got {type(out).__name__}")
    return total
