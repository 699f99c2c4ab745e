"""``hooks``: tensor hooks around the call, one derived sample each. Every input that requires
grad gets a ``register_hook`` that records the gradients it is called with; every output that
requires grad a ``retain_grad()`` and a recording hook. The backward is ``.backward(inputs=...)``
of :func:`~optests._patterns.single.linear_loss` (so ``retain_grad`` fills ``.grad``, and the
outputs' gradients do not hang on the sign of a sum that rounds either way); the gradients
compared are the inputs' ``.grad``, and each hook's calls (their count and the gradients they
saw) and each retained ``.grad`` are compared too (:attr:`~optests._patterns.Called.observed`).
0: the hooks only record; 1: each output's hook also returns its gradient doubled, which
autograd must then use (the inputs' gradients double)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..patterns import Called, Made, Observed, Sample, Transform
from .derived import differentiable, same
from .single import Single, linear_loss, tensors

#: The derived samples, by index.
HOOKS = (
    "register_hook (recording) on inputs and outputs, retain_grad on outputs",
    "register_hook on inputs, and on outputs a hook that returns the gradient doubled; retain_grad on outputs",
)


class Hooks(Single):
    """Hooks on the inputs and outputs of one call."""

    def __init__(self, index: int) -> None:
        self.index = index

    def call(self, fn: Callable[[list[torch.Tensor]], Any], inputs: list[torch.Tensor]) -> Called:
        seen: dict[str, list[torch.Tensor | None]] = {}

        def recorder(name: str, factor: float | None = None) -> Callable[[torch.Tensor], torch.Tensor | None]:
            seen[name] = []

            def hook(grad: torch.Tensor | None) -> torch.Tensor | None:
                # autograd hands a hook None for a gradient that is undefined (a compiled backward
                # may leave one undefined where eager's is zeros): recorded as it came
                seen[name].append(grad.detach().clone() if grad is not None else None)
                return grad * factor if factor is not None and grad is not None else None

            return hook

        for i, t in enumerate(inputs):
            if t.requires_grad and f"input {i}" not in seen and not any(t is u for u in inputs[:i]):
                t.register_hook(recorder(f"input {i}"))  # type: ignore[no-untyped-call]
        out = fn(inputs)
        outs = [t for t in tensors(out) if t.requires_grad]
        for i, t in enumerate(outs):
            if any(t is u for u in outs[:i]) or any(t is u for u in inputs):
                continue  # one tensor, hooked once (an output that is an input is hooked as an input)
            t.retain_grad()
            t.register_hook(recorder(f"output {i}", 2.0 if self.index == 1 else None))  # type: ignore[no-untyped-call]
        return Called(out, out, state=(seen, outs))

    def gradients(self, called: Called, inputs: list[torch.Tensor]) -> tuple[torch.Tensor | None, ...]:
        seen, outs = called.state
        diff = [t for t in inputs if t.requires_grad]
        unique = [t for i, t in enumerate(diff) if not any(t is u for u in diff[:i])]
        linear_loss(called.out).backward(inputs=unique)  # type: ignore[no-untyped-call]
        for name, grads in seen.items():
            called.observed.append(Observed(f"calls of the gradient hook on {name}", len(grads), backward=True))
            for n, g in enumerate(grads):
                called.observed.append(Observed(f"gradient the hook on {name} saw (call {n})", g, backward=True))
        for i, t in enumerate(outs):
            if t.retains_grad:
                called.observed.append(Observed(f"output {i}.grad (retain_grad)", t.grad, backward=True))
        return tuple(t.grad for t in diff)


def _derive(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    if not differentiable(sample):
        return {}
    return {i: same(sample, what) for i, what in enumerate(HOOKS)}


HOOKS_PATTERN = Transform(_derive, pattern=Hooks, count=len(HOOKS))
