"""``out``: the op's out variant, where it has one (an OpInfo's ``supports_out``, a sample that
already passes ``out=``, a ``torch.library`` custom op's mutable ``out`` argument, or a callable
whose signature or schema takes ``out``), with an ``out=`` tensor that is: 0, of the right size;
1, empty, so the op must resize it; 2, not dense; 3, one of the inputs (same shape and dtype), so
it overlaps an input. A sample that passes its own ``out`` tensors (keyword ``out=``: a tensor or
a tuple of them; or a custom op's ``Tensor(a!) out`` argument, by keyword or position) has them
replaced where it passes them, shaped as they are after an eager call of the sample; any other
is called without ``out`` to learn what its out tensors hold. Where eager refuses
(the overlap, a resize), the compiled call must refuse too: writing silently is a finding. The
inputs do not require grad (``out=`` does not support autograd), and no gradients are checked."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

from .._transforms import _exact_copy
from ..patterns import Called, Made, Sample, Transform, Unsupported, attempt
from .single import Single

#: The ``out=`` tensors, by index.
OUT_KINDS = ("of the right size", "empty (to be resized)", "not dense", "an input (overlapping it)")

#: Dynamo's documented graph breaks for ``out=`` tensors it does not trace, the same for every op
#: (an ``out=`` tensor to resize, a non-dense one): under ``fullgraph=True`` such a call is not
#: supported, so the derived sample is not applicable (:class:`~optests._patterns.Unsupported`).
UNSUPPORTED = ("Shape mismatch with out=", "non-contiguous `out=`")


def _mutable_out(func: Any) -> int | None:
    """The position of a custom op's mutable ``out`` argument (schema ``Tensor(a!) out``), or None."""
    func = getattr(func, "_opoverload", func)  # a torch.library.custom_op: its OpOverload
    schema = getattr(func, "_schema", None)
    if not isinstance(schema, torch._C.FunctionSchema):
        return None
    for i, a in enumerate(schema.arguments):
        if a.name == "out" and a.alias_info is not None and a.alias_info.is_write:
            return i
    return None


def _own_out(origin: Any, sample: Sample) -> tuple[str | int, list[torch.Tensor]] | None:
    """Where the sample passes its own out tensors (``"out"``: the keyword; an int: a custom op's
    ``out`` argument at that position), and those tensors; None where it passes none."""
    given = _outs(sample.kwargs.get("out"))
    if given is not None:
        return "out", given
    position = _mutable_out(origin.func) if origin is not None else None
    if position is not None and position < len(sample.args):
        given = _outs(sample.args[position])
        if given is not None:
            return position, given
    return None


def takes_out(origin: Any, sample: Sample) -> bool:
    """Whether what ``origin`` checks has an out variant."""
    if "out" in sample.kwargs or _own_out(origin, sample) is not None:
        return True
    if origin is None:
        return False
    if origin.opinfo is not None:
        return bool(getattr(origin.opinfo, "supports_out", False))
    func = getattr(origin.func, "_opoverload", origin.func)  # a torch.library.custom_op: its OpOverload
    schema = getattr(func, "_schema", None)
    if isinstance(schema, torch._C.FunctionSchema):
        return any(a.name == "out" and a.kwarg_only for a in schema.arguments)
    try:
        return "out" in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


def _outs(result: Any) -> list[torch.Tensor] | None:
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)) and result and all(isinstance(r, torch.Tensor) for r in result):
        return list(result)
    return None


def _derive(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    origin = sample.origin
    if origin is None or not takes_out(origin, sample):
        return {}
    grad_off = {pos: False for pos in sample.inputs}
    args, kwargs = sample.build(requires_grad=grad_off)
    own = _own_out(origin, sample)
    if own is None:
        kwargs.pop("out", None)
    try:
        with torch.no_grad():
            outs = _outs(origin.func(*args, **kwargs))  # what the out= tensors must hold
    except Exception:  # eager refuses the sample itself: there is no out= call of it to make
        return {}
    if own is not None:  # its own out tensors, as the call left them (resized, if it resized them)
        where, _ = own
        outs = _outs(args[where] if isinstance(where, int) else kwargs["out"])
    if outs is None or any(o.layout != torch.strided for o in outs):
        return {}
    given = None if own is None else sample.args[own[0]] if isinstance(own[0], int) else sample.kwargs["out"]
    single = not isinstance(given, (tuple, list))  # a tuple of out tensors is passed as a tuple, even of one

    def wrap(made: list[torch.Tensor]) -> Any:
        return made[0] if len(made) == 1 and single else tuple(made)

    def passing(args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The call with ``out`` where the sample passes its out tensors (keyword ``out=`` unless it
        passes them by position)."""
        if own is not None and isinstance(own[0], int):
            return (*args[: own[0]], out, *args[own[0] + 1 :]), kwargs
        return args, {**kwargs, "out": out}

    found: dict[int, Made] = {}
    for index, kind in enumerate(OUT_KINDS[:3]):
        made = []
        for o in outs:
            if index == 0:
                made.append(torch.zeros(o.shape, dtype=o.dtype, device=o.device))
            elif index == 1:
                made.append(torch.zeros(0, dtype=o.dtype, device=o.device))
            else:
                made.append(torch.zeros((*o.shape, 2), dtype=o.dtype, device=o.device)[..., 0])
        if index == 2 and all(o.numel() < 2 for o in outs):
            continue  # fewer than two elements are dense whatever the strides
        args, kwargs = sample.build(requires_grad=grad_off)
        found[index] = Made(passing(args, kwargs, wrap(made)), f"out= {kind}", gradients=False)
    if len(outs) == 1:
        mine = {id(o) for o in own[1]} if own is not None else set()
        for pos in sample.inputs:
            t = sample.tensor(pos)
            if id(t) in mine:
                continue  # the sample's own out tensor: an input only as the out= it is
            if t.shape == outs[0].shape and t.dtype == outs[0].dtype and t.device == outs[0].device:
                shared = _exact_copy(t, False)
                args, kwargs = sample.build({pos: shared}, requires_grad=grad_off)
                found[3] = Made(passing(args, kwargs, wrap([shared])), f"out= {sample.name(pos)}", gradients=False)
                break
    return found


class Out(Single):
    """The default call; the overlapping ``out=`` (3) may be refused, by eager and compiled alike."""

    def __init__(self, index: int) -> None:
        self.index = index

    def call(self, fn: Callable[[list[torch.Tensor]], Any], inputs: list[torch.Tensor]) -> Called:
        if self.index != 3:
            try:
                return super().call(fn, inputs)
            except Exception as e:
                if any(text in str(e) for text in UNSUPPORTED):
                    raise Unsupported(str(e).strip().splitlines()[0]) from e
                raise
        called = Called(None, None)
        called.out = called.compared = attempt(called, "the call with out= an input", lambda: fn(inputs))
        return called


def _indices(sample: Sample) -> list[int]:
    """What it derives, named before it is made (without calling the op): every kind."""
    return list(range(len(OUT_KINDS))) if takes_out(sample.origin, sample) else []


OUT = Transform(_derive, pattern=Out, indices=_indices, count=len(OUT_KINDS))
