"""What the call patterns' derivations share: the sample, copied as it is, checked with the
pattern its suffix names; and whether a sample has gradients to take."""

from __future__ import annotations

from typing import Any

from .._transforms import _Made, _Sample


def differentiable(sample: _Sample) -> bool:
    """Whether the sample's gradients are checked: some input requires grad, and its origin does
    not turn gradients off (an OpInfo without autograd)."""
    wanted = sample.origin.check_gradients if sample.origin is not None else "auto"
    return wanted is not False and any(sample.tensor(pos).requires_grad for pos in sample.inputs)


def same(sample: _Sample, description: str, **extra: Any) -> _Made:
    """The sample as it is (its inputs copied exactly), to be called as its pattern calls it."""
    return _Made(sample.build(), description, **extra)
