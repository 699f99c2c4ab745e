"""``autocast``: the call under ``torch.autocast(device, dtype)``, bfloat16 on CPU and float16
on CUDA, with the backward outside it, as training loops do. It is judged against eager under
the same autocast: outputs in the lower precision with its tolerances, float32 ones with
float32's; a float32 result that eager computed in the lower precision (its values show that
precision's rounding) may differ from eager's by that rounding, measured against the float64
result (:func:`optests._check._rounding_only`). A compiled result less precise than eager's is a
finding (pytorch/pytorch#153044)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..patterns import Called, Made, Sample, Transform
from .derived import same
from .single import Single


def lower_precision(device: str) -> torch.dtype:
    """The dtype autocast computes in on ``device``."""
    return torch.bfloat16 if device == "cpu" else torch.float16


class Autocast(Single):
    """One call under autocast; the gradients outside it."""

    def __init__(self, index: int) -> None:
        pass

    def call(self, fn: Callable[[list[torch.Tensor]], Any], inputs: list[torch.Tensor]) -> Called:
        device = next((t.device.type for t in inputs), "cpu")
        dtype = lower_precision(device)
        with torch.autocast(device, dtype=dtype):
            called = super().call(fn, inputs)
        called.precision = dtype
        return called


def _derive(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    floating = [sample.tensor(pos) for pos in sample.inputs if sample.tensor(pos).dtype == torch.float32]
    devices = {t.device.type for t in floating}
    if not floating or len(devices) != 1:
        return {}  # autocast lowers float32 only
    device = devices.pop()
    dtype = lower_precision(device)
    description = f"called under torch.autocast({device!r}, dtype={str(dtype).removeprefix('torch.')})"
    return {0: same(sample, description, judged=dtype)}


AUTOCAST = Transform(_derive, unindexed=True, pattern=Autocast)
