"""``inplace``: the op's in-place variant on the sample: the OpInfo's ``inplace_variant``; for a
given callable, its in-place twin by PyTorch's naming (``torch.ops.NS.NAME_`` beside an op
``NS::NAME``, or a function ``NAME_`` beside a function ``NAME`` in its module). Sample 0 calls it
with the mutated input not requiring grad (autograd forbids an in-place on a leaf that does);
sample 1, where that input requires grad, on a view of a non-leaf tensor that requires grad (a
slice at a nonzero offset), as ``x[1:].add_(y)`` in a model."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import torch

from .._transforms import _plain
from ..patterns import Made, Sample, Transform


def inplace_variant(origin: Any) -> Callable[..., Any] | None:
    """The in-place variant of what ``origin`` checks (None if it has none)."""
    if origin is None:
        return None
    if origin.opinfo is not None:
        found = getattr(origin.opinfo, "inplace_variant", None)
        return found if callable(found) else None
    func = origin.func
    if isinstance(func, torch._ops.OpOverload):
        ns, _, name = str(func._name).partition(".")[0].partition("::")
        packet = getattr(getattr(torch.ops, ns, None), f"{name}_", None)
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            return None
        found = getattr(packet, func._overloadname, None) or getattr(packet, "default", None)
        return found if callable(found) else None
    if hasattr(func, "_opoverload"):  # a torch.library.custom_op
        return inplace_variant(_Func(func._opoverload))
    fname, module = getattr(func, "__name__", None), getattr(func, "__module__", None)
    if not fname or not module:
        return None
    try:
        twin = getattr(importlib.import_module(module), f"{fname}_", None)
    except Exception:
        return None
    return twin if callable(twin) else None


class _Func:
    def __init__(self, func: Any) -> None:
        self.func, self.opinfo = func, None


def _view_of_larger(t: torch.Tensor) -> torch.Tensor:
    """``t``'s values in a view at a nonzero offset of a non-leaf (a clone of a leaf that requires
    grad), as ``x[1:]`` of an activation in a model: autograd refuses an in-place on a view of a
    leaf that requires grad, and allows it here."""
    with torch.no_grad():
        leaf = torch.empty((t.numel() + 1,), dtype=t.dtype, device=t.device)
        leaf[1:].copy_(_plain(t).reshape(-1))
    leaf.requires_grad_(True)
    return leaf.clone()[1:].view(t.shape)


def _derive(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    func = inplace_variant(sample.origin)
    if func is None or not sample.inputs or sample.inputs[0] != 0:
        return {}  # the in-place variant mutates its first argument: it must be a tensor
    first = sample.tensor(0)
    made = {0: Made(sample.build(requires_grad={0: False}), "the in-place variant", func)}
    if first.requires_grad and (first.is_floating_point() or first.is_complex()) and first.numel():
        view = _view_of_larger(first)
        made[1] = Made(
            sample.build({0: view}), "the in-place variant on a view of a non-leaf (a slice of a tensor requiring grad)", func
        )
    return made


#: Called as the base sample is: what differs is the callable (the derived sample's ``func``).
INPLACE = Transform(_derive)
