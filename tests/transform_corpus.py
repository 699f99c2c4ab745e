"""Operators whose bug only an input transform shows, and correct ones, for testing transforms.

Each buggy op passes the check on its plain sample; the check flags it, at the stage given, on
the samples its transform derives (``optests._transforms.derive``). BUGS maps a name to a
:class:`Bug`; CORRECT maps a name to a :class:`Correct` op, which must pass on the samples every
transform derives. Like ``corpus.py``, each bug is a realistic mistake an operator author makes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

NS = "optests_tcorpus"

Make = Callable[[], tuple[list[Any], dict[str, Any]]]


@dataclass(frozen=True)
class Bug:
    func: Callable[..., Any]
    make: Make
    #: the transform whose derived samples show the bug
    transform: str
    #: the stage the check flags it at (a :class:`optests.Stage` value)
    stage: str
    #: extra keyword arguments of the check
    check: dict[str, Any] = field(default_factory=dict)
    #: other transforms that show it too (at whatever stage)
    also: tuple[str, ...] = ()


@dataclass(frozen=True)
class Correct:
    func: Callable[..., Any]
    make: Make
    check: dict[str, Any] = field(default_factory=dict)


def _tensors(*shapes: tuple[int, ...], grad: bool = True, extra: tuple[Any, ...] = ()) -> Make:
    def make() -> tuple[list[Any], dict[str, Any]]:
        torch.manual_seed(0)
        return [*(torch.randn(*s, requires_grad=grad) for s in shapes), *extra], {}

    return make


def _double_backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    return grad * 2


def _save_inputs(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    ctx.save_for_backward(*inputs)


# -- noncontiguous: a fake kernel that copies the input's strides -----------------------------------


@torch.library.custom_op(f"{NS}::fake_copies_strides", mutates_args=())
def fake_copies_strides(x: torch.Tensor) -> torch.Tensor:
    return x * 2  # a dense result in the input's dimension order


@fake_copies_strides.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    # Right for every dense layout (contiguous, transposed, channels_last); for a non-dense input
    # it predicts the input's gaps, where the real kernel returns a dense tensor.
    return x.new_empty_strided(x.shape, x.stride())


fake_copies_strides.register_autograd(_double_backward)


# -- transposed: a fake kernel that always says contiguous -----------------------------------------


@torch.library.custom_op(f"{NS}::fake_always_contiguous", mutates_args=())
def fake_always_contiguous(x: torch.Tensor) -> torch.Tensor:
    return x * 2  # keeps a transposed (or channels_last) input's memory order


@fake_always_contiguous.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return x.new_empty(x.shape)  # contiguous: right only for contiguous (and non-dense) inputs


fake_always_contiguous.register_autograd(_double_backward)


# -- duplicated: a mutable op that reads an input after writing another ----------------------------


@torch.library.custom_op(f"{NS}::scale_add_", mutates_args=("a",))
def scale_add_(a: torch.Tensor, b: torch.Tensor) -> None:
    """a = 2 a + b, in place. When ``b is a``, eager reads the doubled ``a`` (4 a); the
    functionalized graph writes into a copy of ``a`` and reads the original (3 a)."""
    a.mul_(2)
    a.add_(b)


# -- aliased: a special path for inputs that share memory, with a bug in it ------------------------


@torch.library.custom_op(f"{NS}::axpy_", mutates_args=("y",))
def axpy_(y: torch.Tensor, x: torch.Tensor, alpha: float) -> None:
    """y += alpha * x, in place. Like C++ kernels that check for overlapping memory, it copies
    ``x`` first when ``x`` and ``y`` share a storage; that path forgets ``alpha``. Compiled, the
    kernel writes into a copy of ``y`` and never sees shared storage, so eager and compiled differ."""
    if x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr():
        y.add_(x.clone())
    else:
        y.add_(x, alpha=alpha)


# -- grad-subset: a kernel that consults grad mode; a backward with an untraceable branch ----------


@torch.library.custom_op(f"{NS}::grad_mode_layout", mutates_args=())
def grad_mode_layout(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x * y. The kernel picks a column-major result "when autograd records", which it judges by
    grad mode; but a custom op's kernel runs with grad mode off exactly when autograd records,
    and on (in eager) when no input requires grad: then the fake kernel's layout is wrong."""
    out = x * y
    return out.t().contiguous().t() if torch.is_grad_enabled() and out.dim() == 2 else out


grad_mode_layout.register_fake(lambda x, y: torch.empty_like(x))
grad_mode_layout.register_autograd(
    lambda ctx, grad: (grad * ctx.saved_tensors[1], grad * ctx.saved_tensors[0]), setup_context=_save_inputs
)


@torch.library.custom_op(f"{NS}::single_grad_shortcut", mutates_args=())
def single_grad_shortcut(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x * y


single_grad_shortcut.register_fake(lambda x, y: torch.empty_like(x))


def _single_grad_backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    x, y = ctx.saved_tensors
    if ctx.needs_input_grad[0] and ctx.needs_input_grad[1]:
        return grad * y, grad * x
    # One gradient wanted: a shortcut for a zero incoming gradient, a Python branch on tensor
    # data, which no trace can follow.
    if not grad.any():
        return None, None
    return (grad * y if ctx.needs_input_grad[0] else None), (grad * x if ctx.needs_input_grad[1] else None)


single_grad_shortcut.register_autograd(_single_grad_backward, setup_context=_save_inputs)


# -- dtypes: a kernel that computes in float32 and forgets to cast back ----------------------------


@torch.library.custom_op(f"{NS}::softplus_in_float32", mutates_args=())
def softplus_in_float32(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.softplus(x.float())  # a float32 result for every floating dtype


softplus_in_float32.register_fake(lambda x: torch.empty_like(x))
softplus_in_float32.register_autograd(lambda ctx, grad: grad * torch.sigmoid(ctx.saved_tensors[0]), setup_context=_save_inputs)


# -- resized: a fake kernel whose size rule is right for even sizes only ---------------------------


@torch.library.custom_op(f"{NS}::every_other", mutates_args=())
def every_other(x: torch.Tensor) -> torch.Tensor:
    return x[..., ::2].contiguous()  # ceil(n / 2) elements along the last dim


@every_other.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return x.new_empty(*x.shape[:-1], x.shape[-1] // 2)  # floor: wrong for odd sizes


def _every_other_backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    out = grad.new_zeros(ctx.shape)
    out[..., ::2] = grad
    return out


every_other.register_autograd(
    _every_other_backward, setup_context=lambda ctx, inputs, output: setattr(ctx, "shape", inputs[0].shape)
)


BUGS: dict[str, Bug] = {
    "fake_copies_strides": Bug(fake_copies_strides, _tensors((3, 4)), "noncontiguous", "metadata"),
    "fake_always_contiguous": Bug(fake_always_contiguous, _tensors((3, 4)), "transposed", "metadata"),
    "scale_add_": Bug(
        scale_add_, _tensors((3, 4), (3, 4), grad=False), "duplicated", "mutation", {"check_gradients": "auto"}, ("aliased",)
    ),
    "axpy_": Bug(
        axpy_,
        _tensors((3, 4), (3, 4), grad=False, extra=(0.5,)),
        "aliased",
        "mutation",
        {"check_gradients": "auto"},
        ("duplicated",),
    ),
    "grad_mode_layout": Bug(grad_mode_layout, _tensors((3, 4), (3, 4)), "grad-subset", "metadata"),
    "single_grad_shortcut": Bug(single_grad_shortcut, _tensors((3, 4), (3, 4)), "grad-subset", "backward"),
    "softplus_in_float32": Bug(softplus_in_float32, _tensors((3, 4)), "dtypes", "metadata"),
    "every_other": Bug(every_other, _tensors((3, 4)), "resized", "metadata"),
}


# -- correct operators -----------------------------------------------------------------------------


@torch.library.custom_op(f"{NS}::copy", mutates_args=())
def copy(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


copy.register_fake(lambda x: torch.empty_like(x))
copy.register_autograd(lambda ctx, grad: grad)


@torch.library.custom_op(f"{NS}::add_", mutates_args=("x",))
def add_(x: torch.Tensor, y: torch.Tensor) -> None:
    x.add_(y)


@torch.library.custom_op(f"{NS}::matmul", mutates_args=())
def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b


matmul.register_fake(lambda a, b: a.new_empty(a.shape[0], b.shape[1]))


def _matmul_backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    a, b = ctx.saved_tensors
    return (grad @ b.t() if ctx.needs_input_grad[0] else None), (a.t() @ grad if ctx.needs_input_grad[1] else None)


matmul.register_autograd(_matmul_backward, setup_context=_save_inputs)


@torch.library.custom_op(f"{NS}::scale_shift", mutates_args=())
def scale_shift(x: torch.Tensor, alpha: float) -> torch.Tensor:
    return x * alpha + 1


scale_shift.register_fake(lambda x, alpha: torch.empty_like(x))
scale_shift.register_autograd(
    lambda ctx, grad: (grad * ctx.alpha, None), setup_context=lambda ctx, inputs, output: setattr(ctx, "alpha", inputs[1])
)


@torch.library.custom_op(f"{NS}::sin_cos", mutates_args=())
def sin_cos(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x.sin(), x.cos()


sin_cos.register_fake(lambda x: (torch.empty_like(x), torch.empty_like(x)))
sin_cos.register_autograd(
    lambda ctx, g_sin, g_cos: g_sin * ctx.saved_tensors[0].cos() - g_cos * ctx.saved_tensors[0].sin(),
    setup_context=_save_inputs,
)


CORRECT: dict[str, Correct] = {
    "copy": Correct(copy, _tensors((2, 3, 4, 5))),
    "add_": Correct(add_, _tensors((3, 4), (3, 4), grad=False), {"check_gradients": "auto"}),
    "matmul": Correct(matmul, _tensors((3, 4), (4, 5))),
    "matmul_square": Correct(matmul, _tensors((4, 4), (4, 4))),
    "scale_shift": Correct(scale_shift, _tensors((3, 4), extra=(0.5,))),
    "sin_cos": Correct(sin_cos, _tensors((3, 4))),
    "aten_add_": Correct(torch.Tensor.add_, _tensors((3, 4), (3, 4), grad=False), {"check_gradients": "auto"}),
    "aten_addcmul": Correct(torch.addcmul, _tensors((3, 4), (3, 4), (3, 4))),
}
