"""Repro scripts: Python source that reproduces a check on the same call."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

#: Tensors with at most this many elements are written out value by value.
MAX_INLINE_ELEMENTS = 256

_DEFAULTS: dict[str, object] = {
    "check_gradients": True,
    "try_check_data_specialization": False,
    "skip_correctness_check": False,
    "disable_functionalization": False,
    "check_metadata": True,
    "check_mutations": True,
    "randomize_without_gradients": True,
}


def func_name(func: Callable[..., Any]) -> str:
    """A short readable name: ``aten.sin.default``, ``mylib::foo``, ``torch.nn.functional.relu``."""
    if isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return str(func)
    qualname = getattr(func, "_qualname", None)  # torch.library.custom_op's CustomOpDef
    if isinstance(qualname, str):
        return qualname
    return getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or type(func).__name__


def func_source(func: Callable[..., Any]) -> tuple[list[str], str]:
    """(import lines, expression) naming ``func`` in a script, or an expression that explains
    why it cannot be named."""
    if isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return [], f"torch.ops.{func}"
    qualname = getattr(func, "_qualname", None)
    if isinstance(qualname, str) and "::" in qualname:
        ns, name = qualname.split("::", 1)
        module = getattr(getattr(func, "_init_fn", None), "__module__", None)
        imports = [f"import {module}  # registers {qualname}"] if module and module != "__main__" else []
        return imports, f"torch.ops.{ns}.{name}.default"
    module = getattr(func, "__module__", None)
    if module and module != "__main__":
        for name in (getattr(func, "__qualname__", ""), getattr(func, "__name__", "")):
            if name and "<" not in name and _resolves(module, name, func):
                return ([] if module.split(".")[0] == "torch" else [f"import {module}"]), f"{module}.{name}"
    return [], f"None  # TODO: {func_name(func)!r} cannot be imported by name; define it here"


def _resolves(module: str, name: str, func: object) -> bool:
    import sys

    obj: object = sys.modules.get(module)
    for part in name.split("."):
        obj = getattr(obj, part, None)
    return obj is func


def _float(v: float) -> str:
    if math.isnan(v):
        return "float('nan')"
    if math.isinf(v):
        return "float('inf')" if v > 0 else "float('-inf')"
    return repr(v)


def _nested(v: Any) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_nested(x) for x in v) + "]"
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, complex):
        return f"complex({_float(v.real)}, {_float(v.imag)})"
    return repr(v)


def tensor_source(t: torch.Tensor) -> str:
    """An expression that rebuilds ``t``: values inline when small, else a random stand-in."""
    dtype = str(t.dtype)
    device = "" if t.device.type == "cpu" else f", device={str(t.device)!r}"
    shape = list(t.shape)
    if t.layout != torch.strided or type(t) is not torch.Tensor:
        expr = f"torch.zeros({shape}, dtype={dtype}{device})  # TODO: a {type(t).__name__} with layout {t.layout} was here"
    elif t.numel() <= MAX_INLINE_ELEMENTS:
        values = _nested(t.detach().cpu().resolve_conj().resolve_neg().tolist())
        expr = f"torch.tensor({values}, dtype={dtype}{device})"
        if not t.is_contiguous() and _dense_non_overlapping(t):
            expr = f"torch.empty_strided({shape}, {list(t.stride())}, dtype={dtype}{device}).copy_({expr})"
    elif t.dtype.is_floating_point or t.dtype.is_complex:
        expr = f"torch.randn({shape}, dtype={dtype}{device})  # values not embedded ({t.numel()} elements)"
    elif t.dtype == torch.bool:
        expr = f"torch.randint(0, 2, {shape}{device}).bool()  # values not embedded ({t.numel()} elements)"
    else:
        expr = f"torch.randint(0, 10, {shape}, dtype={dtype}{device})  # values not embedded ({t.numel()} elements)"
    if t.requires_grad:
        expr = expr.replace(")  #", ").requires_grad_()  #", 1) if "  #" in expr else expr + ".requires_grad_()"
    return expr


def _dense_non_overlapping(t: torch.Tensor) -> bool:
    """True when the elements fill their memory exactly once, in some dimension order."""
    expected = 1
    for size, stride in sorted(((sz, st) for sz, st in zip(t.shape, t.stride()) if sz != 1), key=lambda p: p[1]):
        if stride != expected:
            return False
        expected *= size
    return True


def value_source(v: Any) -> str:
    if isinstance(v, torch.Tensor):
        return tensor_source(v)
    if isinstance(v, list):
        return "[" + ", ".join(value_source(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + "".join(value_source(x) + ", " for x in v).rstrip(" ") + ")" if v else "()"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: {value_source(x)}" for k, x in v.items()) + "}"
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, torch.device):
        return f"torch.device({str(v)!r})"
    return repr(v)


def setup_source(func: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    """Script lines that define ``func``, ``args`` and ``kwargs``."""
    imports, func_expr = func_source(func)
    lines = [*imports, f"func = {func_expr}", f"args = {value_source(list(args))}", f"kwargs = {value_source(dict(kwargs))}"]
    return "\n".join(lines)


def render(
    func: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    options: Mapping[str, object],
    *,
    setup: str | None = None,
) -> str:
    """A script that reruns the check. ``setup`` (defining func, args, kwargs) overrides the
    rendering from values, e.g. to rebuild an OpInfo sample by name."""
    body = setup if setup is not None else setup_source(func, args, kwargs)
    opts = [f"dynamic={options['dynamic']!r}"] + [
        f"{k}={v!r}" for k, v in options.items() if k in _DEFAULTS and _DEFAULTS[k] != v
    ]
    return "\n".join(
        [
            "import torch",
            "from optests import aot_autograd_check",
            body,
            f"aot_autograd_check(func, args, kwargs, {', '.join(opts)})",
        ]
    )
