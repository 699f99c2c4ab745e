"""``rng``: the global random number generator around the call. Each call runs under the same
``torch.manual_seed`` (as every pattern's); the state of the global generator after it
(``torch.get_rng_state()``) must be eager's, or random numbers drawn after it differ. Under
inductor it runs under ``torch._inductor.config.fallback_random=True``: inductor then draws as
eager does, and the values of a call that draws random numbers (an op tagged ``nondeterministic_seeded``) are
compared under it too. Under any other backend that draws otherwise (``Backend.same_random``
false), the state is compared where eager's call draws no random numbers (a compiled call must
not draw them either); where it draws, neither the state nor the values are compared, only the
metadata (shape, dtype) of what it returns. Where eager's call draws and leaves the generator as
the seed made it (Python around the op seeds and restores it, as OpInfo's ``wrapper_set_seed``
does), the state is not compared, and a note says so: a trace runs that Python once. Every sample
derives one, with or without autograd."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..patterns import Called, Made, Observed, Sample, Transform
from .derived import same
from .single import Single

#: What is compared beside the outputs.
RNG_STATE = "torch.get_rng_state() after the call"


class Rng(Single):
    """One call under ``fallback_random``; the global generator's state after it observed."""

    def __init__(self, index: int = 0) -> None:
        #: Call under ``fallback_random=True``: the check sets it where the backend is inductor
        #: (under another backend inductor's config is no business of the call: AOTAutograd's
        #: decompositions read it too, and would trace otherwise than eager runs).
        self.fallback_random = False

    def call(self, fn: Callable[[list[torch.Tensor]], Any], inputs: list[torch.Tensor]) -> Called:
        if not self.fallback_random:
            called = super().call(fn, inputs)
        else:
            from torch._inductor import config

            with config.patch(fallback_random=True):
                called = super().call(fn, inputs)
        called.fallback_random = self.fallback_random
        called.observed.append(Observed(RNG_STATE, torch.get_rng_state(), random_state=True))
        return called


def _derive(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    if not sample.inputs:
        return {}
    return {0: same(sample, "the global RNG state after the call compared (under inductor, fallback_random=True)")}


RNG = Transform(_derive, unindexed=True, pattern=Rng)
