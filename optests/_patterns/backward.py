"""``backward``: other ways to take gradients of one call, one derived sample each:

0. the gradient of each output alone (``allow_unused=True``): ``None`` against a zero tensor is
   a difference (eager gives ``None`` for an output an input does not reach). The graph is
   retained between outputs;
1. backward through each output in turn without ``retain_graph`` (where eager allows it; the
   compiled function is one autograd node for all its outputs, so its refusal of a second
   backward, :data:`SECOND_BACKWARD`, is :class:`~optests._patterns.Unsupported` too);
2. backward twice with ``retain_graph=True``;
3. double backward: the gradients with ``create_graph=True``, then the gradient of their sum.
   The compiled call raising PyTorch's documented "does not currently support double backward"
   is :class:`~optests._patterns.Unsupported` (not applicable); a missing or wrong second-order
   gradient is a finding.

Where a pattern retains the graph or creates one (0, 2, 3), ``torch._functorch.config.donated_buffer``
is off, as PyTorch's own error message tells a user: a compiled backward that frees a saved
buffer refuses ``retain_graph`` and ``create_graph`` alike, for every op that saves one (in
dynamic mode, ``amax``'s saved mask already), which says nothing of the op.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

import torch

from ..patterns import Called, Made, Sample, Transform, Unsupported
from .derived import differentiable, same
from .single import Single, loss, tensors

#: The derived samples, by index.
BACKWARDS = (
    "the gradient of each output alone",
    "backward through each output in turn, without retain_graph",
    "backward twice with retain_graph=True",
    "double backward",
)

#: What AOTAutograd raises for a double backward through any compiled function.
DOUBLE_BACKWARD_UNSUPPORTED = "does not currently support double backward"
#: What autograd raises for a second backward through a node whose saved tensors the first freed.
#: A compiled function is one node for all its outputs, so every multi-output one raises it where
#: eager (a node per output) does not: a limit of compiled code as documented, not of one op.
SECOND_BACKWARD = "Trying to backward through the graph a second time"


class Backward(Single):
    """One call; gradients taken in one of :data:`BACKWARDS`."""

    def __init__(self, index: int) -> None:
        self.index = index

    def _config(self) -> contextlib.AbstractContextManager[Any]:
        if self.index == 1:  # no graph retained or created
            return contextlib.nullcontext()
        from torch._functorch import config

        return config.patch(donated_buffer=False)  # type: ignore[no-any-return]

    def call(self, fn: Callable[[list[torch.Tensor]], Any], inputs: list[torch.Tensor]) -> Called:
        with self._config():  # the compiled function traces on its first call: here (AOTAutograd
            # reads the config again on every backward, and in dynamic mode may compile the
            # backward then: the gradients are taken under it too)
            called = super().call(fn, inputs)
        outs = [t for t in tensors(called.out) if t.requires_grad]
        if self.index in (0, 1):
            called.rounds = tuple(f"out {i} alone" for i in range(len(outs)))
        elif self.index == 2:
            called.rounds = ("first backward", "second backward")
        elif self.index == 3:
            called.rounds = ("first order", "second order")
        return called

    def gradients(self, called: Called, inputs: list[torch.Tensor]) -> tuple[torch.Tensor | None, ...]:
        diff = [t for t in inputs if t.requires_grad]
        outs = [t for t in tensors(called.out) if t.requires_grad]
        grad = torch.autograd.grad
        with self._config():
            if self.index == 0:
                return tuple(g for t in outs for g in grad(t.sum().abs(), diff, allow_unused=True, retain_graph=True))
            if self.index == 1:
                found: list[torch.Tensor | None] = []
                for n, t in enumerate(outs):
                    try:
                        found += grad(t.sum().abs(), diff, allow_unused=True)
                    except RuntimeError as e:
                        if n and SECOND_BACKWARD in str(e):  # eager passed (or this is eager's own refusal: not applicable)
                            raise Unsupported(str(e).strip().splitlines()[0]) from e
                        raise
                return tuple(found)
            if self.index == 2:
                total = loss(called.out)
                return (*grad(total, diff, allow_unused=True, retain_graph=True), *grad(total, diff, allow_unused=True))
            # dense tangents of ones: sum()'s expanded ones make AOTAutograd restride them, which
            # fails under create_graph for every op, before its double backward is reached
            first = grad(outs, diff, [torch.ones_like(t) for t in outs], allow_unused=True, create_graph=True)
            again = [g.sum().abs() for g in first if g is not None and g.requires_grad]
            if not again:  # no gradient depends on the inputs: no second-order gradient
                return (*first, *(None,) * len(diff))
            try:
                second = grad(functools.reduce(torch.add, again), diff, allow_unused=True)
            except RuntimeError as e:
                if DOUBLE_BACKWARD_UNSUPPORTED in str(e):
                    raise Unsupported(str(e).strip().splitlines()[0]) from e
                raise
            return (*(g.detach() if g is not None else None for g in first), *second)


def _derive(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    if not differentiable(sample):
        return {}
    return {i: same(sample, kind) for i, kind in enumerate(BACKWARDS)}


BACKWARD = Transform(_derive, pattern=Backward, count=len(BACKWARDS))
