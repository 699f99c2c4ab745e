"""Failures grouped by cause (torch-free): what ``optests check``, the sweep's summary, ``judge``,
``diff`` and ``report`` print one block of, where they used to print one line per sample.

A :class:`Group` is the records that share a verdict and a cause (:mod:`optests._causes`): the
count, what they span (ops, modes, dtypes, transform and pattern families, backends), and a
representative, the sample with the fewest input elements where the caller knows them (``sizes``),
else the first by id. Groups come largest first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from . import _causes
from ._findings import Verdict
from ._key import DEFAULT_BACKEND, MODES, transform_name
from ._results import SampleResult

#: How many values of one kind (ops, sample ids) a block names before it counts the rest.
SHOWN = 5

#: How a block heads the records of a verdict other than an unexpected failure.
_VERDICT_WORDS = {
    Verdict.UNEXPECTED_FAILURE: "",
    Verdict.STAGE_CHANGED: "failed at another stage than expected: ",
    Verdict.UNEXPECTED_PASS: "passed, but expected to fail",
}


@dataclass(frozen=True)
class Group:
    """The records of one verdict (None: not judged) and one cause, and who stands for them."""

    verdict: Verdict | None
    #: A known PyTorch bug's name or a signature; "" for records that did not fail (an unexpected pass).
    cause: str
    records: tuple[SampleResult, ...]
    #: The record with the fewest input elements (where known), else the first by id.
    representative: SampleResult

    @property
    def count(self) -> int:
        return len(self.records)

    @property
    def title(self) -> str:
        """The cause as output names it (``known PyTorch bug: NAME (...)`` or the signature), after
        the verdict where that is not an unexpected failure."""
        words = _VERDICT_WORDS.get(self.verdict, "") if self.verdict is not None else ""
        return f"{words}{_causes.said(self.cause)}" if self.cause else words.rstrip(": ") or "passed"

    @property
    def known(self) -> bool:
        return _causes.by_name(self.cause) is not None

    def spans(self) -> dict[str, list[str]]:
        """What the records span, each kind sorted: ops, modes, dtypes, transforms (the family, or
        ``call`` for the samples as made) and backends."""

        def values(of: Callable[[SampleResult], str]) -> list[str]:
            return sorted({of(r) for r in self.records})

        return {
            "ops": values(lambda r: r.op_id),
            "modes": sorted({str(r.mode) for r in self.records}, key=lambda m: MODES.index(m) if m in MODES else len(MODES)),
            "dtypes": values(lambda r: r.dtype),
            "transforms": values(lambda r: transform_name(r.transform) or "call"),
            "backends": values(lambda r: r.key.backend or DEFAULT_BACKEND),
        }

    def spans_line(self) -> str:
        """``ops sin, cos; modes static; dtypes float32; transforms call, transposed; backends aot_eager``."""
        return "; ".join(f"{kind} {listed(values)}" for kind, values in self.spans().items())


def listed(values: Sequence[str], shown: int = SHOWN) -> str:
    """``a, b, c`` or ``a, b, c, d, e and 7 more``."""
    head = ", ".join(values[:shown])
    return f"{head} and {len(values) - shown} more" if len(values) > shown else head


def group(
    records: Iterable[SampleResult],
    sizes: Mapping[str, int] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    by_verdict: bool = True,
) -> list[Group]:
    """``records`` by verdict (unless not ``by_verdict``) and cause, largest group first (then by
    cause). ``sizes``: each record's input elements by id, where known (the representative is the
    smallest); ``env``: the environment of the run, for records that carry no cause
    (:func:`optests._causes.of`)."""
    by: dict[tuple[Verdict | None, str], list[SampleResult]] = {}
    for r in records:
        by.setdefault((r.verdict if by_verdict else None, _causes.of(r, env)), []).append(r)
    known = sizes or {}
    unknown = 1 << 62

    def smallest(rs: list[SampleResult]) -> SampleResult:  # ties: the first given (the order checked)
        return min(rs, key=lambda r: known.get(r.id, unknown))

    groups = [Group(v, c, tuple(sorted(rs, key=_natural)), smallest(rs)) for (v, c), rs in by.items()]
    return sorted(groups, key=lambda g: (-g.count, g.verdict.value if g.verdict else "", g.cause))


def _natural(r: SampleResult) -> tuple[object, ...]:
    """Records in a readable order: by op, mode, dtype, device, then sample 2 before sample 10."""
    k = r.key
    return (k.op_id, MODES.index(k.mode) if k.mode in MODES else len(MODES), k.dtype, k.device, k.sample is not None,
            k.sample or 0, k.transform, k.backend, r.id)  # fmt: skip


def headline(groups: Sequence[Group], what: str = "not expected") -> str:
    """``482 samples not expected, 1 cause:``."""
    samples = sum(g.count for g in groups)
    causes = len(groups)
    return f"{samples} sample{'s' if samples != 1 else ''} {what}, {causes} cause{'s' if causes != 1 else ''}:"


def block_head(index: int, g: Group, sizes: Mapping[str, int] | None = None) -> list[str]:
    """A block's first lines: its number, count and cause; what it spans; its representative."""
    size = (sizes or {}).get(g.representative.id)
    elements = f" ({size} input element{'s' if size != 1 else ''})" if size is not None else ""
    return [
        f"{index}. {g.count} sample{'s' if g.count != 1 else ''}: {g.title}",
        f"   {g.spans_line()}",
        f"   smallest: {g.representative.id}{elements}",
    ]
