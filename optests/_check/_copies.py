"""Fresh copies of the inputs: same values, strides, storage sharing, ``requires_grad`` and leaf-ness."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.utils._pytree as pytree

from ._metadata import _strides_that_count
from ._trace import _TensorCall


def _is_plain_strided(t: torch.Tensor) -> bool:
    return (
        type(t) is torch.Tensor
        and t.layout == torch.strided
        and t.device.type != "meta"
        and not t.is_conj()
        and not t.is_neg()
        and not t.is_quantized
    )


def _storage_key(t: torch.Tensor) -> tuple[str, int] | None:
    """What identifies the storage of a plain strided tensor (None: no storage worth sharing)."""
    if not _is_plain_strided(t) or not t.untyped_storage().nbytes():
        return None
    return str(t.device), t.untyped_storage().data_ptr()


def _flat(like: torch.Tensor, storage: torch.UntypedStorage) -> torch.Tensor:
    """All of ``storage`` as a 1-D tensor of ``like``'s dtype and device."""
    return like.new_empty(0).set_(storage, 0, (storage.nbytes() // like.element_size(),), (1,))


#: Where copies of inputs that share a storage find the copy of it: by the storage, and by the
#: dtype where the copies are widened (one storage seen as two dtypes cannot be widened as one).
_Bases = dict[tuple[tuple[str, int], torch.dtype | None], torch.Tensor]


def _copy(
    t: torch.Tensor,
    randomize: bool,
    values: torch.Tensor | None = None,
    bases: _Bases | None = None,
    widen: bool = False,
) -> torch.Tensor:
    """A copy with the same values (or, when ``randomize``, fresh ones for floating tensors:
    ``values`` where given, uniform [0, 1) noise elsewhere), size, strides, storage offset,
    ``requires_grad`` and leaf-ness; with ``widen``, a floating tensor's in float64 (complex128).
    ``bases`` (for a tensor whose storage other inputs share) maps that storage to a flat tensor
    over its copy, made by the first of them: the copies are views of it, so they share memory as
    views of one base do (AOTAutograd's synthetic bases)."""
    with torch.no_grad():
        src = t.detach()
        fresh = randomize and src.dtype.is_floating_point
        dtype = _widened_dtype(src.dtype) if widen else src.dtype
        key = _storage_key(src) if bases is not None else None
        if bases is not None and key is not None:
            shared = (key, src.dtype if widen else None)
            base = bases.get(shared)
            if base is None:
                base = bases[shared] = _flat_copy(src, dtype)
                if fresh:
                    base.uniform_(0, 1)
            if base.dtype == dtype:
                copy = base.as_strided(src.size(), src.stride(), src.storage_offset())
            else:  # one storage seen as two dtypes: shared, but not as views
                copy = src.new_empty(0).set_(base.untyped_storage(), src.storage_offset(), src.size(), src.stride())
        elif _is_plain_strided(src):
            whole = _flat_copy(src, dtype)
            copy = whole.new_empty(0).set_(whole.untyped_storage(), src.storage_offset(), src.size(), src.stride())
            if fresh:
                whole.uniform_(0, 1)
        else:
            copy = src.clone().to(dtype)
            if fresh:
                copy.uniform_(0, 1)
        if fresh and values is not None:
            copy.copy_(values)
    if t.requires_grad:
        copy.requires_grad_(True)
        base = t._base if t._is_view() else None
        if base is not None and base.grad_fn is not None:
            # a view of a non-leaf (autograd allows an in-place on it): a view, at the same size,
            # strides and offset, of a non-leaf copy of the whole storage
            with torch.no_grad():
                whole = _flat(copy, copy.untyped_storage())
            copy = whole.requires_grad_(True).clone().as_strided(copy.size(), copy.stride(), copy.storage_offset())
        elif t.grad_fn is not None:
            copy = copy.view_as(copy) if t._is_view() else copy.clone()
    return copy


def _widened_dtype(dtype: torch.dtype) -> torch.dtype:
    if dtype.is_complex:
        return torch.complex128
    return torch.float64 if dtype.is_floating_point else dtype


def _flat_copy(src: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """All of ``src``'s storage, copied, as a 1-D tensor of ``dtype`` (element for element)."""
    return _flat(src, src.untyped_storage()).to(dtype, copy=True)


def _copies(
    tensors: Sequence[torch.Tensor],
    randomize: bool = False,
    values: Sequence[torch.Tensor] | None = None,
    widen: bool = False,
) -> list[torch.Tensor]:
    """Fresh copies; an input passed twice stays one tensor passed twice, and inputs that share
    a storage (views of one base) are copied as views of one base, so aliasing survives the copy
    (with ``widen``, floating tensors in float64 or complex128, and only inputs of one dtype share
    the widened copy of their storage)."""
    distinct = list({id(t): t for t in tensors}.values())
    keys = [_storage_key(t) for t in distinct]
    shared = {k for k in keys if k is not None and keys.count(k) > 1}
    bases: _Bases = {}
    memo: dict[int, torch.Tensor] = {}
    for i, t in enumerate(tensors):
        if id(t) not in memo:
            value = values[i] if values is not None else None
            memo[id(t)] = _copy(t, randomize, value, bases if _storage_key(t) in shared else None, widen)
    return [memo[id(t)] for t in tensors]


def _donor_values(call: _TensorCall, sample: tuple[Sequence[Any], Mapping[str, Any]] | None) -> list[torch.Tensor] | None:
    """The tensors of ``sample`` (the same call drawn with other data), if they can stand in for
    the inputs: the same structure, shapes and dtypes, and other floating values. None if not."""
    if sample is None:
        return None
    leaves, spec = pytree.tree_flatten((tuple(sample[0]), dict(sample[1])))
    if spec != call.spec:
        return None
    donors = [leaves[i] for i in call.positions]
    if not all(isinstance(d, torch.Tensor) for d in donors):
        return None
    tensor_positions = set(call.positions)
    for i, (mine, theirs) in enumerate(zip(call.leaves, leaves)):
        # everything but floating values must be the original's: dims, scalars, indices, pivots
        if i not in tensor_positions and not _same_leaf(mine, theirs):
            return None
    differs = False
    for d, t in zip(donors, call.tensors):
        if d.shape != t.shape or d.dtype != t.dtype or d.device != t.device or d.layout != t.layout:
            return None
        if not t.dtype.is_floating_point:
            if not _identical(d.detach(), t.detach(), strides=False):
                return None
            continue
        if t.layout != torch.strided or torch._debug_has_internal_overlap(t) != 0:
            return None  # its elements share memory: no copy can give each its own value
        if not differs:
            differs = not _identical(d.detach(), t.detach(), strides=False)
    return [d.detach() for d in donors] if differs else None


def _identical(a: torch.Tensor, b: torch.Tensor, strides: bool = True) -> bool:
    """Same metadata and bitwise-same values (NaN equals NaN). The storage offset always counts;
    strides only where an element is reached through them (:func:`_strides_that_count`, as the
    metadata check compares them): another stride changes no value."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    try:
        if strides and a.layout == torch.strided:
            if a.storage_offset() != b.storage_offset():
                return False
            if _strides_that_count(a.shape, a.stride()) != _strides_that_count(b.shape, b.stride()):
                return False
        if torch.equal(a, b):
            return True
        if a.is_floating_point() or a.is_complex():
            return bool(((a == b) | (a.isnan() & b.isnan())).all())
        return False
    except (RuntimeError, NotImplementedError):
        return True  # cannot compare this kind of tensor: do not claim a mutation


def _same_leaf(a: Any, b: Any) -> bool:
    try:
        return a is b or bool(type(a) is type(b) and a == b)
    except Exception:  # e.g. an array, whose == is elementwise
        return False


def _storage_groups(inputs: Sequence[torch.Tensor], overlap: bool = False) -> list[frozenset[int]]:
    """For each input, the positions of the inputs that share its storage (itself included); with
    ``overlap``, only those whose memory overlaps its own (two halves of one storage do not)."""
    keys = [_storage_key(t) or id(t) for t in inputs]

    def span(t: torch.Tensor) -> tuple[int, int]:
        extent = 1 + sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride())) if t.numel() else 0
        start = int(t.storage_offset())
        return start * t.element_size(), (start + int(extent)) * t.element_size()

    def shares(i: int, j: int) -> bool:
        if keys[i] != keys[j]:
            return False
        if not overlap or i == j:
            return True
        (a0, a1), (b0, b1) = span(inputs[i]), span(inputs[j])
        return a0 < b1 and b0 < a1

    return [frozenset(j for j in range(len(inputs)) if shares(i, j)) for i in range(len(inputs))]
