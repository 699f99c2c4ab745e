"""``inplace-between``: every input that requires grad changed in place (``add_(1)`` under
``no_grad``) between the forward and the backward, as an optimizer step or a buffer update
between them does. Where eager's saved-tensor version check refuses the backward ("modified by
an inplace operation"), the compiled backward must refuse too, not silently compute with the new
values (a finding at ``backward``; both refusing: not applicable); a compiled backward that goes
through with the gradients of the values before the change (it saved an output or a copy, not
the input) is not applicable too. Where eager accepts, the gradients are compared; a compiled
backward whose version check refuses there (it saved the input itself where eager saved what it
computed from it) is loud and uses no stale value: not applicable, saying
so. A sample with
an empty input that requires grad derives nothing: no value changes, and a compiled backward
that does not refuse uses no stale value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..patterns import Called, Made, Sample, Transform
from .derived import differentiable, same
from .single import Single

#: What is done to each input that requires grad between the forward and the backward.
CHANGE = "add_(1)"


class InplaceBetween(Single):
    """One call; its inputs changed in place; then the backward."""

    #: The call without the change (:data:`~optests._patterns.base.UNCHANGED`): where eager refuses
    #: the backward and the compiled one goes through, its gradients must be eager's of this (it
    #: saved what it needs, not the new values).
    unchanged = Single()

    def __init__(self, index: int = 0) -> None:
        pass

    def call(self, fn: Callable[[list[torch.Tensor]], Any], inputs: list[torch.Tensor]) -> Called:
        called = super().call(fn, inputs)
        with torch.no_grad():
            changed: list[torch.Tensor] = []
            for t in inputs:
                if t.requires_grad and not any(t is u for u in changed):
                    t.add_(1)
                    changed.append(t)
        called.touched = True  # the inputs changed after the call, not by the traced program
        return called


def _derive(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    if not differentiable(sample):
        return {}
    changed = [pos for pos in sample.inputs if sample.tensor(pos).requires_grad]
    if any(sample.tensor(pos).numel() == 0 for pos in changed):  # no value to change: a refusal guards nothing
        return {}
    return {0: same(sample, f"{sample.names_of(changed)} changed in place ({CHANGE}) between the forward and the backward")}


INPLACE_BETWEEN = Transform(_derive, unindexed=True, pattern=InplaceBetween)
