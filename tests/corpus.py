"""Operators with planted bugs, and correct ones, for testing the check itself.

Each buggy op is a realistic mistake an operator author makes; BUGS maps a name to
(func, make_inputs, expected stage, extra check kwargs). CORRECT lists ops that must pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

NS = "optests_corpus"
_lib = torch.library.Library(NS, "FRAGMENT")  # for ops whose schema lies (custom_op refuses those)


def _x(*shape: int, grad: bool = True) -> Callable[[], tuple[list[Any], dict[str, Any]]]:
    def make() -> tuple[list[Any], dict[str, Any]]:
        torch.manual_seed(0)
        return [torch.randn(*shape, requires_grad=grad)], {}

    return make


def _double_backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    return grad * 2


# -- fake kernels that lie -----------------------------------------------------------------------


@torch.library.custom_op(f"{NS}::fake_wrong_shape", mutates_args=())
def fake_wrong_shape(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@fake_wrong_shape.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return x.new_empty(x.shape[0] + 1, *x.shape[1:])


fake_wrong_shape.register_autograd(_double_backward)


@torch.library.custom_op(f"{NS}::fake_wrong_dtype", mutates_args=())
def fake_wrong_dtype(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@fake_wrong_dtype.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x, dtype=torch.float64)


fake_wrong_dtype.register_autograd(_double_backward)


@torch.library.custom_op(f"{NS}::fake_wrong_strides", mutates_args=())
def fake_wrong_strides(x: torch.Tensor) -> torch.Tensor:
    return x * 2  # contiguous


@fake_wrong_strides.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x).t().contiguous().t()  # claims column-major


fake_wrong_strides.register_autograd(_double_backward)


@torch.library.custom_op(f"{NS}::second_output_wrong_fake", mutates_args=())
def second_output_wrong_fake(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x * 2, x.sum(0)


@second_output_wrong_fake.register_fake
def _(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.empty_like(x), x.new_empty(x.shape[0])  # should be x.shape[1]


# -- schemas that lie (torch.library.Library: custom_op would refuse these in eager) --------------

_lib.define("undeclared_mutation(Tensor x) -> Tensor")  # mutates x but says it does not


def _undeclared_mutation(x: torch.Tensor) -> torch.Tensor:
    x.add_(1)
    return x * 2


_lib.impl("undeclared_mutation", _undeclared_mutation, "CPU")
torch.library.register_fake(f"{NS}::undeclared_mutation", lambda x: torch.empty_like(x), lib=_lib)
undeclared_mutation = getattr(torch.ops, NS).undeclared_mutation.default

_lib.define("undeclared_alias(Tensor x) -> Tensor")  # returns a view of x but says it is new


_lib.impl("undeclared_alias", lambda x: x.view(-1), "CPU")
torch.library.register_fake(f"{NS}::undeclared_alias", lambda x: x.new_empty(x.numel()), lib=_lib)
undeclared_alias = getattr(torch.ops, NS).undeclared_alias.default


# -- backward formulas that do not trace ----------------------------------------------------------


@torch.library.custom_op(f"{NS}::numpy_backward", mutates_args=())
def numpy_backward(x: torch.Tensor) -> torch.Tensor:
    return x * 2


numpy_backward.register_fake(lambda x: torch.empty_like(x))
numpy_backward.register_autograd(lambda ctx, grad: torch.from_numpy(np.asarray(grad.numpy()) * 2))


@torch.library.custom_op(f"{NS}::branchy_backward", mutates_args=())
def branchy_backward(x: torch.Tensor) -> torch.Tensor:
    return x * 2


branchy_backward.register_fake(lambda x: torch.empty_like(x))


def _branchy(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    if grad.sum() > 0:  # Python branch on tensor data
        return grad * 2
    return grad * -2


branchy_backward.register_autograd(_branchy)


@torch.library.custom_op(f"{NS}::stateful_backward", mutates_args=())
def stateful_backward(x: torch.Tensor) -> torch.Tensor:
    return x * 2


stateful_backward.register_fake(lambda x: torch.empty_like(x))
_calls = {"backward": 0}


def _stateful(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    _calls["backward"] += 1  # hidden state: the scale changes on every call
    return grad * (1 + _calls["backward"])


stateful_backward.register_autograd(_stateful)


# -- Python composites -----------------------------------------------------------------------------


def subclass_sensitive(x: torch.Tensor) -> torch.Tensor:
    """Computes something else when it sees a traced tensor (a subclass) instead of a plain one."""
    if type(x) is torch.Tensor:
        return x.sin()
    return x.cos()


def metadata_mutation_beside_undeclared_write(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a.t_()`` is a traced (metadata) mutation of ``a``; the write to ``b``, which overlaps ``a``,
    is not declared. ``a``'s traced mutation must not explain ``b``'s changed data."""
    a.t_()
    out: torch.Tensor = undeclared_mutation(b)
    return out


def _overlapping() -> tuple[list[Any], dict[str, Any]]:
    base = torch.randn(4, 4)
    return [base, base[1:]], {}


_scales: dict[tuple[int, torch.dtype], float] = {}


def memoized_scale(x: torch.Tensor) -> torch.Tensor:
    """Caches a statistic of real data, and falls back to the cache when it cannot read data."""
    key = (x.dim(), x.dtype)
    if type(x) is torch.Tensor:
        _scales[key] = float(x.detach().abs().max()) + 1.0
    return x / _scales[key]


BUGS: dict[str, tuple[Callable[..., Any], Callable[[], tuple[list[Any], dict[str, Any]]], str, dict[str, Any]]] = {
    "fake_wrong_shape": (fake_wrong_shape, _x(3, 4), "metadata", {}),
    "fake_wrong_shape_no_grad": (fake_wrong_shape, _x(3, 4, grad=False), "metadata", {"check_gradients": "auto"}),
    "fake_wrong_dtype": (fake_wrong_dtype, _x(3, 4), "metadata", {}),
    "fake_wrong_strides": (fake_wrong_strides, _x(3, 4), "metadata", {}),
    "second_output_wrong_fake": (second_output_wrong_fake, _x(3, 4, grad=False), "metadata", {"check_gradients": False}),
    "undeclared_mutation": (undeclared_mutation, _x(3, 4, grad=False), "mutation", {"check_gradients": "auto"}),
    "undeclared_alias": (undeclared_alias, _x(3, 4, grad=False), "metadata", {"check_gradients": "auto"}),
    "metadata_mutation_beside_undeclared_write": (
        metadata_mutation_beside_undeclared_write,
        _overlapping,
        "mutation",
        {"check_gradients": False},
    ),
    "numpy_backward": (numpy_backward, _x(3, 4), "backward", {}),
    "branchy_backward": (branchy_backward, _x(3, 4), "backward", {}),
    "stateful_backward": (stateful_backward, _x(3, 4), "backward", {}),
    "subclass_sensitive": (subclass_sensitive, _x(3, 4), "forward", {}),
    "memoized_scale": (memoized_scale, _x(3, 4), "randomized", {"try_check_data_specialization": True}),
}


# -- correct operators -----------------------------------------------------------------------------


@torch.library.custom_op(f"{NS}::scale_and_shift", mutates_args=())
def scale_and_shift(x: torch.Tensor, alpha: float) -> tuple[torch.Tensor, torch.Tensor]:
    return x * alpha, x + alpha


scale_and_shift.register_fake(lambda x, alpha: (torch.empty_like(x), torch.empty_like(x)))
scale_and_shift.register_autograd(
    lambda ctx, g1, g2: (g1 * ctx.alpha + g2, None),
    setup_context=lambda ctx, inputs, output: setattr(ctx, "alpha", inputs[1]),
)


@torch.library.custom_op(f"{NS}::add_one_", mutates_args=("x",))
def add_one_(x: torch.Tensor) -> None:
    x.add_(1)


def add_one(x: torch.Tensor) -> torch.Tensor:
    """A functional wrapper over a declared in-place op."""
    y = x.clone()
    add_one_(y)
    return y


@torch.library.custom_op(f"{NS}::argmax_last", mutates_args=())
def argmax_last(x: torch.Tensor) -> torch.Tensor:
    return x.argmax(-1)


argmax_last.register_fake(lambda x: x.new_empty(x.shape[:-1], dtype=torch.long))


@torch.library.custom_op(f"{NS}::transposed_double", mutates_args=())
def transposed_double(x: torch.Tensor) -> torch.Tensor:
    return (x * 2).t()  # non-contiguous output


# empty_like keeps x's layout, as x * 2 does: a fake that wrote the strides out for a contiguous x
# (empty_strided(..., (1, x.shape[1]))) is wrong for a transposed one, which the transposed transform finds
transposed_double.register_fake(lambda x: torch.empty_like(x).t())
transposed_double.register_autograd(lambda ctx, grad: grad.t() * 2)


def _pair(grad: bool = True) -> Callable[[], tuple[list[Any], dict[str, Any]]]:
    def make() -> tuple[list[Any], dict[str, Any]]:
        torch.manual_seed(0)
        return [torch.randn(3, 4, requires_grad=grad), torch.randn(4, 5, requires_grad=grad)], {}

    return make


CORRECT: dict[str, tuple[Callable[..., Any], Callable[[], tuple[list[Any], dict[str, Any]]], dict[str, Any]]] = {
    "scale_and_shift": (scale_and_shift, lambda: (_x(3, 4)()[0] + [0.5], {}), {}),
    "add_one_functional": (add_one, _x(3, 4, grad=False), {"check_gradients": "auto"}),
    "add_one_inplace": (add_one_, _x(3, 4, grad=False), {"check_gradients": False}),
    "argmax_last": (argmax_last, _x(3, 4), {"check_gradients": "auto"}),
    "transposed_double": (transposed_double, _x(3, 4), {}),
    "aten_matmul": (torch.matmul, _pair(), {}),
    "aten_mm_overload": (torch.ops.aten.mm.default, _pair(), {}),
    "aten_max_dim": (torch.max, lambda: (_x(3, 4)()[0] + [1], {}), {}),
    # an in-place op that changes only the input's metadata (sizes and strides), not its data
    "aten_t_inplace": (torch.Tensor.t_, _x(3, 4, grad=False), {"check_gradients": False}),
    "aten_unsqueeze_inplace": (
        torch.Tensor.unsqueeze_,
        lambda: (_x(3, 4, grad=False)()[0] + [1], {}),
        {"check_gradients": False},
    ),
    "aten_as_strided_inplace": (
        torch.Tensor.as_strided_,
        lambda: (_x(3, 4, grad=False)()[0] + [(4, 3), (1, 4)], {}),
        {"check_gradients": False},
    ),
    # eager's kernel restrides an empty out= (to (1, 1)), the traced call leaves it: an empty
    # tensor's strides carry nothing, so neither call mutated it
    "aten_ormqr_empty_out": (
        torch.ormqr,
        lambda: (
            [torch.empty(0, 5).mT, torch.empty(0), torch.empty(0, 5)],
            {"left": False, "transpose": True, "out": torch.empty(0, 5)},
        ),
        {"check_gradients": False},
    ),
}
