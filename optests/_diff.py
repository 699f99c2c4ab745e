"""What changed between two runs, sample by sample (``optests diff``, the dashboard). Torch-free.

Samples are matched by their id (mode, dtype, device, op, sample index, transform). A sample counts as
failing when its outcome is ``failed``; registry skips and not-applicable records are neither.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from ._causes import said
from ._findings import Outcome, Stage
from ._grouped import Group, group, listed
from ._results import SampleResult
from ._sanitize import printable


class Kind(str, enum.Enum):
    """The kinds of change, in the order reports show them."""

    #: In both runs; did not fail before, fails now. The only kind that is a regression.
    NEW_FAILURE = "new_failure"
    #: In both runs; failed before, passes now.
    FIX = "fix"
    #: Failed in both runs, at different stages.
    STAGE_CHANGE = "stage_change"
    #: Any other change of outcome (e.g. passed -> skipped by the registry).
    OUTCOME_CHANGE = "outcome_change"
    #: Only in the new run (a new op, mode or sample).
    ADDED = "added"
    #: Only in the old run.
    REMOVED = "removed"

    def __str__(self) -> str:
        return self.value


TITLES = {
    Kind.NEW_FAILURE: "New failures",
    Kind.FIX: "Fixes",
    Kind.STAGE_CHANGE: "Stage changes",
    Kind.OUTCOME_CHANGE: "Other outcome changes",
    Kind.ADDED: "Samples added",
    Kind.REMOVED: "Samples removed",
}

#: Added and removed samples are listed per op and mode with counts, not one by one: a new mode
#: adds tens of thousands of them.
_COUNTED = (Kind.ADDED, Kind.REMOVED)
#: The kinds of change with a failure on some side: ``--by cause`` groups them by its cause.
CAUSED = (Kind.NEW_FAILURE, Kind.FIX, Kind.STAGE_CHANGE)
#: How reports group changes: by op and mode (a line per sample), or by cause (a block per cause).
GROUPINGS = ("op", "cause")
#: How many sample ids a cause's block names.
_IDS_SHOWN = 3


def _status(r: SampleResult) -> tuple[Outcome, Stage | None]:
    """What a diff compares: the outcome, and for a failure its stage."""
    return r.outcome, r.stage if r.outcome is Outcome.FAILED else None


def _describe(r: SampleResult | None) -> str:
    if r is None:
        return "absent"
    return str(r.stage) if r.outcome is Outcome.FAILED and r.stage else str(r.outcome)


@dataclasses.dataclass(frozen=True)
class Change:
    kind: Kind
    old: SampleResult | None
    new: SampleResult | None

    @property
    def record(self) -> SampleResult:
        r = self.new if self.new is not None else self.old
        assert r is not None
        return r

    @property
    def transition(self) -> str:
        """``passed -> forward``: outcome (or failing stage) before and after."""
        return f"{_describe(self.old)} -> {_describe(self.new)}"

    @property
    def failing(self) -> SampleResult | None:
        """The record that failed: the new one, or the old one for a fix; None if neither did."""
        for r in (self.new, self.old):
            if r is not None and r.outcome is Outcome.FAILED:
                return r
        return None

    @property
    def message(self) -> str:
        """The failure message that matters: the new one, or the old one for a fix."""
        for r in (self.new, self.old):
            if r is not None and r.outcome is Outcome.FAILED:
                return r.message
        return ""


@dataclasses.dataclass(frozen=True)
class RunDiff:
    changes: tuple[Change, ...]
    old_count: int
    new_count: int
    unchanged: int

    def of(self, kind: Kind) -> list[Change]:
        return [c for c in self.changes if c.kind is kind]

    @property
    def regressions(self) -> list[Change]:
        return self.of(Kind.NEW_FAILURE)

    def by_cause(self, kind: Kind) -> list[tuple[Group, dict[str, Change]]]:
        """Changes of one kind by the cause of their failing side (the new record's, or the old
        one's for a fix), largest cause first; each group with its changes by id. Only the kinds
        with a failure on some side (:data:`CAUSED`) have causes."""
        changes = {c.record.id: c for c in self.of(kind)}
        failing = [c.failing for c in changes.values() if c.failing is not None]
        return [(g, {r.id: changes[r.id] for r in g.records}) for g in group(failing, by_verdict=False)]

    def counts(self) -> Counter[Kind]:
        return Counter(c.kind for c in self.changes)

    def grouped(self, kind: Kind) -> dict[tuple[str, str], list[Change]]:
        """Changes of one kind by (op, mode), ops sorted by name, samples by index."""
        groups: dict[tuple[str, str], list[Change]] = defaultdict(list)
        for c in self.of(kind):
            groups[(c.record.op_id, c.record.mode)].append(c)
        return {
            k: sorted(v, key=lambda c: (c.record.sample is None, c.record.sample or 0, c.record.id))
            for k, v in sorted(groups.items())
        }


def _by_id(records: Iterable[SampleResult]) -> list[SampleResult]:
    """Sorted by id, one record per id (the last given, as a dict by id would keep)."""
    out = sorted(records, key=lambda r: r.id)  # runs come sorted: linear
    if any(a.id == b.id for a, b in itertools.pairwise(out)):
        out = list({r.id: r for r in out}.values())
    return out


def diff(old: Iterable[SampleResult], new: Iterable[SampleResult]) -> RunDiff:
    """Both runs walked side by side in id order: no map of a million ids is built."""
    before, after = _by_id(old), _by_id(new)
    changes = []
    unchanged = i = j = 0
    while i < len(before) or j < len(after):
        o = before[i] if i < len(before) else None
        n = after[j] if j < len(after) else None
        if n is None or (o is not None and o.id < n.id):
            changes.append(Change(Kind.REMOVED, o, None))
            i += 1
            continue
        if o is None or n.id < o.id:
            changes.append(Change(Kind.ADDED, None, n))
            j += 1
            continue
        i, j = i + 1, j + 1
        if _status(o) == _status(n):
            unchanged += 1
            continue
        was, now = o.outcome is Outcome.FAILED, n.outcome is Outcome.FAILED
        if now and not was:
            kind = Kind.NEW_FAILURE
        elif was and n.outcome is Outcome.PASSED:
            kind = Kind.FIX
        elif was and now:
            kind = Kind.STAGE_CHANGE
        else:
            kind = Kind.OUTCOME_CHANGE
        changes.append(Change(kind, o, n))
    return RunDiff(tuple(changes), len(before), len(after), unchanged)


# -- reports ---------------------------------------------------------------------------------


def first_line(text: str, limit: int = 300) -> str:
    """The message as one line of a report: its first line, cut at ``limit`` characters."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _counted(changes: list[Change]) -> str:
    outcomes = Counter(_describe(c.record) for c in changes)
    return ", ".join(f"{n} {what}" for what, n in sorted(outcomes.items(), key=lambda kv: (-kv[1], kv[0])))


def _label(env: Mapping[str, str], count: int) -> str:
    bits = [f"torch {env['torch']}" if env.get("torch") else "", env.get("date", "")]
    return ", ".join(b for b in bits if b) + f", {count} samples"


def summary_line(d: RunDiff) -> str:
    counts = d.counts()
    return ", ".join(f"{counts[k]} {TITLES[k].lower()}" for k in Kind) + f"; {d.unchanged} unchanged"


def render_text(
    d: RunDiff, old_name: str, new_name: str, old_env: Mapping[str, str], new_env: Mapping[str, str], by: str = "op"
) -> str:
    """The diff as text; ``by="cause"``: the changes of the :data:`CAUSED` kinds one block per cause."""
    lines = [
        f"old: {old_name} ({_label(old_env, d.old_count)})",
        f"new: {new_name} ({_label(new_env, d.new_count)})",
        summary_line(d),
    ]
    for kind in Kind:
        groups = d.grouped(kind)
        if not groups:
            continue
        lines += ["", f"{TITLES[kind]} ({len(d.of(kind))}):"]
        if by == "cause" and kind in CAUSED:
            for g, changes_of in d.by_cause(kind):
                transitions = Counter(c.transition for c in changes_of.values())
                lines.append(f"  {g.count} sample{'s' if g.count != 1 else ''}: {said(g.cause)}")
                lines.append(f"    {g.spans_line()}")
                lines.append(
                    f"    {', '.join(f'{n} {t}' for t, n in sorted(transitions.items(), key=lambda kv: (-kv[1], kv[0])))}"
                )
                lines.append(f"    e.g. {listed([r.id for r in g.records], _IDS_SHOWN)}")
            continue
        for (op, mode), changes in groups.items():
            if kind in _COUNTED:
                lines.append(f"  {op} {mode}: {len(changes)} samples ({_counted(changes)})")
                continue
            lines.append(f"  {op} {mode}:")
            for c in changes:
                message = f": {first_line(c.message)}" if c.message else ""
                lines.append(f"    sample {c.record.key.sample_text} {c.record.dtype} {c.record.device}: {c.transition}{message}")
    return "\n".join(map(printable, lines)) + "\n"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("`", "'")


def render_markdown(
    d: RunDiff, old_name: str, new_name: str, old_env: Mapping[str, str], new_env: Mapping[str, str], by: str = "op"
) -> str:
    """The diff as markdown (a PR comment); ``by="cause"``: the :data:`CAUSED` kinds a row per cause."""
    regressions = len(d.regressions)
    head = ":x:" if regressions else ":white_check_mark:"
    lines = [
        f"### {head} optests: {regressions} new failure{'s' if regressions != 1 else ''}",
        "",
        f"`{_md_escape(old_name)}` ({_md_escape(_label(old_env, d.old_count))}) -> "
        f"`{_md_escape(new_name)}` ({_md_escape(_label(new_env, d.new_count))})",
        "",
        "| change | samples |",
        "|---|---:|",
    ]
    counts = d.counts()
    lines += [f"| {TITLES[k]} | {counts[k]} |" for k in Kind]
    lines.append(f"| Unchanged | {d.unchanged} |")
    for kind in Kind:
        groups = d.grouped(kind)
        if not groups:
            continue
        # Regressions open; the rest folded, so a long list does not bury them.
        lines += [
            "",
            f"<details{' open' if kind is Kind.NEW_FAILURE else ''}><summary><b>{TITLES[kind]}</b> ({len(d.of(kind))})</summary>",
            "",
        ]
        if by == "cause" and kind in CAUSED:
            lines += ["| cause | samples | spans | e.g. |", "|---|---:|---|---|"]
            for g, _ in d.by_cause(kind):
                lines.append(
                    f"| {_md_escape(said(g.cause))} | {g.count} | {_md_escape(g.spans_line())} | "
                    f"{_md_escape(listed([r.id for r in g.records], _IDS_SHOWN))} |"
                )
        elif kind in _COUNTED:
            lines += ["| op | mode | samples |", "|---|---|---|"]
            lines += [f"| `{_md_escape(op)}` | {mode} | {len(cs)} ({_counted(cs)}) |" for (op, mode), cs in groups.items()]
        else:
            lines += ["| op | mode | sample | change | message |", "|---|---|---:|---|---|"]
            for (op, mode), cs in groups.items():
                for c in cs:
                    lines.append(
                        f"| `{_md_escape(op)}` | {mode} | {c.record.key.sample_text} | {c.transition} | {_md_escape(first_line(c.message, 200))} |"
                    )
        lines += ["", "</details>"]
    return "\n".join(map(printable, lines)) + "\n"


def summary_json(d: RunDiff) -> dict[str, int]:
    """The count of each kind of change, and of unchanged samples."""
    counts = d.counts()
    return {**{k.value: counts[k] for k in Kind}, "unchanged": d.unchanged}


def change_json(c: Change) -> dict[str, Any]:
    """One change, with every field of its old and new record (as results files hold them)."""

    def side(r: SampleResult | None) -> dict[str, Any] | None:
        return None if r is None else r.to_json()

    return {"id": c.record.id, "op": c.record.op_id, "mode": c.record.mode, "sample": c.record.sample,
            "transform": c.record.transform, "kind": c.kind.value, "old": side(c.old), "new": side(c.new)}  # fmt: skip


def causes_json(d: RunDiff) -> list[dict[str, Any]]:
    """The changes of the :data:`CAUSED` kinds by cause: each with its kind, count, what it spans and its ids."""
    return [
        {"kind": kind.value, "cause": g.cause, "count": g.count, **g.spans(), "ids": [r.id for r in g.records]}
        for kind in CAUSED
        for g, _ in d.by_cause(kind)
    ]


def to_json(d: RunDiff, by: str = "op") -> dict[str, Any]:
    """The summary and every change; ``by="cause"`` adds ``causes`` (:func:`causes_json`)."""
    out = {"summary": summary_json(d), "changes": [change_json(c) for c in d.changes]}
    if by == "cause":
        out["causes"] = causes_json(d)
    return out


def render_json(d: RunDiff, by: str = "op") -> str:
    return json.dumps(to_json(d, by), indent=2, sort_keys=True) + "\n"
