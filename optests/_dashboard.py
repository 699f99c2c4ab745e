"""The nightly dashboard: one self-contained HTML page from the history database. Torch-free.

The page works offline (no CDN, no server, inline CSS, SVG and a few lines of script) and its
size does not grow with the sample count: the trend reads per-run counts, the matrix is per op and
mode, samples are listed only where they changed since the previous run, and a failing cell lists
at most ``MAX_FAILING`` of its failing samples.

Runs are grouped by :class:`~optests._history.Configuration` (torch release series, device, dtype,
transforms, backends): each has its own section, trend and "since the previous run", so no diff crosses
configurations; the comparison view puts the latest run of each side by side.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from . import _diff
from ._files import WriteError, write_atomic
from ._findings import Outcome
from ._history import Configuration, History, Run
from ._key import KNOWN_DBS, MODES, transform_name
from ._results import FIELDS, SampleResult, describe_os_error
from ._sanitize import html, script_json, shell_join
from .errors import DashboardError as DashboardError

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
#: Samples listed one by one per change kind; the rest are in changes.json beside the page.
MAX_LISTED = 2000
#: Failing samples a cell lists when clicked; it says how many more (its command finds them all).
MAX_FAILING = 20
#: Characters of a failing sample's message the page keeps (its first line).
MESSAGE_CHARS = 200
#: Runs of its configuration an op's history strip shows, the latest last.
STRIP_RUNS = 20


#: Every value the page shows that this module did not compute (from results, the registry or the
#: history database, whose columns can hold text where a number belongs) goes through this.
_esc = html


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def _modes(found: set[str]) -> list[str]:
    return [m for m in MODES if m in found] + sorted(found - set(MODES))


def pass_rate(counts: Counter[tuple[str, str]], mode: str) -> float | None:
    """Passed over passed + failed, in percent; skips and not-applicable records do not count."""
    passed, failed = counts[(mode, "passed")], counts[(mode, "failed")]
    return 100.0 * passed / (passed + failed) if passed + failed else None


def repro_command(record: SampleResult) -> str | None:
    """The ``optests check`` command that checks this sample again, on its device, dtype and mode,
    with its transform (``--transforms none`` for a sample as the OpInfo gives it). ``optests
    check`` has no option that picks one sample: it checks all of the op's, and prints this one
    as ``sample N``. None for an op it cannot name: one of another database, or an author's."""
    if record.db not in KNOWN_DBS:
        return None
    key = record.key
    transforms = transform_name(key.transform) if key.transform else "none"
    return shell_join(
        ["optests", "check", key.op_id, "--modes", key.mode.value, "--dtypes", key.dtype, "--device", key.device,
         "--transforms", transforms]
    )  # fmt: skip


def by_configuration(runs: Sequence[Run]) -> dict[Configuration, list[Run]]:
    """The runs of each configuration, oldest first; the configuration of the newest run first.
    A configuration's previous run is the one before its latest in its own list."""
    groups: dict[Configuration, list[Run]] = defaultdict(list)
    for run in runs:
        groups[run.configuration].append(run)
    order = sorted(groups, key=lambda c: (groups[c][-1].date, groups[c][-1].id), reverse=True)
    return {c: groups[c] for c in order}


@dataclasses.dataclass
class Cell:
    """One op in one mode in one run: its counts, failing stages and failing samples."""

    passed: int = 0
    failed: int = 0
    other: int = 0  #: skipped or not applicable
    stages: Counter[str] = dataclasses.field(default_factory=Counter)
    failing: list[SampleResult] = dataclasses.field(default_factory=list)

    def signature(self) -> tuple[int, int, frozenset[str]]:
        """What the comparison compares: passed, checked, and which samples fail."""
        return self.passed, self.passed + self.failed, frozenset(r.key.sample_text for r in self.failing)


def cells(records: Sequence[SampleResult]) -> dict[tuple[str, str], Cell]:
    """(op id, mode) -> its cell."""
    out: dict[tuple[str, str], Cell] = defaultdict(Cell)
    for r in records:
        cell = out[(r.op_id, r.mode.value)]
        if r.outcome is Outcome.PASSED:
            cell.passed += 1
        elif r.outcome is Outcome.FAILED:
            cell.failed += 1
            cell.failing.append(r)
            if r.stage is not None:
                cell.stages[r.stage.value] += 1
        else:
            cell.other += 1
    return dict(out)


def differs(row: Sequence[Cell | None]) -> bool:
    """Whether configurations disagree on an op in a mode: it is missing from some, or they pass
    or check another number of samples, or other samples fail (by sample index and transform)."""
    return len({c.signature() if c is not None else None for c in row}) > 1


def _hashable(value: Any) -> tuple[type, Any]:
    """A record's JSON value as a key: its type, and the value (a list, ``reruns``: its JSON text)."""
    return (list, json.dumps(value, sort_keys=True)) if isinstance(value, list) else (type(value), value)


class _Failing:
    """The failing samples behind the clickable cells, inlined once in the page as JSON (a page
    opened from file:// cannot fetch a file beside it). Runs, values and commands repeat across
    cells and samples, so each is stored once and referenced by its index; a cell is
    ``[run, op, mode, failed, checked, more, samples]``, a sample the index of the value of each
    field of a record (``fields``, as :data:`~optests._results.FIELDS` declares them; the message
    cut to its first line) and then of its command (-1: none). The script words the panel from
    them, reading fields by name."""

    def __init__(self) -> None:
        self.cells: list[list[Any]] = []
        self._ids: dict[tuple[Configuration, str, str], int] = {}
        self._runs: dict[str, int] = {}
        self._values: dict[tuple[type, Any], int] = {}
        self._commands: dict[str, int] = {}

    def add(self, config: Configuration, run: Run, op: str, mode: str, cell: Cell) -> int:
        """The index of the cell's entry; the cell is added the first time."""
        key = (config, op, mode)
        if key not in self._ids:
            failing = sorted(cell.failing, key=lambda r: (r.sample if r.sample is not None else -1, r.key.transform))
            listed = failing[:MAX_FAILING]
            where = self._runs.setdefault(f"run {run.id} ({run.date}), {config.label}", len(self._runs))
            self._ids[key] = len(self.cells)
            self.cells.append(
                [
                    where,
                    op,
                    mode,
                    cell.failed,
                    cell.passed + cell.failed,
                    len(failing) - len(listed),
                    [self._row(r) for r in listed],
                ]
            )
        return self._ids[key]

    def _row(self, r: SampleResult) -> list[int]:
        """The index of each field's value, then of the command (-1: none)."""
        record = r.to_json()
        record["message"] = _diff.first_line(r.message, MESSAGE_CHARS)
        command = repro_command(r)
        return [
            *(self._values.setdefault(_hashable(v), len(self._values)) for v in (record.get(f.name, f.default) for f in FIELDS)),
            self._commands.setdefault(command, len(self._commands)) if command is not None else -1,
        ]

    def script(self) -> str:
        data = {
            "cells": self.cells,
            "commands": list(self._commands),
            "fields": [f.name for f in FIELDS],
            "values": [json.loads(v) if t is list else v for t, v in self._values],
            "runs": list(self._runs),
            "no_command": f"none: optests check names the ops of {', '.join(KNOWN_DBS)} only",
        }
        return f'<script type="application/json" id="failing-data">{script_json(data)}</script>'


def _plot(runs: Sequence[Run], counts: dict[int, Counter[tuple[str, str]]], modes: Sequence[str]) -> str:
    width, height, left, right, top, bottom = 880, 280, 56, 180, 16, 40
    rates = {m: [pass_rate(counts.get(r.id, Counter()), m) for r in runs] for m in modes}
    values = [v for vs in rates.values() for v in vs if v is not None]
    if not values:
        return '<p class="empty">No pass rates yet.</p>'
    lo, hi = min(values), max(values)
    pad = max((hi - lo) * 0.15, 0.5)
    lo, hi = max(0.0, lo - pad), min(100.0, hi + pad)
    n = len(runs)

    def x(i: int) -> float:
        return left + (width - left - right) * (i / (n - 1) if n > 1 else 0.5)

    def y(v: float) -> float:
        return top + (height - top - bottom) * (1 - (v - lo) / (hi - lo))

    parts = [
        f'<svg class="trend" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="Pass rate per mode over {n} runs">'
    ]
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" class="grid"/>'
            f'<text x="{left - 6}" y="{y(v) + 4:.1f}" class="tick" text-anchor="end">{v:.1f}%</text>'
        )
    ticks = sorted({0, n - 1, *range(0, n, max(1, n // 6))})
    for i in ticks:
        parts.append(
            f'<text x="{x(i):.1f}" y="{height - bottom + 16}" class="tick" text-anchor="middle">{_esc(runs[i].date[:10])}</text>'
        )
    for k, mode in enumerate(modes):
        color = COLORS[k % len(COLORS)]
        points = [(x(i), y(v), v, runs[i]) for i, v in enumerate(rates[mode]) if v is not None]
        coords = " ".join(f"{px:.1f},{py:.1f}" for px, py, _, _ in points)
        parts.append(f'<polyline class="series" data-mode="{_esc(mode)}" points="{coords}" stroke="{color}"/>')
        dots = points if len(points) <= 120 else points[-1:]  # hundreds of runs: the line says enough
        for px, py, v, run in dots:
            parts.append(
                f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{color}"><title>{_esc(mode)}: {v:.2f}% passed, '
                f"run {_esc(run.id)}, {_esc(run.date)}, torch {_esc(run.torch)}</title></circle>"
            )
        ly = top + 14 + 18 * k
        last = f"{points[-1][2]:.2f}%" if points else "-"
        parts.append(
            f'<rect x="{width - right + 12}" y="{ly - 9}" width="12" height="3" fill="{color}"/>'
            f'<text x="{width - right + 30}" y="{ly - 4}" class="legend">{_esc(mode)} {last}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


#: The kinds of change the page lists one by one (the first MAX_LISTED of each); the others it counts.
_LISTED = (_diff.Kind.NEW_FAILURE, _diff.Kind.FIX, _diff.Kind.STAGE_CHANGE, _diff.Kind.OUTCOME_CHANGE)


@dataclasses.dataclass(frozen=True)
class _PageDiff:
    """What the page shows of the diff from a configuration's previous run, of a size bounded by
    the page whatever the diff's: the count of each kind, the first :data:`MAX_LISTED` changes
    of each listed kind (ops by name, samples by index), the added and removed samples per op
    and mode, the matrix's marks, and the summary line. ``changes.json`` has every change."""

    counts: Counter[_diff.Kind]
    summary: str
    listed: dict[_diff.Kind, list[_diff.Change]]
    counted: dict[_diff.Kind, Counter[tuple[str, str]]]
    marks: dict[tuple[str, str], str]

    @classmethod
    def of(cls, d: _diff.RunDiff) -> _PageDiff:
        marks: dict[tuple[str, str], str] = {}
        for change in d.changes:
            key = (change.record.op_id, change.record.mode.value)
            if change.kind is _diff.Kind.NEW_FAILURE:
                marks[key] = "regressed"
            elif change.kind is _diff.Kind.FIX and key not in marks:
                marks[key] = "fixed"
        listed = {k: [c for group in d.grouped(k).values() for c in group][:MAX_LISTED] for k in _LISTED}
        counted = {
            k: Counter({(op, str(mode)): len(cs) for (op, mode), cs in d.grouped(k).items()})
            for k in (_diff.Kind.ADDED, _diff.Kind.REMOVED)
        }
        return cls(d.counts(), _diff.summary_line(d), listed, counted, marks)


def _changes(d: _PageDiff) -> str:
    out = [f'<p class="change-summary">{_esc(d.summary)}</p>']
    for kind in _LISTED:
        changes, total = d.listed[kind], d.counts[kind]
        out.append(f'<h4 class="{kind.value}">{_esc(_diff.TITLES[kind])} ({total})</h4>')
        if not changes:
            out.append('<p class="empty">None.</p>')
            continue
        rows = []
        for c in changes:
            r = c.record
            rows.append(
                f"<tr><td>{_esc(r.op_id)}</td><td>{_esc(r.mode)}</td><td>{_esc(r.dtype)} {_esc(r.device)}</td>"
                f'<td>{_esc(r.key.sample_text)}</td><td>{_esc(c.transition)}</td><td class="msg">{_esc(c.message)}</td></tr>'
            )
        more = (
            f'<p class="more">Showing {MAX_LISTED} of {total}; all are in <a href="changes.json">changes.json</a>.</p>'
            if total > MAX_LISTED
            else ""
        )
        out.append(
            f'<table class="changes {kind.value}"><thead><tr><th>op</th><th>mode</th><th>dtype, device</th><th>sample</th>'
            f"<th>change</th><th>message</th></tr></thead><tbody>{''.join(rows)}</tbody></table>{more}"
        )
    for kind in (_diff.Kind.ADDED, _diff.Kind.REMOVED):
        groups = d.counted[kind]
        total = d.counts[kind]
        out.append(f'<h4 class="{kind.value}">{_esc(_diff.TITLES[kind])} ({total})</h4>')
        if not groups:
            out.append('<p class="empty">None.</p>')
            continue
        by_mode: Counter[str] = Counter()
        for (_, mode), n in groups.items():
            by_mode[mode] += n
        ops = len({op for op, _ in groups})
        out.append(
            f"<p>{total} samples over {ops} ops: " + ", ".join(f"{_esc(m)} {n}" for m, n in sorted(by_mode.items())) + ".</p>"
        )
    return "".join(out)


@dataclasses.dataclass(frozen=True)
class _Section:
    """One configuration: its runs (oldest first), the cells of its latest run, and what the page
    shows of the diff from its previous run (None for its first)."""

    index: int
    config: Configuration
    runs: list[Run]
    modes: list[str]
    cells: dict[tuple[str, str], Cell]
    diff: _PageDiff | None

    @property
    def latest(self) -> Run:
        return self.runs[-1]

    @property
    def previous(self) -> Run | None:
        return self.runs[-2] if len(self.runs) > 1 else None

    @property
    def anchor(self) -> str:
        return f"config-{self.index}"


def _sections(
    history: History, groups: dict[Configuration, list[Run]], counts: dict[int, Counter[tuple[str, str]]], into: list[_Section]
) -> Iterator[str]:
    """``changes.json``'s text, a configuration at a time, as :func:`json.dumps` (sorted keys,
    indent 2) would write it whole; each configuration's section is added to ``into`` as its
    text is made. One configuration's runs and diff are in memory at a time, and its changes
    are made into text one by one: memory is bounded by a run, not by the history."""
    yield '{\n  "configurations": ['
    for i, (config, runs) in enumerate(groups.items(), 1):
        latest = history.records(runs[-1])
        d = _diff.diff(history.records(runs[-2]), latest) if len(runs) > 1 else None
        modes = _modes({m for r in runs for m, _ in counts.get(r.id, Counter())})
        into.append(_Section(i, config, runs, modes, cells(latest), _PageDiff.of(d) if d is not None else None))
        del latest
        entry: dict[str, Any] = {
            "configuration": config.label,
            "old_run": runs[-2].id if len(runs) > 1 else None,
            "new_run": runs[-1].id,
            "summary": _diff.summary_json(d) if d is not None else {},
            "changes": [],
        }
        head, _, tail = _indented(json.dumps(entry, indent=2, sort_keys=True), 4).partition('"changes": []')
        yield ("," if i > 1 else "") + "\n" + head
        if d is not None and d.changes:
            yield '"changes": ['
            for n, c in enumerate(d.changes):
                yield ("," if n else "") + "\n" + _indented(json.dumps(_diff.change_json(c), indent=2, sort_keys=True), 8)
            yield "\n      ]"
        else:
            yield '"changes": []'
        yield tail
    yield "\n  ]\n}\n"


def _indented(text: str, n: int) -> str:
    """Multi-line JSON (which holds no newline in a string) indented by ``n`` spaces."""
    return "\n".join(" " * n + line for line in text.split("\n"))


def _td(cell: Cell | None, ref: int | None, marks: str = "", arrow: str = "") -> str:
    """A cell of the matrix or the comparison: passed/checked, failing stages on hover, and the
    index of its failing samples (``data-cell``) where it has any."""
    if cell is None:
        return f'<td class="none{marks}">·</td>'
    cls = "fail" if cell.failed else ("pass" if cell.passed else "none")
    why = ", ".join(f"{n} {s}" for s, n in cell.stages.most_common())
    title = (
        f"{cell.passed} passed, {cell.failed} failed"
        + (f" ({why})" if why else "")
        + (f", {cell.other} skipped or n/a" if cell.other else "")
    )
    data = f' data-cell="{ref}"' if ref is not None else ""
    data += f' title="{_esc(title)}"' if cell.failed or cell.other else ""  # "4/4" says all there is
    return f'<td class="{cls}{marks}"{data}>{cell.passed}/{cell.passed + cell.failed}{arrow}</td>'


def _strip(op: str, window: Sequence[Run], op_counts: dict[int, dict[str, tuple[int, int]]]) -> str:
    """The op over the last runs of its configuration, oldest first: ``f`` where samples failed,
    ``p`` where none did, ``x`` where it was not checked. A strip of one state is one element that
    CSS draws as squares, so a page of a thousand ops that never change stays small."""
    states = "".join("x" if not c or not c[0] + c[1] else "f" if c[1] else "p" for c in (op_counts[r.id].get(op) for r in window))
    if len(set(states)) == 1:
        return f'<span class="strip all-{states[0]}"></span>'
    return '<span class="strip">' + "".join(f"<i class={s}></i>" for s in states) + "</span>"


def _controls(flag: str, label: str, count: int) -> str:
    """A filter by name and a switch that shows only the rows whose ``flag`` attribute is 1."""
    return (
        f'<div class="controls"><input class="filter" type="search" placeholder="filter ops" aria-label="filter ops"> '
        f'<label><input class="only" type="checkbox" data-flag="{flag}"> {_esc(label)}</label> '
        f'<span class="shown">{count} ops</span></div>'
    )


def _matrix(s: _Section, op_counts: dict[int, dict[str, tuple[int, int]]], failing: _Failing) -> str:
    window = s.runs[-STRIP_RUNS:]
    marks = s.diff.marks if s.diff is not None else {}
    ops = sorted({op for op, _ in s.cells}, key=lambda op: (op.lower(), op))
    body = []
    for op in ops:
        tds = []
        for mode in s.modes:
            c = s.cells.get((op, mode))
            mark = marks.get((op, mode), "")
            ref = failing.add(s.config, s.latest, op, mode, c) if c is not None and c.failed else None
            tds.append(_td(c, ref, f" {mark}" if mark else "", {"regressed": " ▼", "fixed": " ▲"}.get(mark, "")))
        bad = any(c.failed for m in s.modes if (c := s.cells.get((op, m))) is not None)
        body.append(
            f'<tr data-op="{_esc(op)}" data-failing="{int(bad)}"><th>{_esc(op)}</th>'
            f'<td class="history">{_strip(op, window, op_counts)}</td>{"".join(tds)}</tr>'
        )
    runs = ",".join(f"run {r.id}, {r.date[:10]}" for r in window)
    head = "".join(f"<th>{_esc(m)}</th>" for m in s.modes)
    return (
        f'<div class="filterable">{_controls("data-failing", "only ops with failures", len(ops))}'
        f'<table class="matrix" data-runs="{_esc(runs)}" style="--strip:{8 * len(window)}px"><thead><tr><th>op</th>'
        f'<th title="one square per run, oldest first: red where samples failed, green where none did">'
        f"last {len(window)} runs</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _short_labels(configs: Sequence[Configuration]) -> list[str]:
    """Each configuration by what sets it apart from the others (``torch 2.13, cpu``)."""
    fields = [f.name for f in dataclasses.fields(Configuration)]
    varying = [f for f in fields if len({getattr(c, f) for c in configs}) > 1] or fields
    words = {"torch": "torch ", "transforms": "transforms ", "backends": "backends "}
    return [", ".join(words.get(f, "") + getattr(c, f) for f in varying) for c in configs]


def _compare(sections: Sequence[_Section], failing: _Failing) -> str:
    """Per op and mode, the latest run of each configuration side by side; where they differ
    (see :func:`differs`), the cells are marked ``differs``."""
    modes = _modes({m for s in sections for m in s.modes})
    ops = sorted({op for s in sections for op, _ in s.cells}, key=lambda op: (op.lower(), op))
    labels = _short_labels([s.config for s in sections])
    head = "".join(f'<th colspan="{len(sections)}">{_esc(m)}</th>' for m in modes)
    sub = "".join(f'<th title="{_esc(s.config.label)}">{_esc(label)}</th>' for _ in modes for s, label in zip(sections, labels))
    body, differing = [], 0
    for op in ops:
        tds, any_differs = [], False
        for mode in modes:
            row = [s.cells.get((op, mode)) for s in sections]
            mark = " differs" if differs(row) else ""
            any_differs = any_differs or bool(mark)
            for s, c in zip(sections, row):
                ref = failing.add(s.config, s.latest, op, mode, c) if c is not None and c.failed else None
                tds.append(_td(c, ref, mark))
        differing += any_differs
        body.append(f'<tr data-op="{_esc(op)}" data-differs="{int(any_differs)}"><th>{_esc(op)}</th>{"".join(tds)}</tr>')
    return (
        f'<p class="meta">The latest run of each configuration: passed / checked samples. Marked where they differ '
        f"(the op missing from one, other counts, or other failing samples): {differing} of {len(ops)} ops.</p>"
        f'<div class="filterable">{_controls("data-differs", "only ops that differ", len(ops))}'
        f'<table id="compare"><thead><tr><th rowspan="2">op</th>{head}</tr><tr>{sub}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _runs_table(runs: Sequence[Run], counts: dict[int, Counter[tuple[str, str]]], modes: Sequence[str]) -> str:
    head = "".join(f"<th>{_esc(m)}</th>" for m in modes)
    rows = []
    for r in reversed(runs):
        rates = []
        for m in modes:
            v = pass_rate(counts.get(r.id, Counter()), m)
            rates.append(f"<td>{v:.2f}%</td>" if v is not None else "<td>-</td>")
        rows.append(
            f"<tr><td>{_esc(r.id)}</td><td>{_esc(r.date)}</td><td>{_esc(r.torch)}</td><td><code>{_esc(r.torch_git[:12])}</code></td>"
            f"<td>{_esc(r.device)}</td><td>{_esc(r.python)}</td><td>{_esc(r.optests)}</td><td>{_esc(r.samples)}</td>{''.join(rates)}"
            f'<td class="src">{_esc(r.source)}</td></tr>'
        )
    return (
        f'<table class="runs"><thead><tr><th>run</th><th>date</th><th>torch</th><th>git</th><th>device</th><th>python</th>'
        f"<th>optests</th><th>samples</th>{head}<th>source</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _headline(s: _Section, counts: Counter[tuple[str, str]]) -> str:
    totals: Counter[str] = Counter()
    for (_, outcome), n in counts.items():
        totals[outcome] += n
    if s.diff is not None:
        regress, fixes = s.diff.counts[_diff.Kind.NEW_FAILURE], s.diff.counts[_diff.Kind.FIX]
        versus = (
            f'<span class="{"bad" if regress else "good"} regressions-count">{regress} new failures</span>'
            f'<span class="good fixes-count">{fixes} fixes</span>'
        )
    else:
        versus = "<span>first run of this configuration: nothing to compare</span>"
    outcomes = "".join(f"<span>{n} {_esc(o)}</span>" for o, n in sorted(totals.items()))
    return f'<p class="counts"><span>{_esc(s.latest.samples)} samples</span>{outcomes}{versus}</p>'


def _render_section(
    s: _Section, counts: dict[int, Counter[tuple[str, str]]], op_counts: dict[int, dict[str, tuple[int, int]]], failing: _Failing
) -> str:
    latest, previous = s.latest, s.previous
    since = (
        f'<h3>Since the previous run of this configuration (run {_esc(previous.id)}, {_esc(previous.date)})</h3><div class="since">'
        f"{_changes(s.diff)}</div>"
        if previous is not None and s.diff is not None
        else '<h3>Since the previous run of this configuration</h3><p class="empty since">This is the first run of this '
        "configuration in the history: nothing to compare.</p>"
    )
    return (
        f'<section class="configuration" id="{s.anchor}" data-config="{_esc(s.config.label)}"><h2>{_esc(s.config.label)}</h2>'
        f'<p class="meta latest">Latest run: run {_esc(latest.id)}, {_esc(latest.date)}, torch {_esc(latest.torch)} '
        f"(<code>{_esc(latest.torch_git[:12])}</code>), {_esc(latest.device)}, Python {_esc(latest.python)}, "
        f"optests {_esc(latest.optests)}. {_runs(len(s.runs))} of this configuration.</p>"
        f"{_headline(s, counts.get(latest.id, Counter()))}"
        f"<h3>Pass rate per mode</h3>{_plot(s.runs, counts, s.modes)}{since}"
        f'<h3>Status by op and mode (run {_esc(latest.id)})</h3><p class="meta">Passed / checked samples; ▼ new failures, '
        "▲ fixes since the previous run of this configuration; hover a cell for its failing stages, click it for its "
        "failing samples and the command that checks them again.</p>"
        f"{_matrix(s, op_counts, failing)}"
        f"<h3>Runs of this configuration</h3>{_runs_table(s.runs, counts, s.modes)}</section>"
    )


def _nav(sections: Sequence[_Section], counts: dict[int, Counter[tuple[str, str]]]) -> str:
    items = []
    for s in sections:
        failed = sum(n for (_, outcome), n in counts.get(s.latest.id, Counter()).items() if outcome == "failed")
        items.append(
            f'<li><a href="#{s.anchor}">{_esc(s.config.label)}</a>: {_runs(len(s.runs))}, the latest run {_esc(s.latest.id)} '
            f"({_esc(s.latest.date[:10])}), {_esc(s.latest.samples)} samples, {_esc(failed)} failed</li>"
        )
    return f'<ul id="configurations">{"".join(items)}</ul>'


_DETAIL = (
    '<aside id="detail" hidden><button id="detail-close" type="button" aria-label="close">close</button>'
    '<h3 id="detail-title"></h3><p class="meta" id="detail-where"></p>'
    '<p class="meta">Each command checks every sample of the op in that mode, dtype and device (and transform), '
    "as the run did; the sample is its line <code>sample N</code>.</p>"
    '<table id="detail-samples"><thead><tr><th>sample</th><th>stage</th><th>message</th><th>reproduce</th></tr></thead>'
    '<tbody></tbody></table><p class="more" id="detail-more"></p></aside>'
)

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:19px;margin:36px 0 8px;border-bottom:2px solid #ccc}
h3{font-size:16px;margin:22px 0 6px}h4{font-size:14px;margin:14px 0 4px}
.meta{color:#555}.empty{color:#777}table{border-collapse:collapse;margin:4px 0}
th,td{border:1px solid #ddd;padding:2px 8px;text-align:left;vertical-align:top}thead th{background:#f4f4f4}
td.pass{background:#e6f4ea}td.fail{background:#fce8e6}td.none{color:#aaa}td.regressed{outline:2px solid #c5221f;font-weight:bold}
td.fixed{outline:2px solid #188038}td.msg{font-family:ui-monospace,monospace;font-size:12px;white-space:pre-wrap;max-width:700px}
td.differs{box-shadow:inset 0 0 0 2px #e37400;font-weight:bold}td[data-cell]{cursor:pointer;text-decoration:underline dotted}
table.new_failure{border-left:4px solid #c5221f}table.fix{border-left:4px solid #188038}
.matrix td,#compare td{text-align:right;min-width:70px}.matrix td.history{text-align:left;min-width:0}.controls{margin:6px 0}.src{color:#777;font-size:12px}
.strip{display:inline-block;height:8px;white-space:nowrap;line-height:0}.strip i{display:inline-block;width:6px;height:8px;margin-right:2px}
.strip i.p{background:#81c995}.strip i.f{background:#ee675c}.strip i.x{background:#e8eaed}
.strip.all-p,.strip.all-f,.strip.all-x{width:var(--strip)}
.strip.all-p{background:repeating-linear-gradient(90deg,#81c995 0 6px,transparent 6px 8px)}
.strip.all-f{background:repeating-linear-gradient(90deg,#ee675c 0 6px,transparent 6px 8px)}
.strip.all-x{background:repeating-linear-gradient(90deg,#e8eaed 0 6px,transparent 6px 8px)}
section.configuration{content-visibility:auto;contain-intrinsic-size:auto 3000px}svg .grid{stroke:#eee}svg .tick,svg .legend{font-size:11px;fill:#555}svg .series{fill:none;stroke-width:2}
.counts span{display:inline-block;margin-right:16px}.bad{color:#c5221f;font-weight:bold}.good{color:#188038;font-weight:bold}
#detail{position:fixed;left:24px;right:24px;bottom:0;max-height:45vh;overflow:auto;background:#fff;border:1px solid #999;
box-shadow:0 -4px 16px rgba(0,0,0,.2);padding:8px 16px}#detail-close{float:right;font-size:18px}
#detail td code{white-space:nowrap;font-size:12px}
"""

_JS = """
(function(){
  document.querySelectorAll('.filterable').forEach(function(box){
    var filter=box.querySelector('.filter'),only=box.querySelector('.only'),shown=box.querySelector('.shown');
    var flag=only.getAttribute('data-flag'),rows=Array.prototype.slice.call(box.querySelectorAll('tbody tr'));
    function apply(){
      var q=filter.value.trim().toLowerCase(),n=0;
      rows.forEach(function(r){
        var ok=r.getAttribute('data-op').toLowerCase().indexOf(q)>=0&&(!only.checked||r.getAttribute(flag)==='1');
        r.style.display=ok?'':'none';if(ok)n++;
      });
      shown.textContent=n+' ops';
    }
    filter.addEventListener('input',apply);only.addEventListener('change',apply);
  });
  var data=JSON.parse(document.getElementById('failing-data').textContent),panel=document.getElementById('detail');
  function get(s,name){return data.values[s[data.fields.indexOf(name)]];}
  function td(tr,text,code){var c=document.createElement('td');if(code){var k=document.createElement('code');k.textContent=text;c.appendChild(k);}else{c.textContent=text;}tr.appendChild(c);}
  function show(c){
    document.getElementById('detail-title').textContent=c[1]+' '+c[2]+': '+c[3]+' of '+c[4]+' samples fail';
    document.getElementById('detail-where').textContent=data.runs[c[0]];
    var body=panel.querySelector('tbody');body.textContent='';
    c[6].forEach(function(s){
      var tr=document.createElement('tr'),t=get(s,'transform'),k=s[s.length-1];
      td(tr,get(s,'sample')+(t?' '+t:''));td(tr,get(s,'stage')||'');td(tr,get(s,'message'));td(tr,k<0?data.no_command:data.commands[k],k>=0);body.appendChild(tr);
    });
    document.getElementById('detail-more').textContent=c[5]?'and '+c[5]+' more failing samples, not listed here; the command checks them all.':'';
    panel.hidden=false;
  }
  document.addEventListener('click',function(e){
    var cell=e.target.closest('td[data-cell]');
    if(cell)show(data.cells[+cell.getAttribute('data-cell')]);
  });
  document.getElementById('detail-close').addEventListener('click',function(){panel.hidden=true;});
  document.addEventListener('mouseover',function(e){
    var strip=e.target.closest('.strip');
    if(!strip||e.target.title)return;
    var runs=strip.closest('table').getAttribute('data-runs').split(','),words={p:'no sample failed',f:'samples failed',x:'not checked'};
    if(e.target===strip&&strip.className.indexOf('all-')>0){strip.title=words[strip.className.slice(-1)]+' in each of the last '+runs.length+' runs';return;}
    var i=Array.prototype.indexOf.call(strip.children,e.target);
    if(i>=0)e.target.title=runs[i]+': '+words[e.target.className];
  });
})();
"""


def build(history: History, out: Path) -> Path:
    """Write ``index.html`` (and ``changes.json``, every change since the previous run of each
    configuration) into ``out``."""
    if out.exists() and not out.is_dir():
        raise DashboardError(f"{out}: not a directory (the dashboard is a folder: index.html and changes.json)")
    runs = history.runs()
    if not runs:
        raise DashboardError(f"{history.path}: the history holds no runs yet; ingest one with optests history ingest")
    counts = history.counts()
    index = out / "index.html"
    sections: list[_Section] = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        # each file atomically: a full disk or a kill leaves the old one, never half a page;
        # changes.json is written as its configurations are read, each section kept for the page
        write_atomic(out / "changes.json", _sections(history, by_configuration(runs), counts, sections))
    except WriteError as e:
        raise DashboardError(str(e)) from None
    except OSError as e:
        where = Path(e.filename) if isinstance(e.filename, str) else out
        raise DashboardError(f"{where}: {describe_os_error(where, e, writing=True)}") from None
    op_counts = history.op_counts([r for s in sections for r in s.runs[-STRIP_RUNS:]])
    failing = _Failing()
    rendered = "".join(_render_section(s, counts, op_counts, failing) for s in sections)
    compare = (
        f"<h2>Configurations side by side</h2>{_compare(sections, failing)}"
        if len(sections) > 1
        else '<h2>Configurations side by side</h2><p class="empty">One configuration only: nothing to compare.</p>'
    )
    latest = runs[-1]
    page = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">'
        f"<title>optests: run {_esc(latest.id)}, {_esc(latest.date[:10])}</title><style>{_CSS}</style></head><body>"
        f"<h1>optests dashboard</h1>"
        f'<p class="meta" id="latest">Latest: run {_esc(latest.id)}, {_esc(latest.date)}, {_esc(latest.configuration.label)}. '
        f"{_runs(len(runs))} in the history, in {len(sections)} configuration{'s' if len(sections) > 1 else ''} (torch release, device, dtype, input "
        f"transforms, backends); each is compared only with runs of its own.</p>{_nav(sections, counts)}"
        f"{compare}{rendered}{_DETAIL}{failing.script()}<script>{_JS}</script></body></html>\n"
    )
    try:
        write_atomic(index, page.encode("utf-8"))
    except WriteError as e:
        raise DashboardError(str(e)) from None
    except OSError as e:
        where = Path(e.filename) if isinstance(e.filename, str) else out
        raise DashboardError(f"{where}: {describe_os_error(where, e, writing=True)}") from None
    return index
