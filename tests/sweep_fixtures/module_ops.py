"""Test-only modules as ModuleInfos, with planted bugs and a correct twin, for module_db's tests.
Use with ``--optests-dbs=module_ops:modules`` (this folder on PYTHONPATH), or ``check_op(INFO)``.

- ``RunningMean`` keeps a running mean of its inputs in a buffer, but skips the update where it
  cannot read data (a traced tensor): under compile the statistics silently stop updating. Its
  train op is a ``mutation`` finding (the buffer is an input of the compiled call); in eval mode
  it updates nothing, and passes.
- ``NumpyScale`` scales by a weight through an ``autograd.Function`` whose backward goes through
  numpy for the weight's gradient: fine eagerly, it cannot be traced, so the compiled backward
  fails: a ``backward`` finding, through the gradient of a parameter.
- ``DoubledUpdate`` updates its buffer under compile too, but by another step: a ``mutation``
  finding on the buffer's values (its output does not read the buffer).
- ``TrackedMean`` updates its buffer the same way eager and compiled: it passes in both modes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.testing._internal.common_modules import FunctionInput, ModuleInfo, ModuleInput


class RunningMean(torch.nn.Module):
    mean: torch.Tensor

    def __init__(self, n: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, n))
        self.register_buffer("mean", torch.zeros(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training and type(x) is torch.Tensor:  # "only real data updates the statistics"
            self.mean.mul_(0.9).add_(x.detach().mean(0), alpha=0.1)
        return (x - self.mean) * self.weight


class TrackedMean(RunningMean):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            self.mean.mul_(0.9).add_(x.detach().mean(0), alpha=0.1)
        return (x - self.mean) * self.weight


class DoubledUpdate(RunningMean):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        step = 0.1 if type(x) is torch.Tensor else 0.2  # a "tuned" step that only tracing sees
        if self.training:
            self.mean.mul_(0.9).add_(x.detach().mean(0), alpha=step)
        return x * self.weight


class _NumpyScale(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        return x * weight

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, weight = ctx.saved_tensors
        grad_weight = torch.from_numpy(np.asarray((grad * x).sum(0).numpy()))
        return grad * weight, grad_weight


class NumpyScale(torch.nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _NumpyScale.apply(x, self.weight)  # type: ignore[no-untyped-call,no-any-return]


def _inputs(
    module_info: Any, device: str, dtype: torch.dtype, requires_grad: bool, training: bool, **kwargs: Any
) -> list[ModuleInput]:
    def make(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device=device, dtype=dtype, requires_grad=requires_grad)

    return [
        ModuleInput(FunctionInput(4), forward_input=FunctionInput(make(3, 4))),
        ModuleInput(FunctionInput(2), forward_input=FunctionInput(x=make(5, 2))),
    ]


RUNNING_MEAN = ModuleInfo(RunningMean, module_inputs_func=_inputs, train_and_eval_differ=True)
NUMPY_SCALE = ModuleInfo(NumpyScale, module_inputs_func=_inputs, dtypes=(torch.float32,))
TRACKED_MEAN = ModuleInfo(TrackedMean, module_inputs_func=_inputs, train_and_eval_differ=True)
DOUBLED_UPDATE = ModuleInfo(DoubledUpdate, module_inputs_func=_inputs, dtypes=(torch.float32,))

modules = [RUNNING_MEAN, NUMPY_SCALE, TRACKED_MEAN, DOUBLED_UPDATE]
