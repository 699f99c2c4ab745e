"""Operators whose bug only special values, a sample's own ``out`` tensors or a tangent with its
last two dims transposed show, and correct ops of the same shapes (issue 51, items 3 and 4).

The bugs live on the compiled path: a function with a traceable fallback for traced code (taken
where Dynamo compiles it, ``torch.compiler.is_compiling()``, or where AOTAutograd traces it with
fake tensors, which are no plain ``torch.Tensor``), as libraries write one beside a kernel that
tracing cannot see into; or, for ``tangents``, a backward kernel whose eager call meets the
tangent's layout while compiled code makes it contiguous first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

NS = "optests_scorpus"

Make = Callable[[], tuple[list[Any], dict[str, Any]]]


def traced(x: torch.Tensor) -> bool:
    """Whether this call is being traced (Dynamo, or AOTAutograd's fake tensors)."""
    return torch.compiler.is_compiling() or type(x) is not torch.Tensor


@dataclass(frozen=True)
class Case:
    func: Callable[..., Any]
    make: Make
    #: the transform or pattern whose samples show the bug (or that a correct op must pass)
    transform: str
    #: the suffixes the check flags, and at which stage ({} for a correct op)
    flagged: dict[str, str]


def _x(*shape: int, grad: bool = True) -> Make:
    def make() -> tuple[list[Any], dict[str, Any]]:
        torch.manual_seed(0)
        return [torch.randn(*shape, requires_grad=grad)], {}

    return make


# -- special values ---------------------------------------------------------------------------------


def clamp_unit(x: torch.Tensor) -> torch.Tensor:
    """clamp to [-1, 1]; the fallback's comparisons send NaN to 1."""
    if traced(x):
        return torch.where(x < 1, torch.where(x > -1, x, -1.0), 1.0)
    return x.clamp(-1, 1)


def clamp_unit_ok(x: torch.Tensor) -> torch.Tensor:
    if traced(x):
        return torch.minimum(torch.maximum(x, x.new_tensor(-1.0)), x.new_tensor(1.0))  # NaN propagates
    return x.clamp(-1, 1)


def magnitude(x: torch.Tensor) -> torch.Tensor:
    """abs; the fallback keeps -0.0's sign."""
    if traced(x):
        return torch.where(x < 0, -x, x)
    return x.abs()


def magnitude_ok(x: torch.Tensor) -> torch.Tensor:
    if traced(x):
        return torch.where(x.signbit(), -x, x)
    return x.abs()


def take_rows(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """index_select of rows; the fallback clamps the indices instead of checking them."""
    if traced(x):
        return x[index.clamp(0, x.shape[0] - 1)]
    return torch.index_select(x, 0, index)


def take_rows_ok(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    if traced(x):
        torch._assert_async(((index >= 0) & (index < x.shape[0])).all(), "index out of range")
        return x[index]
    return torch.index_select(x, 0, index)


def _rows() -> tuple[list[Any], dict[str, Any]]:
    torch.manual_seed(0)
    return [torch.randn(3, 4, requires_grad=True), torch.tensor([0, 2, 1, 2])], {}


# -- out: a sample's own out= tensors, and a custom op's mutable out ---------------------------------------


def double_into(x: torch.Tensor, *, out: torch.Tensor) -> None:
    """2 x into ``out`` (of ``x``'s shape: it is not resized); the fallback writes into
    ``out.contiguous()``, a copy where ``out`` is not dense: out stays unwritten."""
    if traced(x):
        out.contiguous().copy_(x * 2)
    else:
        out.copy_(x * 2)


def double_into_ok(x: torch.Tensor, *, out: torch.Tensor) -> None:
    if traced(x):
        out.copy_(x + x)
    else:
        out.copy_(x * 2)


@torch.library.custom_op(f"{NS}::halve_into", mutates_args=("out",))
def halve_into(x: torch.Tensor, out: torch.Tensor) -> None:
    """x / 2 into ``out`` (schema ``Tensor(a!) out``, by position), correct."""
    out.copy_(x / 2)


def _out_sample() -> tuple[list[Any], dict[str, Any]]:
    torch.manual_seed(0)
    return [torch.randn(3, 4)], {"out": torch.empty(3, 4)}


def _positional_out() -> tuple[list[Any], dict[str, Any]]:
    torch.manual_seed(0)
    return [torch.randn(3, 4), torch.empty(3, 4)], {}


# -- tangents: a backward kernel that knows channels_last, and reads any other layout as contiguous ----


@torch.library.custom_op(f"{NS}::times3_backward", mutates_args=())
def times3_backward(grad: torch.Tensor) -> torch.Tensor:
    """3 * grad. Like a C++ kernel that walks ``data_ptr()``, it reads the gradient's memory as if
    it were contiguous, unless it is channels_last (an NHWC kernel of its own) or expanded (made
    contiguous first): the layouts its tests gave it."""
    if 0 in grad.stride() or grad.is_contiguous() or grad.is_contiguous(memory_format=torch.channels_last):
        return grad.contiguous() * 3 if 0 in grad.stride() else grad * 3
    strides = torch.empty(grad.shape).stride()
    return torch.as_strided(grad, grad.shape, strides, grad.storage_offset()) * 3


times3_backward.register_fake(lambda grad: torch.empty_like(grad))


@torch.library.custom_op(f"{NS}::times3", mutates_args=())
def times3(x: torch.Tensor) -> torch.Tensor:
    return x * 3


times3.register_fake(lambda x: torch.empty_like(x))
times3.register_autograd(lambda ctx, grad: times3_backward(grad))


@torch.library.custom_op(f"{NS}::times3_ok", mutates_args=())
def times3_ok(x: torch.Tensor) -> torch.Tensor:
    return x * 3


times3_ok.register_fake(lambda x: torch.empty_like(x))
times3_ok.register_autograd(lambda ctx, grad: grad * 3)


_INDEX_ERRORS = {"special-6": "forward", "special-7": "forward", "special-8": "forward"}

BUGS: dict[str, Case] = {
    "clamp_unit": Case(clamp_unit, _x(3, 4), "special", {"special-0": "forward"}),
    "magnitude": Case(magnitude, _x(3, 4), "special", {"special-2": "forward"}),
    "take_rows": Case(take_rows, _rows, "special", {"special-5": "forward", **_INDEX_ERRORS}),
    "double_into": Case(double_into, _out_sample, "out", {"out-2": "mutation"}),
    "times3": Case(times3, _x(2, 3, 4, 5), "tangents", {"tangents-3": "backward"}),
}

CORRECT: dict[str, Case] = {
    "clamp_unit_ok": Case(clamp_unit_ok, _x(3, 4), "special", {}),
    "magnitude_ok": Case(magnitude_ok, _x(3, 4), "special", {}),
    "take_rows_ok": Case(take_rows_ok, _rows, "special", {}),
    "double_into_ok": Case(double_into_ok, _out_sample, "out", {}),
    "halve_into": Case(halve_into, _positional_out, "out", {}),
    "times3_ok": Case(times3_ok, _x(2, 3, 4, 5), "tangents", {}),
}
