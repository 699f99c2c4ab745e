"""What the call patterns' derivations share: the sample, copied as it is, checked with the
pattern its suffix names; and whether a sample has gradients to take."""

from __future__ import annotations

from typing import Any

from ..patterns import Made, Sample


def differentiable(sample: Sample) -> bool:
    """Whether the sample's gradients are checked: some input requires grad, and its origin does
    not turn gradients off (an OpInfo without autograd)."""
    wanted = sample.origin.check_gradients if sample.origin is not None else "auto"
    return wanted is not False and any(sample.tensor(pos).requires_grad for pos in sample.inputs)


def same(sample: Sample, description: str, **extra: Any) -> Made:
    """The sample as it is (its inputs copied exactly), to be called as its pattern calls it."""
    return Made(sample.build(), description, **extra)
