"""``special``: the sample's values replaced by special ones, one kind a derived sample, judged as
eager is. By index: 0, NaN; 1, +-infinity; 2, signed zeros (-0.0 and 0.0); 3, subnormals of the
dtype; 4, values just below and above integers and half-integers, exact halves, and decimals
(1.0 / 0.1 is a quotient just below 10): floor, round, division and casts; 5, the dtype's extremes
(+-max and +-the smallest normal; an integer dtype's min and max: integer arithmetic overflows);
6 to 8, an index out of range (the last element of each integer input set past every size of the
sample's tensors), -1 (a negative index), and a negative index out of range.

Floating kinds (0 to 4) write every other element of each floating input (in row-major order,
starting at the first element for the first input, the second for the second, and so on: where
one operand is special, the other is not), cycling through the kind's values, except 4, which
moves every element to its own rounding edge; the other elements keep the sample's values. 5 does
the same to floating and integer inputs. Integer inputs (any not ``bool``) are taken as indices:
an op's positional arguments have no names to read everywhere (builtins, lambdas), and an
out-of-range value in an integer argument that is no index is a special value all the same, judged
as eager is. Complex and ``bool`` inputs are kept, as are inputs whose elements overlap in memory
(expanded).

Judged as eager is: outputs must hold NaN exactly where eager's do and zeros of eager's sign;
values elsewhere and mutated inputs compare as usual, with NaN equal to NaN. Where eager raises
(an index out of range), the compiled call must raise too: one that returns is a finding at
``forward``, one that raises too leaves the sample not applicable. Gradients are not checked (the
inputs keep ``requires_grad``, so the forward is the training graph's): special values sit where
derivatives are conventions (a kink at 0 or at an integer, ``0 * inf``), and two correct
formulas of one function differ there (``clamp``'s gradient at its bound is 1, ``minimum``'s
0.5), so a difference says nothing of the compiled code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.utils._pytree as pytree

from ..patterns import Called, Made, Sample, Transform
from .single import Single

#: What each derived sample holds, by index.
KINDS = (
    "NaN",
    "+-infinity",
    "signed zeros",
    "subnormals",
    "values just below and above integers",
    "the dtype's extremes",
    "an index out of range",
    "a negative index",
    "a negative index out of range",
)

_FLOATING_KINDS = range(5)
_EXTREMES = 5
_INDEX_KINDS = range(6, 9)


def _is_float(t: torch.Tensor) -> bool:
    return t.is_floating_point()


def _is_integer(t: torch.Tensor) -> bool:
    return not (t.is_floating_point() or t.is_complex() or t.dtype == torch.bool)


def _overlaps(t: torch.Tensor) -> bool:
    return bool(torch._debug_has_internal_overlap(t) == 1)


def _float_values(kind: int, dtype: torch.dtype) -> list[float]:
    """The values a floating kind cycles through."""
    info = torch.finfo(dtype)
    subnormal = info.tiny * info.eps  # the smallest subnormal of a binary IEEE format
    return {
        0: [float("nan")],
        1: [float("inf"), float("-inf")],
        2: [-0.0, 0.0],
        3: [subnormal, -subnormal, info.tiny / 2, -info.tiny / 4],
        _EXTREMES: [info.max, info.min, info.tiny, -info.tiny],
    }[kind]


def _every_other(values: torch.Tensor, ordinal: int, cycle: Sequence[float | int]) -> torch.Tensor:
    """``values`` (contiguous) with every other element, from element ``ordinal % 2``, replaced by
    ``cycle``'s values in turn."""
    flat = values.reshape(-1).clone()
    picked = torch.arange(ordinal % 2, flat.numel(), 2)
    table = torch.tensor(cycle, dtype=torch.float64 if flat.is_floating_point() else torch.int64)
    flat[picked] = table[torch.arange(picked.numel()) % len(cycle)].to(flat.dtype)
    return flat.view(values.shape)


def _rounding_edges(values: torch.Tensor, ordinal: int) -> torch.Tensor:
    """Each element moved to a rounding edge near it, by its position (and the input's ordinal, so
    that two operands of one position differ): just below, just above an integer; an exact half;
    just below a half; an exact integer; the nearest tenth (not exact in binary). The integer is
    the nearest one other than 0."""
    wide = values.to(torch.float64).reshape(-1)
    n = wide.clamp(-1e6, 1e6).round()
    n = torch.where(n == 0, torch.where(wide < 0, -1.0, 1.0), n)  # next to 0 are subnormals (kind 3's)
    dtype = values.dtype
    down = torch.full_like(n, float("-inf"))
    up = torch.full_like(n, float("inf"))

    def next_to(v: torch.Tensor, towards: torch.Tensor) -> torch.Tensor:
        return torch.nextafter(v.to(dtype), towards.to(dtype)).to(torch.float64)

    edges = torch.stack(
        [next_to(n, down), next_to(n, up), n + 0.5, next_to(n + 0.5, down), n, (wide.clamp(-1e5, 1e5) * 10).round() / 10]
    )
    which = (torch.arange(wide.numel()) + ordinal) % edges.shape[0]
    return edges.gather(0, which.unsqueeze(0)).squeeze(0).to(dtype).view(values.shape)


def _bound(sample: Sample, integers: list[torch.Tensor]) -> int:
    """An index past every size of the sample's tensors and every value of its integer inputs."""
    sizes = [s for pos in sample.inputs for s in sample.tensor(pos).shape]
    values = [int(t.max()) for t in integers if t.numel()]
    return max([1, *sizes, *(v + 1 for v in values)])


def _derive(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    """Special values in the inputs, one kind a sample: 0, NaN; 1, +-infinity; 2, signed zeros;
    3, subnormals; 4, values just below and above integers and half-integers (floor, round,
    division, casts); 5, the dtype's extremes (integer overflow too); 6 to 8, an index out of range,
    -1, and a negative index out of range, as the last element of each integer input. Floating
    kinds fill every other element of each floating input (the next input shifted by one).
    Judged as eager is: NaN where eager has NaN, zeros of eager's sign, and where eager raises
    the compiled call must raise (else a ``forward`` finding; not applicable where both raise);
    gradients are not checked (special values sit where derivatives are conventions)."""
    made: dict[int, Made] = {}
    index_values: dict[int, int] = {}
    floats = [pos for pos in sample.inputs if _is_float(sample.tensor(pos)) and sample.tensor(pos).numel()]
    integers = [pos for pos in sample.inputs if _is_integer(sample.tensor(pos)) and sample.tensor(pos).numel()]
    floats = [pos for pos in floats if not _overlaps(sample.tensor(pos))]
    integers = [pos for pos in integers if not _overlaps(sample.tensor(pos))]

    def rewrite(kind: int, chosen: list[int], new: Callable[[torch.Tensor, int], torch.Tensor | None], where: str) -> None:
        args, kwargs = sample.build()
        leaves = pytree.tree_leaves((args, kwargs))
        changed = []
        for ordinal, pos in enumerate(chosen):
            t = leaves[pos]
            with torch.no_grad():
                values = new(t.detach().contiguous(), ordinal)
                if values is None:
                    continue
                t.copy_(values)
            changed.append(pos)
        if changed:
            what = f"{index_values[kind]} ({KINDS[kind]})" if kind in index_values else KINDS[kind]
            made[kind] = Made((args, kwargs), f"{what} {where} {sample.names_of(changed)}", gradients=False)

    for kind in _FLOATING_KINDS:
        if kind == 4:
            rewrite(kind, floats, _rounding_edges, "in")
            continue

        def cycled(v: torch.Tensor, ordinal: int, kind: int = kind) -> torch.Tensor:
            return _every_other(v, ordinal, _float_values(kind, v.dtype))

        rewrite(kind, floats, cycled, "in every other element of")

    def extremes(v: torch.Tensor, ordinal: int) -> torch.Tensor:
        if v.is_floating_point():
            return _every_other(v, ordinal, _float_values(_EXTREMES, v.dtype))
        info = torch.iinfo(v.dtype)
        return _every_other(v, ordinal, [info.max, info.min])

    rewrite(_EXTREMES, floats + integers, extremes, "in every other element of")
    if integers:
        bound = _bound(sample, [sample.tensor(pos) for pos in integers])
        for kind, value in zip(_INDEX_KINDS, (bound, -1, -bound - 1)):
            index_values[kind] = value

            def last(v: torch.Tensor, ordinal: int, value: int = value) -> torch.Tensor | None:
                info = torch.iinfo(v.dtype)
                if not info.min <= value <= info.max:
                    return None  # a uint8 cannot be negative; an int8 cannot hold the bound
                out = v.reshape(-1).clone()
                out[-1] = value
                return out.view(v.shape)

            rewrite(kind, integers, last, "as the last element of")
    return made


class Special(Single):
    """One call, judged with NaN equal to NaN and the sign of zeros compared
    (:attr:`Called.specials`)."""

    def __init__(self, index: int) -> None:
        self.index = index

    def call(self, fn: Callable[[list[torch.Tensor]], Any], inputs: list[torch.Tensor]) -> Called:
        out = fn(inputs)
        return Called(out, out, specials=True)


SPECIAL = Transform(_derive, pattern=Special, count=len(KINDS))
