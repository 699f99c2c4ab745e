"""Test-only OpInfos for the sweep's acceptance tests: one op that kills its process, one that
hangs, one that is fine. Use with ``--optests-dbs=crashy_ops:ops`` (this folder on PYTHONPATH)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import torch
from torch.testing._internal.common_dtype import _dispatch_dtypes
from torch.testing._internal.opinfo.core import OpInfo, SampleInput


@torch.library.custom_op("optests_crashy::abort", mutates_args=())
def abort(x: torch.Tensor) -> torch.Tensor:
    os.abort()


@torch.library.custom_op("optests_crashy::hang", mutates_args=())
def hang(x: torch.Tensor) -> torch.Tensor:
    while True:
        time.sleep(3600)


@torch.library.custom_op("optests_crashy::fine", mutates_args=())
def fine(x: torch.Tensor) -> torch.Tensor:
    return x * 2


for _op in (abort, hang, fine):
    _op.register_fake(lambda x: torch.empty_like(x))


def _samples(op: Any, device: str, dtype: torch.dtype, requires_grad: bool, **kwargs: Any) -> Iterator[SampleInput]:
    for n in (2, 3):
        yield SampleInput(torch.randn(n, device=device, dtype=dtype, requires_grad=requires_grad))


ops = [
    OpInfo(name, op=op, dtypes=_dispatch_dtypes((torch.float32,)), sample_inputs_func=_samples, supports_autograd=False)
    for name, op in (
        ("crashy_abort", torch.ops.optests_crashy.abort.default),
        ("crashy_hang", torch.ops.optests_crashy.hang.default),
        ("crashy_fine", torch.ops.optests_crashy.fine.default),
    )
]
