"""Test-only OpInfos for fault injection: one sample kills the pytest-xdist worker that runs it
(the parent of the runner's child), the rest are fine. Use with
``--optests-dbs=worker_killer_ops:ops -n 2`` (this folder on PYTHONPATH); never without ``-n``,
where the process it kills is pytest itself."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any

import torch
from torch.testing._internal.common_dtype import _dispatch_dtypes
from torch.testing._internal.opinfo.core import OpInfo, SampleInput


@torch.library.custom_op("optests_killer::kill_worker_on_five", mutates_args=())
def kill_worker_on_five(x: torch.Tensor) -> torch.Tensor:
    if x.shape[0] == 5 and type(x) is torch.Tensor:
        os.kill(os.getppid(), signal.SIGKILL)
    return x * 2


kill_worker_on_five.register_fake(lambda x: torch.empty_like(x))


def _samples(op: Any, device: str, dtype: torch.dtype, requires_grad: bool, **kwargs: Any) -> Iterator[SampleInput]:
    for n in range(1, 9):
        yield SampleInput(torch.randn(n, device=device, dtype=dtype, requires_grad=requires_grad))


ops = [
    OpInfo(
        "kills_worker",
        op=torch.ops.optests_killer.kill_worker_on_five.default,
        dtypes=_dispatch_dtypes((torch.float32,)),
        sample_inputs_func=_samples,
        supports_autograd=False,
    ),
    OpInfo("fine", op=torch.sin, dtypes=_dispatch_dtypes((torch.float32,)), sample_inputs_func=_samples, supports_autograd=False),
]
