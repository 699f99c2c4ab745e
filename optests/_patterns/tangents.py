"""``tangents``: the gradients taken with explicit ``grad_outputs``, the same for eager and
compiled: seeded random values (not the constant +-1 of ``sum().abs()``), in a layout that differs
from the outputs' (transposed, channels_last for 4-D, non-dense for 1-D), or expanded (stride 0);
and (3, derived where an input and an output have 3 or more dims) each such output's tangent with
its last two dims transposed in memory, which a 4-D output's channels_last (1) never is.
Autograd accepts a tangent of any layout, so a backward that fails in eager on one is a finding
at ``backward`` (compiled code restrides tangents, and hides it)."""

from __future__ import annotations

import torch

from ..patterns import Called, Made, Sample, Transform, Unsupported, attempt
from .derived import differentiable, same
from .single import Single, tensors

#: The samples ``tangents`` derives, by index: what each tangent is.
LAYOUTS = (
    "random values",
    "random values in another layout",
    "random values expanded along dim 0",
    "random values with the last two dims transposed",
)

#: The layout of the outputs of 3 or more dims only: derived where the op returns one.
_LAST_TWO = 3

_TANGENT_SEED = 4321


def _tangent(out: torch.Tensor, position: int, layout: int) -> torch.Tensor:
    """A seeded random tangent for ``out`` (its shape, dtype, device) in layout ``layout``."""
    generator = torch.Generator().manual_seed(_TANGENT_SEED + position)
    dtype = out.dtype if (out.is_floating_point() or out.is_complex()) else torch.float32
    shape = tuple(out.shape)
    if layout == 2 and len(shape) >= 1 and shape[0] > 1:
        row = torch.randn((1, *shape[1:]), generator=generator, dtype=torch.float64)
        return row.to(out.device, dtype).expand(shape)
    values = torch.randn(shape, generator=generator, dtype=torch.float64).to(out.device, dtype)
    if layout == _LAST_TWO and len(shape) >= 3:
        return values.transpose(-1, -2).contiguous().transpose(-1, -2)
    if layout != 1 or out.numel() < 2:
        return values
    if len(shape) == 4:
        return values.contiguous(memory_format=torch.channels_last)
    if len(shape) >= 2:
        return values.transpose(-1, -2).contiguous().transpose(-1, -2)
    gapped = torch.zeros((*shape, 2), dtype=dtype, device=out.device)
    gapped[..., 0] = values
    return gapped[..., 0]


class Tangents(Single):
    """One call; ``autograd.grad`` of the outputs that require grad with tangents of one layout."""

    def __init__(self, layout: int) -> None:
        self.layout = layout

    def gradients(self, called: Called, inputs: list[torch.Tensor]) -> tuple[torch.Tensor | None, ...]:
        diff = [t for t in inputs if t.requires_grad]
        outs = [t for t in tensors(called.out) if t.requires_grad]
        if self.layout == _LAST_TWO and not any(t.dim() >= 3 for t in outs):
            raise Unsupported("no output that requires grad has 3 or more dims: no last two dims to transpose")
        if called.tangents is None or len(called.tangents) != len(outs):  # else given: the float64 reference's
            called.tangents = [_tangent(t, i, self.layout) for i, t in enumerate(outs)]
        grads = called.tangents
        made = attempt(
            called,
            f"backward with {LAYOUTS[self.layout]} as grad_outputs",
            lambda: torch.autograd.grad(outs, diff, grads, allow_unused=True),
            backward=True,
            must_succeed=True,
        )
        return tuple(made) if made is not None else (None,) * len(diff)


def _derive(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    if not differentiable(sample):
        return {}
    made = {i: same(sample, f"grad_outputs: {what}") for i, what in enumerate(LAYOUTS)}
    if not (_has_input_of_three_dims(sample) and _has_output_of_three_dims(sample)):
        del made[_LAST_TWO]
    return made


def _has_input_of_three_dims(sample: Sample) -> bool:
    """Where ``tangents-3`` is named (without calling the op): a tensor input of 3 or more dims.
    An op that makes such an output from inputs of fewer dims (``unsqueeze``) is not given it."""
    return any(sample.tensor(pos).dim() >= 3 for pos in sample.inputs)


def _has_output_of_three_dims(sample: Sample) -> bool:
    """Whether the op returns a tensor of 3 or more dims (one eager call, without grad, on copies
    of the inputs); True where that cannot be told (no callable known, or the call raises: the
    check then reports it)."""
    if sample.origin is None:
        return True
    args, kwargs = sample.build()
    try:
        with torch.no_grad():
            out = sample.origin.func(*args, **kwargs)
    except Exception:
        return True
    return any(t.dim() >= 3 for t in tensors(out))


def _indices(sample: Sample) -> list[int]:
    """What it derives, named without calling the op: every layout where the sample has gradients,
    3 only where an input has 3 or more dims (not applicable where no output has)."""
    if not differentiable(sample):
        return []
    return list(range(len(LAYOUTS))) if _has_input_of_three_dims(sample) else [i for i in range(len(LAYOUTS)) if i != _LAST_TWO]


TANGENTS = Transform(_derive, pattern=Tangents, indices=_indices, count=len(LAYOUTS))
