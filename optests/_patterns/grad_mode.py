"""``grad-mode``: the call under ``torch.no_grad()`` (index 0) and ``torch.inference_mode()``
(index 1), with the sample's inputs as given (some requiring grad). The compiled function traces
on its first call, which happens under the mode, as a user's first call does. Outputs, their
``requires_grad``, their view relationships and input mutations are compared; no gradients."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch

from ..patterns import Called, Made, Sample, Transform
from .derived import same
from .single import Single

#: The modes, by index.
GRAD_MODES: tuple[tuple[str, Callable[[], contextlib.AbstractContextManager[Any]]], ...] = (
    ("torch.no_grad()", torch.no_grad),
    ("torch.inference_mode()", torch.inference_mode),
)


class GradMode(Single):
    """One call under a grad mode."""

    def __init__(self, index: int) -> None:
        self.mode = GRAD_MODES[index][1]

    def call(self, fn: Callable[[list[torch.Tensor]], Any], inputs: list[torch.Tensor]) -> Called:
        with self.mode():
            return super().call(fn, inputs)


def _derive(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    if not any(sample.tensor(pos).requires_grad for pos in sample.inputs):
        return {}  # without an input that requires grad, the mode changes nothing
    return {i: same(sample, f"called under {name}", gradients=False) for i, (name, _) in enumerate(GRAD_MODES)}


GRAD_MODE = Transform(_derive, pattern=GradMode, count=len(GRAD_MODES))
