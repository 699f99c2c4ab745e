"""Test-only OpInfos with deterministic findings, for the registry's acceptance tests.
Use with ``--optests-dbs=buggy_ops:ops`` (this folder on PYTHONPATH)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch.testing._internal.common_dtype import _dispatch_dtypes
from torch.testing._internal.opinfo.core import OpInfo, SampleInput


@torch.library.custom_op("optests_buggy::wrong_fake", mutates_args=())
def wrong_fake(x: torch.Tensor) -> torch.Tensor:
    return x * 2


wrong_fake.register_fake(lambda x: torch.empty_like(x, dtype=torch.float64))  # every sample: metadata


def traced_differently_when_long(x: torch.Tensor) -> torch.Tensor:
    """Wrong under tracing only for inputs of 3 or more elements (so only some samples fail)."""
    if type(x) is not torch.Tensor and x.shape[0] >= 3:
        return x.cos()
    return x.sin()


def _samples(op: Any, device: str, dtype: torch.dtype, requires_grad: bool, **kwargs: Any) -> Iterator[SampleInput]:
    for n in (1, 2, 3, 4):
        yield SampleInput(torch.randn(n, device=device, dtype=dtype, requires_grad=requires_grad))


ops = [
    OpInfo(
        "buggy_fake",
        op=torch.ops.optests_buggy.wrong_fake.default,
        dtypes=_dispatch_dtypes((torch.float32,)),
        sample_inputs_func=_samples,
        supports_autograd=False,
    ),
    OpInfo(
        "buggy_long",
        op=traced_differently_when_long,
        dtypes=_dispatch_dtypes((torch.float32,)),
        sample_inputs_func=_samples,
        supports_autograd=False,
    ),
    OpInfo("good", op=torch.sin, dtypes=_dispatch_dtypes((torch.float32,)), sample_inputs_func=_samples, supports_autograd=False),
]
