"""Test-only OpInfos for ``tests/test_one_pipeline.py``, each one showing a place where the entry
points (the sweep, ``optests check``, ``check_op``, ``op_test``) once disagreed. Use with
``--optests-dbs=pipeline_ops:ops`` (this folder on PYTHONPATH), or pass the OpInfo itself.

- ``skipped_at_float32``: the OpInfo's decorations skip its in-tree test at float32 only, so a
  sample ``dtypes`` casts to float64 is checked (the decorations are read at the judged dtype);
- ``broken_samples``: its ``sample_inputs`` raises;
- ``float64_only``: supports float64 alone, so a float32 run has nothing to check;
- ``marking``: appends a line to the file ``$OPTESTS_PIPELINE_MARKER`` names each time it is called.
"""

from __future__ import annotations

import os
import unittest
from collections.abc import Iterator
from typing import Any

import torch
from torch.testing._internal.common_dtype import _dispatch_dtypes
from torch.testing._internal.opinfo.core import DecorateInfo, OpInfo, SampleInput

#: The environment variable naming the file ``marking`` appends to.
MARKER = "OPTESTS_PIPELINE_MARKER"


def _samples(op: Any, device: str, dtype: torch.dtype, requires_grad: bool, **kwargs: Any) -> Iterator[SampleInput]:
    yield SampleInput(torch.linspace(0.1, 0.9, 6, device=device, dtype=dtype).reshape(2, 3).requires_grad_(requires_grad))


def _broken(op: Any, device: str, dtype: torch.dtype, requires_grad: bool, **kwargs: Any) -> Iterator[SampleInput]:
    raise ValueError("no samples today")


def marking(x: torch.Tensor) -> torch.Tensor:
    """``sin``, noting the call (and the process that made it) in ``$OPTESTS_PIPELINE_MARKER``."""
    path = os.environ.get(MARKER)
    if path:
        with open(path, "a") as f:
            f.write(f"{os.getpid()}\n")
    return torch.sin(x)


_FLOAT32 = _dispatch_dtypes((torch.float32,))

ops = [
    OpInfo(
        "skipped_at_float32",
        op=torch.sin,
        dtypes=_dispatch_dtypes((torch.float32, torch.float64)),
        sample_inputs_func=_samples,
        supports_autograd=False,
        decorators=(DecorateInfo(unittest.skip("flaky at float32 only"), "TestEagerFusionOpInfo", dtypes=(torch.float32,)),),
    ),
    OpInfo("broken_samples", op=torch.sin, dtypes=_FLOAT32, sample_inputs_func=_broken, supports_autograd=False),
    OpInfo(
        "float64_only",
        op=torch.sin,
        dtypes=_dispatch_dtypes((torch.float64,)),
        sample_inputs_func=_samples,
        supports_autograd=False,
    ),
    OpInfo("marking", op=marking, dtypes=_FLOAT32, sample_inputs_func=_samples, supports_autograd=False),
]
