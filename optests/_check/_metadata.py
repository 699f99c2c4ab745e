"""Metadata of one tensor, as plain data (never holds a tensor: fake tensors must not escape)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class _Meta:
    dtype: torch.dtype
    shape: tuple[int | None, ...]
    stride: tuple[int | None, ...] | None  # None: not strided (sparse, nested, ...)
    requires_grad: bool
    aliases: frozenset[int]  # positions of the inputs this tensor shares storage with


def _hint(v: int | torch.SymInt) -> int | None:
    """A concrete int for a possibly symbolic size, without adding a guard (None if unknown)."""
    if isinstance(v, int):
        return v
    node = v.node
    if node.has_hint():
        return int(node.hint)
    value = node.maybe_as_int()
    return None if value is None else int(value)


def _meta(t: torch.Tensor, inputs: Sequence[torch.Tensor]) -> _Meta:
    try:
        stride: tuple[int | None, ...] | None = tuple(_hint(s) for s in t.stride())
    except (RuntimeError, NotImplementedError):
        stride = None
    aliases = frozenset(i for i, inp in enumerate(inputs) if _is_alias_of(t, inp))
    return _Meta(t.dtype, tuple(_hint(s) for s in t.shape), stride, t.requires_grad, aliases)


def _is_alias_of(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether ``a`` and ``b`` share a storage; a traceable wrapper subclass (``TwoTensor``, as
    the ``subclass`` pattern passes) through its inner tensors."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    for x, y in ((a, b), (b, a)):
        if is_traceable_wrapper_subclass(x) and not x.is_nested:  # a nested tensor as before: it has a storage of its own
            try:
                names = x.__tensor_flatten__()[0]
            except Exception:
                return False
            return any(_is_alias_of(getattr(x, name), y) for name in names)
    try:
        return bool(torch._C._is_alias_of(a, b))  # type: ignore[attr-defined]
    except (RuntimeError, NotImplementedError):
        return False


def _significant_strides(m: _Meta) -> tuple[int | None, ...] | None:
    """Strides that carry meaning: skip dims of size <= 1, and empty tensors entirely. A size
    the trace cannot know (data-dependent, unbacked) makes the strides unknown: None."""
    return None if m.stride is None else _strides_that_count(m.shape, m.stride)


def _strides_that_count(shape: Sequence[int | None], stride: Sequence[int | None]) -> tuple[int | None, ...] | None:
    """The strides some element is reached through: those of the dims of size > 1; None for an
    empty tensor (none) or a size the trace cannot know."""
    if any(s == 0 for s in shape) or None in shape:
        return None
    return tuple(st for sz, st in zip(shape, stride) if sz is not None and sz > 1)


def _agree(a: Sequence[int | None], b: Sequence[int | None]) -> bool:
    """Same length and equal wherever both are known (None: unknown to the trace)."""
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))
