"""Tolerances: an OpInfo's override raised over ``assert_close``'s defaults, per dtype."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.utils._pytree as pytree

from ._intree import assert_close_equal_nan

__all__ = ["tolerant", "assert_close_for_dtype"]


def tolerant(dtype: torch.dtype, atol: float | None, rtol: float | None, *, leaves_of_dtype: bool = False) -> Callable[..., None]:
    """:func:`assert_close_equal_nan` with tolerances raised as an OpInfo's ``toleranceOverride``
    (or ``precisionOverride``) for ``dtype`` raises them in PyTorch's test framework: each is the
    larger of the override and ``assert_close``'s default for that dtype. ``leaves_of_dtype``:
    for the tensors of ``dtype`` only, the others at their own defaults (``autocast``, whose
    float32 results are not the lower precision's). A ``functools.partial``, so that it pickles
    and a repro script can name it."""
    default_rtol, default_atol = _DEFAULT_TOLERANCES.get(dtype, (0.0, 0.0))
    raised = {"atol": max(atol or 0.0, default_atol), "rtol": max(rtol or 0.0, default_rtol)}
    if leaves_of_dtype:
        return functools.partial(assert_close_for_dtype, dtype=dtype, **raised)
    return functools.partial(assert_close_equal_nan, **raised)


def assert_close_for_dtype(actual: Any, expected: Any, *, dtype: torch.dtype, atol: float, rtol: float) -> None:
    """:func:`assert_close_equal_nan` with ``atol`` and ``rtol`` for the tensors of ``dtype``,
    and ``assert_close``'s defaults for the others."""
    a_leaves, a_spec = pytree.tree_flatten(actual)
    e_leaves, e_spec = pytree.tree_flatten(expected)
    if a_spec != e_spec:
        assert_close_equal_nan(actual, expected)  # says how the structures differ
        return
    for a, e in zip(a_leaves, e_leaves):
        if isinstance(e, torch.Tensor) and e.dtype == dtype:
            assert_close_equal_nan(a, e, atol=atol, rtol=rtol)
        else:
            assert_close_equal_nan(a, e)


#: ``torch.testing.assert_close``'s default (rtol, atol) by dtype (its documentation).
_DEFAULT_TOLERANCES = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex32: (1e-3, 1e-5),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}
