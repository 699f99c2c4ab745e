"""Test-only OpInfos whose bugs come from the environment, so two real sweeps can differ like two
nights do. ``NIGHTLY_BROKEN="alpha=forward,gamma=metadata"`` breaks alpha at the forward stage and
gamma at metadata; ``beta=samples`` makes beta's samples raise as they are made. Ops not named are
correct. Use with ``--optests-dbs=nightly_ops:ops``."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.testing._internal.common_dtype import _dispatch_dtypes
from torch.testing._internal.opinfo.core import OpInfo, SampleInput


def _broken(name: str) -> str | None:
    """How ``NIGHTLY_BROKEN`` breaks op ``name``, read as the op is called or its samples are
    made, not at import: a sweep run in the tests' own process imports this module once."""
    broken = dict(item.split("=", 1) for item in os.environ.get("NIGHTLY_BROKEN", "").split(",") if item)
    return broken.get(name)


@torch.library.custom_op("optests_nightly::wrong_fake", mutates_args=())
def wrong_fake(x: torch.Tensor) -> torch.Tensor:
    return x.sin()


wrong_fake.register_fake(lambda x: torch.empty_like(x, dtype=torch.float64))


def traced_differently(x: torch.Tensor) -> torch.Tensor:
    return x.cos() if type(x) is not torch.Tensor else x.sin()


def _func(name: str) -> Callable[..., Any]:
    stage = _broken(name)
    if stage == "forward":
        return traced_differently
    if stage == "metadata":
        return torch.ops.optests_nightly.wrong_fake.default
    if stage in (None, "samples"):
        return torch.sin
    raise ValueError(f"NIGHTLY_BROKEN: unknown stage {stage!r} for {name}")


def _op(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    def op(x: torch.Tensor) -> torch.Tensor:
        return _func(name)(x)  # type: ignore[no-any-return]

    op.__name__ = op.__qualname__ = name
    return op


def _samples(op: Any, device: str, dtype: torch.dtype, requires_grad: bool, **kwargs: Any) -> Iterator[SampleInput]:
    if _broken(op.name) == "samples":
        raise RuntimeError("planted: the samples cannot be made")
    for n in (1, 2, 3, 4):
        yield SampleInput(torch.randn(n, device=device, dtype=dtype, requires_grad=requires_grad))


ops = [
    OpInfo(
        name,
        op=_op(name),
        dtypes=_dispatch_dtypes((torch.float32,)),
        sample_inputs_func=_samples,
        supports_autograd=False,
    )
    for name in ("alpha", "beta", "gamma")
]
