"""Operators whose bug only a sequence of calls on one compiled function shows, and a correct
twin of each (the ``sequence`` call pattern's tests). Importable by a repro script
(``PYTHONPATH`` holding ``tests/``), which registers the ops."""

from __future__ import annotations

from typing import Any

import torch
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

NS = "optests_seqcorpus"


def _setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    ctx.shape = inputs[0].shape


def _backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    return grad[:, None].expand(ctx.shape)


@torch.library.custom_op(f"{NS}::rowsum_small", mutates_args=())
def rowsum_small(x: torch.Tensor) -> torch.Tensor:
    """Row sums; its fake kernel is wrong for one row (a size-1 special case gone wrong)."""
    return x.sum(1)


@rowsum_small.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return x.new_empty(x.shape[0] if x.shape[0] != 1 else 2)


@torch.library.custom_op(f"{NS}::rowsum_unbacked", mutates_args=())
def rowsum_unbacked(x: torch.Tensor) -> torch.Tensor:
    """Row sums; its fake kernel is wrong where the number of rows is unbacked."""
    return x.sum(1)


@rowsum_unbacked.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    rows = x.shape[0]
    if isinstance(rows, torch.SymInt) and free_unbacked_symbols(rows):
        return x.new_empty(x.shape[1])  # the wrong dim
    return x.new_empty(rows)


@torch.library.custom_op(f"{NS}::rowsum", mutates_args=())
def rowsum(x: torch.Tensor) -> torch.Tensor:
    """Row sums, correct: the twin of the two above."""
    return x.sum(1)


@rowsum.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return x.new_empty(x.shape[0])


for _op in (rowsum_small, rowsum_unbacked, rowsum):
    _op.register_autograd(_backward, setup_context=_setup)


def scaled(x: torch.Tensor, y: torch.Tensor, alpha: float, flag: bool) -> torch.Tensor:
    """A correct function with a sample that every kind of sequence applies to."""
    out = x * alpha + y
    return out.relu() if flag else out


def rows() -> tuple[list[Any], dict[str, Any]]:
    torch.manual_seed(0)
    return [torch.randn(3, 4, requires_grad=True)], {}


def scaled_sample() -> tuple[list[Any], dict[str, Any]]:
    torch.manual_seed(0)
    return [torch.randn(3, 4, requires_grad=True), torch.randn(3, 4, requires_grad=True), 2.0, True], {}
