"""A custom op with two planted bugs in its fake kernel, one per kind of sample, for the grouped
output of ``optests check`` (two causes over many samples): 1-D inputs get a wrong dtype, 2-D
inputs a wrong shape. Use with ``--import grouped_ops --samples grouped_ops:samples``."""

from __future__ import annotations

from typing import Any

import torch


@torch.library.custom_op("optests_grouped::two_bugs", mutates_args=())
def two_bugs(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@two_bugs.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    if x.dim() == 1:
        return torch.empty_like(x, dtype=torch.float64)  # a wrong dtype
    return x.new_empty((*x.shape[:-1], x.shape[-1] + 1))  # a wrong shape


def samples() -> list[tuple[list[Any], dict[str, Any]]]:
    """Four 1-D samples (the smallest, 2 elements, is sample 3) and three 2-D ones (the smallest, 2
    elements, is sample 5)."""
    sizes: list[tuple[int, ...]] = [(5,), (3,), (4,), (2,), (2, 4), (2, 1), (2, 3)]
    return [([torch.ones(*size)], {}) for size in sizes]
