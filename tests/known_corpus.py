"""Correct operators that hit a known PyTorch bug: AOTAutograd drops their second-order gradient
(``findings/aot_double_backward_silently_dropped.py``), as it does for every function whose
backward saves no input (here: only outputs, as ``exp`` and ``sigmoid`` do).

One of each kind an author writes: a ``torch.library`` op with an autograd formula, an
``autograd.Function``, a multi-output op and a composite of ATen ops; and an op whose backward
calls an op without an autograd formula, whose double backward eager refuses and compiled code
drops without a word. ``optests check --import
known_corpus --samples known_corpus:samples OP`` imports it.
"""

from __future__ import annotations

from typing import Any

import torch

NS = "optests_known"


@torch.library.custom_op(f"{NS}::exp", mutates_args=())
def exp(x: torch.Tensor) -> torch.Tensor:
    return x.exp()


exp.register_fake(lambda x: torch.empty_like(x))


def _save_outputs(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    ctx.save_for_backward(*(output if isinstance(output, tuple) else (output,)))


def _exp_backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    y: torch.Tensor = ctx.saved_tensors[0]
    return grad * y


exp.register_autograd(_exp_backward, setup_context=_save_outputs)


@torch.library.custom_op(f"{NS}::exp_and_sigmoid", mutates_args=())
def exp_and_sigmoid(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x.exp(), y.sigmoid()


exp_and_sigmoid.register_fake(lambda x, y: (torch.empty_like(x), torch.empty_like(y)))


def _exp_and_sigmoid_backward(ctx: Any, g1: torch.Tensor, g2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    e, s = ctx.saved_tensors
    return g1 * e, g2 * s * (1 - s)


exp_and_sigmoid.register_autograd(_exp_and_sigmoid_backward, setup_context=_save_outputs)


class Exp(torch.autograd.Function):
    """``exp`` whose backward uses its output."""

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x.exp()

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = ctx.saved_tensors[0]
        return grad * y


def function_exp(x: torch.Tensor) -> torch.Tensor:
    out: torch.Tensor = Exp.apply(x)  # type: ignore[no-untyped-call]
    return out


def composite(x: torch.Tensor) -> torch.Tensor:
    return torch.exp(x).sum(-1) + torch.tanh(x).sum(-1)


@torch.library.custom_op(f"{NS}::times", mutates_args=())
def times(grad: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """An op without an autograd formula: eager refuses to differentiate through it."""
    return grad * y


times.register_fake(lambda grad, y: torch.empty_like(y))


@torch.library.custom_op(f"{NS}::exp_of_unregistered", mutates_args=())
def exp_of_unregistered(x: torch.Tensor) -> torch.Tensor:
    return x.exp()


exp_of_unregistered.register_fake(lambda x: torch.empty_like(x))
exp_of_unregistered.register_autograd(lambda ctx, grad: times(grad, ctx.saved_tensors[0]), setup_context=_save_outputs)


def samples() -> list[tuple[list[Any], dict[str, Any]]]:
    torch.manual_seed(0)
    return [([torch.randn(3, 4, requires_grad=True)], {})]


def pair_samples() -> list[tuple[list[Any], dict[str, Any]]]:
    torch.manual_seed(0)
    return [([torch.randn(3, 4, requires_grad=True), torch.randn(2, 5, requires_grad=True)], {})]
