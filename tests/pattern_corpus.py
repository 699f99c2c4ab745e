"""Operators whose bug only a call pattern shows, and correct ones, for testing call patterns.

Each buggy op passes the check on its plain sample and on every input transform's samples; the
check flags it, at the stage given, on the samples its call pattern derives (and on no other
pattern's). CORRECT ops must pass every transform's and every pattern's samples (or be not
applicable there). Like ``transform_corpus.py``, each bug is a realistic mistake, or (``outputs``)
a divergence of compiled code that only a user of the outputs sees, or (``tri_solve``) a PyTorch
bug any op of its kind meets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._functorch import config as functorch_config

NS = "optests_pcorpus"

Make = Callable[[], tuple[list[Any], dict[str, Any]]]


@dataclass(frozen=True)
class Bug:
    func: Callable[..., Any]
    make: Make
    #: the call pattern whose derived samples show the bug
    pattern: str
    #: the stage the check flags it at (a :class:`optests.Stage` value)
    stage: str
    #: other patterns that show it too, at whatever stage (each a limit of compiled code, not the bug)
    also: tuple[str, ...] = ()
    #: the OpInfo's in-place variant and whether it has an out variant (for the sweep's OpInfos)
    inplace: Callable[..., Any] | None = None
    supports_out: bool = False


@dataclass(frozen=True)
class Correct:
    func: Callable[..., Any]
    make: Make
    check: dict[str, Any] = field(default_factory=dict)
    inplace: Callable[..., Any] | None = None
    supports_out: bool = False


def _tensors(*shapes: tuple[int, ...], grad: bool = True) -> Make:
    def make() -> tuple[list[Any], dict[str, Any]]:
        torch.manual_seed(0)
        return [torch.randn(*s, requires_grad=grad) for s in shapes], {}

    return make


# -- tangents: a backward kernel that reads its gradient's memory in order ---------------------------


@torch.library.custom_op(f"{NS}::times3_backward", mutates_args=())
def times3_backward(grad: torch.Tensor) -> torch.Tensor:
    """3 * grad. Like a C++ kernel that walks ``data_ptr()``, it reads the gradient's memory as if
    it were contiguous; its author made the expanded ones of ``.sum().backward()`` contiguous,
    the only other layout their tests gave it. A transposed gradient comes out transposed."""
    if 0 in grad.stride():
        grad = grad.contiguous()
    strides = torch.empty(grad.shape).stride()
    return torch.as_strided(grad, grad.shape, strides, grad.storage_offset()) * 3


times3_backward.register_fake(lambda grad: torch.empty_like(grad, memory_format=torch.contiguous_format))


@torch.library.custom_op(f"{NS}::times3", mutates_args=())
def times3(x: torch.Tensor) -> torch.Tensor:
    return x * 3


times3.register_fake(lambda x: torch.empty_like(x))
times3.register_autograd(lambda ctx, grad: times3_backward(grad))


# -- grad-mode: an inference fast path with a wrong fake kernel --------------------------------------


@torch.library.custom_op(f"{NS}::fused_affine", mutates_args=())
def fused_affine(x: torch.Tensor) -> torch.Tensor:
    return x * 2 + 1


fused_affine.register_fake(lambda x: x.new_empty(x.shape[:-1]))  # forgot the last dim


def affine(x: torch.Tensor) -> torch.Tensor:
    """2 x + 1; without autograd recording, through a fused kernel (whose fake kernel is wrong)."""
    if torch.is_grad_enabled():
        return x * 2 + 1
    out: torch.Tensor = fused_affine(x)
    return out


# -- backward: a backward that reuses a saved tensor as scratch --------------------------------------


class _Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x * 2)
        return x * x

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (twice,) = ctx.saved_tensors
        out: torch.Tensor = grad * twice
        twice.data.mul_(0.5)  # scratch reuse, unseen by autograd: a second backward is wrong in eager
        return out


def square(x: torch.Tensor) -> torch.Tensor:
    out: torch.Tensor = _Square.apply(x)  # type: ignore[no-untyped-call]
    return out


# -- outputs: views of a multi-output view, which eager forbids mutating -----------------------------


def rows(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The rows of 2 x. Eager refuses ``mul_`` on them (views of a multi-output view that
    autograd records); compiled code returns views that accept it."""
    return (x * 2).unbind(0)


# -- inplace: an in-place twin whose custom kernel does not declare its mutation ---------------------


@torch.library.custom_op(f"{NS}::scale_in_place", mutates_args=())
def scale_in_place(x: torch.Tensor, s: torch.Tensor) -> None:
    x.mul_(s)  # a mutation the schema does not declare (mutates_args=())


scale_in_place.register_fake(lambda x, s: None)


def scale(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    return x * s


def scale_(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """The in-place twin of ``scale`` (found by its name), through a kernel with a wrong schema."""
    scale_in_place(x, s)
    return x


# -- out: an out variant whose kernel does not declare that it writes out= ---------------------------


@torch.library.custom_op(f"{NS}::halve_into", mutates_args=())
def halve_into(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    out.resize_(x.shape).copy_(x / 2)  # writes out=, which the schema does not declare
    return x.new_zeros(())


halve_into.register_fake(lambda x, out: x.new_empty(()))


def halve(x: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor:
    if out is None:
        return x / 2
    halve_into(x, out)
    return out


# -- autocast: an autocast fast path with a wrong fake kernel ----------------------------------------


@torch.library.custom_op(f"{NS}::half_gelu", mutates_args=())
def half_gelu(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x.to(torch.bfloat16))


half_gelu.register_fake(lambda x: torch.empty_like(x))  # says the input's dtype; the kernel returns bfloat16


def gelu(x: torch.Tensor) -> torch.Tensor:
    """gelu; under autocast, a bfloat16 kernel (whose fake kernel is wrong about its dtype)."""
    if torch.is_autocast_enabled("cpu"):
        out: torch.Tensor = half_gelu(x)
        return out
    return torch.nn.functional.gelu(x)


def tri_solve(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Not on autocast's lists: float32 forward and backward in eager. The compiled backward,
    traced with the forward under autocast, computes the gradient's product in bfloat16: a
    PyTorch bug any such op meets (pytorch/pytorch#153044), silent at bfloat16's tolerance."""
    out: torch.Tensor = torch.linalg.solve_triangular(a, b, upper=True)
    return out


def _triangular() -> tuple[list[Any], dict[str, Any]]:
    torch.manual_seed(0)
    return [(torch.randn(3, 3).triu() + 3 * torch.eye(3)).requires_grad_(), torch.randn(3, 4)], {}


# -- aliased: a kernel that writes one input while it reads another ---------------------------------


@torch.library.custom_op(f"{NS}::accumulate_", mutates_args=("acc",))
def accumulate_(acc: torch.Tensor, x: torch.Tensor) -> None:
    """acc[:len(x)] += x, row by row. When x overlaps acc (``acc[1:]``), a row it reads was
    already written; the functionalized graph writes a copy of acc and reads the original."""
    for i in reversed(range(x.shape[0])):
        acc[i].add_(x[i])


def accumulate(acc: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    acc = acc.clone() if acc.requires_grad else acc
    accumulate_(acc, x)
    return acc


BUGS: dict[str, Bug] = {
    "times3": Bug(times3, _tensors((3, 4)), "tangents", "backward"),
    "affine": Bug(affine, _tensors((3, 4)), "grad-mode", "metadata"),
    # it saves 2 x, not x: eager's backward takes x changed in place, AOTAutograd (which saves x
    # and recomputes 2 x) refuses it
    "square": Bug(square, _tensors((3, 4)), "backward", "backward", also=("inplace-between",)),
    # with TwoTensor inputs AOTAutograd refuses outputs that alias one another ("not supported")
    "rows": Bug(rows, _tensors((3, 4)), "outputs", "forward", also=("subclass",)),
    "scale": Bug(scale, _tensors((3, 4), (3, 4), grad=False), "inplace", "mutation", inplace=scale_),
    "halve": Bug(halve, _tensors((3, 4), grad=False), "out", "mutation", supports_out=True),
    "gelu": Bug(gelu, _tensors((3, 4), grad=False), "autocast", "metadata"),
    # the sequence over aliased inputs (an overlapping slice after a call without) shows it too
    "accumulate": Bug(accumulate, _tensors((4, 3), (2, 3), grad=False), "aliased", "mutation", also=("sequence",)),
}

if functorch_config.backward_pass_autocast == "same_as_forward":  # pytorch/pytorch#153044's cause
    # its gradient is not linear in ``a``: compiled code drops the second-order one (``backward``)
    BUGS["tri_solve"] = Bug(tri_solve, _triangular, "autocast", "backward", also=("backward",))


# -- correct ops ---------------------------------------------------------------------------------


def sum_of_squares(x: torch.Tensor) -> torch.Tensor:
    """A reduction: its gradient depends on the tangent's values, which ``tangents`` draws."""
    return (x * x).sum(-1)


def double_tail(x: torch.Tensor) -> torch.Tensor:
    """A correct in-place composite on views: every row but the first doubled, in a copy."""
    y = x.clone()
    y[1:].mul_(2)
    y.narrow(-1, 0, 1).add_(1)
    return y


def reused_weight(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """A weight used twice. Eager's autocast casts the leaf ``w`` to bfloat16 once (its cast
    cache) and sums the two gradients in bfloat16; the traced graph casts it per use and sums
    them in float32. Both are right: the float32 gradients differ by bfloat16 rounding."""
    return x[0] @ w + x[1] @ w


def _input_and_weight() -> tuple[list[Any], dict[str, Any]]:
    torch.manual_seed(0)
    return [torch.randn(2, 5, 6), torch.randn(6, 7, requires_grad=True)], {}


def sin_cos(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A multi-output op (two fresh outputs)."""
    return x.sin(), x.cos()


def linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Autocast-aware: under autocast mm runs in the lower precision, and the result is cast back
    (the weight is frozen: with both requiring grad, compiled code drops the second-order
    gradient, a finding of ``backward`` on any product of two inputs)."""
    return (x @ w).float()


CORRECT: dict[str, Correct] = {
    "sum_of_squares": Correct(sum_of_squares, _tensors((3, 4))),
    "double_tail": Correct(double_tail, _tensors((3, 4))),
    "sin_cos": Correct(sin_cos, _tensors((3, 4))),
    "linear": Correct(linear, lambda: ([torch.randn(3, 4, requires_grad=True), torch.randn(4, 5)], {})),
    "reused_weight": Correct(reused_weight, _input_and_weight),
}
