"""What a finding says: its factory, and the phrases for values, dtypes and names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .._findings import Finding
from ._options import _Checking
from ._trace import _TensorCall


def _grad_fn(t: torch.Tensor) -> str:
    return "None" if t.grad_fn is None else f"a grad_fn ({type(t.grad_fn).__name__})"


def _listed(names: list[str]) -> str:
    return "[" + ", ".join(names) + "]"


def _finding_factory(opts: _Checking) -> Callable[..., Finding]:
    def make(cls: type[Finding], what: str, actual: object, expected: object, detail: str = "") -> Finding:
        return cls(what, actual, expected, opts.context, detail=detail)

    return make


def _names(positions: frozenset[int], call: _TensorCall) -> str:
    return "[" + ", ".join(call.names[i] for i in sorted(positions)) + "]"


def _dtype(d: torch.dtype) -> str:
    return str(d).removeprefix("torch.")


def _error_excerpt(e: BaseException) -> str:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()][:6]
    return "assert_equals_fn said: " + "\n  ".join(lines)


def _difference(actual: Any, expected: Any) -> tuple[str, str]:
    """(actual, expected) phrases: max abs/rel difference for tensors of one shape, else values."""
    if not (isinstance(actual, torch.Tensor) and isinstance(expected, torch.Tensor)):
        return _short(actual), _short(expected)
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return f"{_dtype(actual.dtype)}{list(actual.shape)}", f"{_dtype(expected.dtype)}{list(expected.shape)}"
    with torch.no_grad():
        a, x = actual.detach().cpu(), expected.detach().cpu()
        if a.layout != torch.strided:
            a, x = a.to_dense(), x.to_dense()
        wide = torch.complex128 if (a.is_complex() or x.is_complex()) else torch.float64
        a, x = a.to(wide), x.to(wide)
        nan_mismatch = int((a.isnan() != x.isnan()).sum())
        diff = (a - x).abs().nan_to_num(0.0, posinf=float("inf"))
        if diff.numel() == 0:
            return "differs", "equal to eager"
        flat = int(diff.argmax())
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), diff.shape)) if diff.dim() else ()
        max_abs = float(diff.max())
        rel = diff / x.abs()
        max_rel = float(rel.nan_to_num(0.0, posinf=float("inf")).max())
        count = int((diff > 0).sum()) + nan_mismatch
    where = f" at {list(index)}" if index else ""
    nan = f", {nan_mismatch} NaN mismatches" if nan_mismatch else ""
    actual_txt = f"max abs diff {max_abs:.6g}{where} (got {_scalar(a, index)}, eager {_scalar(x, index)}), max rel diff {max_rel:.6g}, {count} of {diff.numel()} elements differ{nan}"
    return actual_txt, "equal to eager within tolerance"


def _scalar(t: torch.Tensor, index: tuple[int, ...]) -> str:
    v = t[index].item() if index else t.item()
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."
