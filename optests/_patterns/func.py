"""``func``: ``torch.func`` transforms and compiled code, one derived sample each:

0. ``torch.func.grad`` (``grad_and_value`` of the loss, the outputs as its aux) of the compiled
   function, against the same of eager;
1. ``torch.func.vmap`` of the compiled function over a new leading batch dim of 2 of every tensor
   input (the input, then floating ones halved: two different rows), gradients through it;
2. a compiled function whose body applies ``torch.func.grad`` to the call (its outputs and the
   gradients are the compiled function's outputs: compared as outputs);
3. a compiled function whose body applies ``torch.func.vmap`` to the call, on the batched inputs
   of 1, gradients through it.

Where the compiled call refuses a transform around it as PyTorch documents for every function
(:data:`AROUND_UNSUPPORTED`: ``torch.compile(fullgraph=True)`` under a functorch transform,
AOTAutograd's ``aot_function`` under one), the sample is not applicable
(:class:`~optests._patterns.Unsupported`); so is it where eager's body in 2 and 3 meets a kernel
``torch.func`` refuses (:data:`FUNC_REFUSES`), whatever compiled code then does (a compiled body
that refuses so where eager's goes through is a finding)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..patterns import Called, Made, Sample, Transform, Unsupported
from .derived import differentiable
from .single import Single, loss

#: The derived samples, by index.
FUNCS = (
    "torch.func.grad of the compiled function",
    "torch.func.vmap of the compiled function over a new leading batch dim",
    "a compiled function whose body applies torch.func.grad",
    "a compiled function whose body applies torch.func.vmap over a new leading batch dim",
)

#: What ``torch.func`` refuses in a kernel it runs under a transform, eager or traced: the wrapper
#: tensors have no storage or data pointer to hand (``tensor_split`` with tensor indices, the FFT
#: ops, ``log_softmax`` with a dtype), nor a contiguity query vmap has not implemented.
FUNC_REFUSES = re.compile(
    r"Cannot access data pointer of Tensor that doesn't have storage|NYI: querying is_contiguous inside of vmap"
    r"|Cannot access storage of (?:TensorWrapper|BatchedTensorImpl)"
)

#: What compiled code raises for any function under a functorch transform (torch 2.13): Dynamo with
#: ``fullgraph=True`` ("Unsupported functorch tracing attempt"), and AOTAutograd's
#: ``aot_function``, whose fake tensors meet the transform's wrappers (what it then raises depends
#: on the op's first kernel: its fake-tensor check, or one of :data:`FUNC_REFUSES`).
AROUND_UNSUPPORTED = re.compile(
    r"Unsupported functorch tracing attempt|Please convert all Tensors to FakeTensors first"
    rf"|expected FakeTensor for arg|{FUNC_REFUSES.pattern}"
)

#: The batch a vmapped sample has: its input, then that input times this (floating inputs).
SECOND_ROW = 0.5


def _unsupported(e: Exception) -> Exception:
    """``e`` as :class:`Unsupported` where it is :data:`AROUND_UNSUPPORTED`'s, else itself."""
    if AROUND_UNSUPPORTED.search(str(e)):
        return Unsupported(str(e).strip().splitlines()[0])
    return e


def _grad_and_value(fn: Callable[[list[torch.Tensor]], Any], inputs: Sequence[torch.Tensor], diff: Sequence[int]) -> Any:
    """``torch.func.grad_and_value`` of the loss of ``fn`` w.r.t. the inputs at ``diff``:
    ``(gradients, (loss, outputs))``."""

    def of(*chosen: torch.Tensor) -> tuple[torch.Tensor, Any]:
        tensors = list(inputs)
        for pos, t in zip(diff, chosen):
            tensors[pos] = t
        out = fn(tensors)
        return loss(out), out

    return torch.func.grad_and_value(of, argnums=tuple(range(len(diff))), has_aux=True)(*(inputs[i] for i in diff))


class FuncAround(Single):
    """``torch.func.grad`` (0) or ``vmap`` (1) of the function called."""

    def __init__(self, index: int) -> None:
        self.index = index

    def call(self, fn: Callable[[list[torch.Tensor]], Any], inputs: list[torch.Tensor]) -> Called:
        try:
            if self.index == 0:
                diff = [i for i, t in enumerate(inputs) if t.requires_grad]
                grads, (_, out) = _grad_and_value(fn, inputs, diff)
                return Called(out, out, state=tuple(grads))
            out = torch.func.vmap(fn)(inputs)
        except Exception as e:
            raise _unsupported(e) from e
        return Called(out, out)

    def gradients(self, called: Called, inputs: list[torch.Tensor]) -> tuple[torch.Tensor | None, ...]:
        if self.index == 0:
            return tuple(called.state)
        return super().gradients(called, inputs)


class FuncInside(Single):
    """A body that applies ``torch.func.grad`` (2) or ``vmap`` (3) to the call: compiled whole."""

    #: a kernel torch.func refuses in eager's body is a limit of eager's transform, not a
    #: precondition compiled code must keep (:data:`~optests._patterns.base.EAGER_LIMITS`)
    eager_limits = FUNC_REFUSES

    def __init__(self, index: int) -> None:
        self.index = index
        #: the positions of the inputs that require grad, as the last call found them (2)
        self.diff: tuple[int, ...] = ()

    def body(self, fn: Callable[[list[torch.Tensor]], Any]) -> Callable[[list[torch.Tensor]], Any]:
        if self.index == 3:
            return lambda tensors: torch.func.vmap(fn)(list(tensors))

        def grad_inside(tensors: Sequence[torch.Tensor]) -> Any:
            grads, (_, out) = _grad_and_value(fn, list(tensors), self.diff)
            return out, tuple(grads)

        return grad_inside

    def call(self, fn: Callable[[list[torch.Tensor]], Any], inputs: list[torch.Tensor]) -> Called:
        if self.index == 3:
            return super().call(fn, inputs)
        # the gradients are outputs: the inputs go in detached (same storage), so the compiled
        # function is an inference graph around torch.func.grad
        self.diff = tuple(i for i, t in enumerate(inputs) if t.requires_grad)
        out = fn([t.detach() for t in inputs])
        return Called(out, out)


def pattern(index: int) -> FuncAround | FuncInside:
    """The pattern that checks ``func-INDEX``."""
    return FuncAround(index) if index < 2 else FuncInside(index)


def _batched(sample: Sample) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """Every tensor input stacked with a second row along a new leading dim (None where some
    tensor of the call is not one the transforms work on: it would go unbatched)."""
    inputs = {id(sample.tensor(pos)) for pos in sample.inputs}
    if not inputs or any(isinstance(leaf, torch.Tensor) and id(leaf) not in inputs for leaf in sample.leaves):
        return None
    replace: dict[int, torch.Tensor] = {}
    for pos in sample.inputs:
        t = sample.tensor(pos)
        with torch.no_grad():
            plain = t.detach()
            second = plain * SECOND_ROW if (plain.is_floating_point() or plain.is_complex()) else plain
            stacked = torch.stack([plain, second])
        replace[pos] = stacked.requires_grad_(t.requires_grad)
    return sample.build(replace)


def _derive(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    if not differentiable(sample):
        return {}
    made = {0: Made(sample.build(), FUNCS[0]), 2: Made(sample.build(), FUNCS[2], gradients=False)}
    batched = _batched(sample)
    if batched is not None:
        what = f"every tensor input stacked with itself times {SECOND_ROW} (floating) along a new dim 0"
        made[1] = Made(batched, f"{FUNCS[1]}: {what}")
        made[3] = Made(batched, f"{FUNCS[3]}: {what}")
    return made


FUNC = Transform(_derive, pattern=pattern, count=len(FUNCS))
