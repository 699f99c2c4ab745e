"""``outputs``: after the call, each tensor output is mutated in place (``mul_(2)``), as a user
mutates what a function returned. Outputs and inputs are then compared again: a view of an input
must carry the mutation to the input, as in eager. Where eager refuses (an in-place on a view that
autograd forbids), the compiled output must refuse too; gradients are taken through the
mutated outputs."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.utils._pytree as pytree

from ..patterns import Called, Made, Sample, Transform, attempt
from .derived import same
from .single import Single


class Outputs(Single):
    """One call, then ``mul_(2)`` on each tensor output."""

    def __init__(self, index: int) -> None:
        pass

    def call(self, fn: Callable[[list[torch.Tensor]], Any], inputs: list[torch.Tensor]) -> Called:
        called = super().call(fn, inputs)
        called.touched = True
        for path, leaf in pytree.tree_flatten_with_path(called.out)[0]:
            if isinstance(leaf, torch.Tensor):
                attempt(called, f"out{pytree.keystr(path)}.mul_(2)", functools.partial(torch.Tensor.mul_, leaf, 2))
        return called


def _derive(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    if not sample.inputs:
        return {}
    return {0: same(sample, "each output mutated in place after the call (mul_(2))")}


OUTPUTS = Transform(_derive, unindexed=True, pattern=Outputs)
