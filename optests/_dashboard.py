"""The nightly dashboard: one self-contained HTML page from the history database. Torch-free.

The page works offline (no CDN, no server, inline CSS, SVG and a few lines of script) and its
size does not grow with the sample count: the trend reads per-run counts, the matrix is per op and
mode, samples are listed only where they changed since the previous run, and a failing cell lists
at most ``MAX_FAILING`` of its failing samples.

Runs are grouped by :class:`~optests._history.Configuration` (torch release series, device, dtype,
transforms, backends): each has its own section, trend and "since the previous run", so no diff crosses
configurations; the comparison view puts the latest run of each side by side.

Each record is shown by its verdict (:data:`KINDS`: a new failure, an expected one, a fix, a flake
and a skip each look different, in colour and in words, with a legend on the page); records that
carry none are judged by the registry given (``--registry``). The view by cause lists each cause
of the latest runs' failures (:mod:`optests._causes`) with its count per configuration and per
night (a count per run, grouped in SQL), the ops it spans and its samples.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from . import _causes, _diff, _registry
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
#: Runs of its configuration an op's history strip shows, the latest last; the nights the view by
#: cause counts each cause in, and those its flaky samples are counted over.
STRIP_RUNS = 20
#: Causes the view by cause lists (the most frequent first); it says how many more there are.
MAX_CAUSES = 300
#: Flaky samples a configuration's section lists (the most often flaky first).
MAX_FLAKY = 200
#: Where the dashboard finds a known bug's repro to copy beside the page (a source checkout's
#: ``findings/``; an installed optests has none, and the page names the path without a link).
FINDINGS = Path(__file__).resolve().parents[1] / "findings"


@dataclasses.dataclass(frozen=True)
class Kind:
    """How the page shows the records of one kind of verdict."""

    name: str  #: a cell of this kind has the CSS class ``v-NAME``
    tag: str  #: the word a cell of this kind shows after its counts ("" for none), so colour is not all that tells
    title: str  #: what the legend and the sample panel call it
    what: str  #: what it means, in the legend
    verdicts: tuple[str, ...]  #: the verdicts (their values) of this kind


#: The kinds of verdict, the most urgent first: a cell is of the most urgent kind among its
#: records. A record with no verdict (ingested unjudged, and no ``--registry`` given) is
#: ``failed`` where it failed, else by its outcome.
KINDS: tuple[Kind, ...] = (
    Kind("new", "new", "new failure", "fails where the registry expects no failure, or at another stage than it expects "
         "(unexpected_failure, stage_changed): the run fails", ("unexpected_failure", "stage_changed")),
    Kind("failed", "failed", "failed, not judged", "fails, and no registry judged it: the record carries no verdict and no "
         "--registry was given", ()),
    Kind("fixed", "fixed", "fixed", "passes where the registry expects a failure (unexpected_pass): the entry can go",
         ("unexpected_pass",)),
    Kind("flaky", "flaky", "flaky", "its checks disagreed, or a flaky entry covers it: recorded, does not fail the run",
         ("flaky",)),
    Kind("xfail", "xfail", "expected failure", "fails as the registry expects (xfailed)", ("xfailed",)),
    Kind("pass", "", "passed", "every sample checked passed", ("passed",)),
    Kind("skip", "skip", "skipped", "not run: a skip entry covers it, or the op has no such sample (not applicable)",
         ("skipped", "not_applicable")),
)  # fmt: skip
_KIND = {k.name: k for k in KINDS}
_BY_VERDICT = {v: k.name for k in KINDS for v in k.verdicts}
_BY_OUTCOME = {Outcome.PASSED: "pass", Outcome.FAILED: "failed", Outcome.SKIPPED: "skip", Outcome.NOT_APPLICABLE: "skip"}
#: The kinds a cell lists in its sample panel: all but plain passes and skips.
_LISTED_KINDS = frozenset(("new", "failed", "fixed", "flaky", "xfail"))


def kind_of(record: SampleResult) -> str:
    """The name of the :class:`Kind` a record is shown as: by its verdict, else by its outcome."""
    if record.verdict is not None:
        return _BY_VERDICT.get(record.verdict.value, "failed")
    return _BY_OUTCOME[record.outcome]


def judged(records: Sequence[SampleResult], registry: _registry.Registry | None) -> tuple[list[SampleResult], int]:
    """``records``, each that carries no verdict judged by ``registry`` (none: left unjudged), and
    how many were judged."""
    if registry is None:
        return list(records), 0
    out, n = [], 0
    for r in records:
        if r.verdict is None:
            r = dataclasses.replace(r, verdict=registry.judge(r)[0])
            n += 1
        out.append(r)
    return out, n


@dataclasses.dataclass(frozen=True)
class Judge:
    """The registry that judges records that carry no verdict (``optests dashboard --registry``)."""

    path: str  #: how the page names it
    entries: tuple[_registry.Entry, ...]

    def registry(self, torch: str) -> _registry.Registry:
        """Its entries that apply to a run of ``torch``."""
        return _registry.Registry(self.entries, torch)


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
    """One op in one mode in one run: its counts, failing stages and failing samples, and its
    records per kind of verdict (:data:`KINDS`)."""

    passed: int = 0
    failed: int = 0
    other: int = 0  #: skipped or not applicable
    stages: Counter[str] = dataclasses.field(default_factory=Counter)
    failing: list[SampleResult] = dataclasses.field(default_factory=list)
    kinds: Counter[str] = dataclasses.field(default_factory=Counter)
    #: What its panel lists: the records of a kind other than passed and skipped.
    listed: list[SampleResult] = dataclasses.field(default_factory=list)

    @property
    def kind(self) -> str:
        """The most urgent kind among its records."""
        return next((k.name for k in KINDS if self.kinds[k.name]), "skip")

    def signature(self) -> tuple[int, int, frozenset[str]]:
        """What the comparison compares: passed, checked, and which samples fail."""
        return self.passed, self.passed + self.failed, frozenset(r.key.sample_text for r in self.failing)


def cells(records: Sequence[SampleResult]) -> dict[tuple[str, str], Cell]:
    """(op id, mode) -> its cell."""
    out: dict[tuple[str, str], Cell] = defaultdict(Cell)
    for r in records:
        cell = out[(r.op_id, r.mode.value)]
        kind = kind_of(r)
        cell.kinds[kind] += 1
        if kind in _LISTED_KINDS:
            cell.listed.append(r)
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


class _Failing:
    """The failing samples behind the clickable cells, inlined once in the page as JSON (a page
    opened from file:// cannot fetch a file beside it). Runs, values and commands repeat across
    cells and samples, so each is stored once and referenced by its index; a cell is
    ``[run, op, mode, failed, checked, more, samples]``, a sample the index of the value of each
    field of a record (``fields``, as :data:`~optests._results.FIELDS` declares them; the message
    cut to its first line) and then of its command (-1: none). The script words the panel from
    them, reading fields by name, and names each sample's verdict as the legend does (``kinds``).
    The view by cause adds its own entries, ``[where, title, samples in all, more, samples]``."""

    def __init__(self) -> None:
        self.cells: list[list[Any]] = []
        self.causes: list[list[Any]] = []
        self._ids: dict[tuple[Configuration, str, str], int] = {}
        self._runs: dict[str, int] = {}
        self._values: dict[tuple[type, Any], int] = {}
        self._commands: dict[str, int] = {}

    def add(self, config: Configuration, run: Run, op: str, mode: str, cell: Cell) -> int:
        """The index of the cell's entry; the cell is added the first time."""
        key = (config, op, mode)
        if key not in self._ids:
            failing = sorted(cell.listed, key=lambda r: (r.sample if r.sample is not None else -1, r.key.transform))
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

    def add_cause(self, config: Configuration, run: Run, title: str, total: int, samples: Sequence[SampleResult]) -> int:
        """The index of a new entry for the samples of one cause in one configuration's latest run
        (``samples``: the first :data:`MAX_FAILING` of ``total``)."""
        where = self._runs.setdefault(f"run {run.id} ({run.date}), {config.label}", len(self._runs))
        self.causes.append([where, title, total, total - len(samples), [self._row(r) for r in samples]])
        return len(self.causes) - 1

    def _row(self, r: SampleResult) -> list[int]:
        """The index of each field's value, then of the command (-1: none)."""
        record = r.to_json()
        record["message"] = _diff.first_line(r.message, MESSAGE_CHARS)
        command = repro_command(r)
        return [
            *(self._values.setdefault((type(v), v), len(self._values)) for v in (record.get(f.name, f.default) for f in FIELDS)),
            self._commands.setdefault(command, len(self._commands)) if command is not None else -1,
        ]

    def script(self) -> str:
        data = {
            "cells": self.cells,
            "causes": self.causes,
            "kinds": {"": ["failed", _KIND["failed"].title], **{v: [k.name, k.title] for k in KINDS for v in k.verdicts}},
            "commands": list(self._commands),
            "fields": [f.name for f in FIELDS],
            "values": [v for _, v in self._values],
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

    @property
    def kinds(self) -> Counter[str]:
        """The latest run's records per kind of verdict."""
        out: Counter[str] = Counter()
        for c in self.cells.values():
            out.update(c.kinds)
        return out


@dataclasses.dataclass
class _Cause:
    """One cause over the latest run of each configuration (by section index): its failed
    samples, how many of them the registry does not expect (or none judged), the ops, and the
    first :data:`MAX_FAILING` samples."""

    name: str
    counts: Counter[int] = dataclasses.field(default_factory=Counter)
    new: Counter[int] = dataclasses.field(default_factory=Counter)
    ops: set[str] = dataclasses.field(default_factory=set)
    samples: dict[int, list[SampleResult]] = dataclasses.field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


class _Causes:
    """The causes of the failures of each configuration's latest run, added a run at a time."""

    def __init__(self) -> None:
        self.by_name: dict[str, _Cause] = {}

    def add(self, index: int, records: Sequence[SampleResult]) -> None:
        for r in records:
            if r.outcome is not Outcome.FAILED or not r.cause:
                continue
            c = self.by_name.get(r.cause)
            if c is None:
                c = self.by_name[r.cause] = _Cause(r.cause)
            c.counts[index] += 1
            c.new[index] += kind_of(r) in ("new", "failed")
            c.ops.add(r.op_id)
            listed = c.samples.setdefault(index, [])
            if len(listed) < MAX_FAILING:
                listed.append(r)


def _sections(
    history: History,
    groups: dict[Configuration, list[Run]],
    counts: dict[int, Counter[tuple[str, str]]],
    into: list[_Section],
    judge: Judge | None,
    causes: _Causes,
    judging: Counter[str],
) -> Iterator[str]:
    """``changes.json``'s text, a configuration at a time, as :func:`json.dumps` (sorted keys,
    indent 2) would write it whole; each configuration's section is added to ``into`` as its
    text is made, the causes of its latest run's failures to ``causes``, and to ``judging`` how
    many of its records ``judge`` judged (``judged``) and how many carry no verdict still
    (``unjudged``). One configuration's runs and diff are in memory at a time, and its changes
    are made into text one by one: memory is bounded by a run, not by the history."""
    yield '{\n  "configurations": ['
    for i, (config, runs) in enumerate(groups.items(), 1):
        latest = history.records(runs[-1])
        d = _diff.diff(history.records(runs[-2]), latest) if len(runs) > 1 else None
        latest, n = judged(latest, judge.registry(runs[-1].torch) if judge is not None else None)
        judging["judged"] += n
        judging["unjudged"] += sum(r.verdict is None for r in latest)
        modes = _modes({m for r in runs for m, _ in counts.get(r.id, Counter())})
        into.append(_Section(i, config, runs, modes, cells(latest), _PageDiff.of(d) if d is not None else None))
        causes.add(i, latest)
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
    kind = _KIND[cell.kind]
    why = ", ".join(f"{n} {s}" for s, n in cell.stages.most_common())
    title = ", ".join(f"{cell.kinds[k.name]} {k.title}" for k in KINDS if cell.kinds[k.name]) + (
        f" (failing stages: {why})" if why else ""
    )
    data = f' data-cell="{ref}"' if ref is not None else ""
    data += f' title="{_esc(title)}"' if cell.failed or cell.other or cell.listed else ""  # "4/4" says all there is
    tag = f' <span class="tag">{kind.tag}</span>' if kind.tag else ""
    return f'<td class="v-{kind.name}{marks}"{data}>{cell.passed}/{cell.passed + cell.failed}{arrow}{tag}</td>'


#: A history strip's square for an op in a run, by the most urgent kind among its samples there:
#: its letter (and CSS class), colour and what its tooltip says. ``x``: not checked.
_SQUARES: dict[str, tuple[str, str, str]] = {
    "new": ("n", "#d93025", "new failures"),
    "failed": ("f", "#f28b82", "samples failed, not judged"),
    "fixed": ("d", "#4285f4", "fixed: unexpected passes"),
    "flaky": ("k", "#a142f4", "flaky samples"),
    "xfail": ("e", "#f9ab00", "expected failures only"),
    "pass": ("p", "#81c995", "no sample failed"),
    "skip": ("x", "#e8eaed", "not checked"),
}


def _flagged_kinds(flagged: dict[int, Counter[tuple[str, str, str]]]) -> dict[tuple[int, str], set[str]]:
    """(run id, op id) -> the kinds of its samples that failed, were fixed or were flaky in that run."""
    out: dict[tuple[int, str], set[str]] = defaultdict(set)
    for run, counts in flagged.items():
        for op, verdict, _ in counts:
            out[(run, op)].add(_BY_VERDICT.get(verdict, "failed") if verdict else "failed")
    return out


def _strip(
    op: str,
    window: Sequence[Run],
    op_counts: dict[int, dict[str, tuple[int, int]]],
    kinds: dict[tuple[int, str], set[str]],
    latest: str,
) -> str:
    """The op over the last runs of its configuration, oldest first: a square per run, of the most
    urgent kind among its samples there (:data:`_SQUARES`; ``x`` where it was not checked), the
    latest as its cells show it (``latest``: judged by ``--registry`` too). A strip of one state
    is one element that CSS draws as squares, so a page of a thousand ops that never change stays
    small."""
    states = []
    for r in window[:-1]:
        c = op_counts[r.id].get(op)
        if not c or not c[0] + c[1]:
            states.append("x")
            continue
        found = kinds.get((r.id, op), set())
        states.append(_SQUARES[next((k.name for k in KINDS if k.name in found), "pass")][0])
    states.append(_SQUARES[latest][0])
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


def _matrix(
    s: _Section, op_counts: dict[int, dict[str, tuple[int, int]]], kinds: dict[tuple[int, str], set[str]], failing: _Failing
) -> str:
    window = s.runs[-STRIP_RUNS:]
    marks = s.diff.marks if s.diff is not None else {}
    ops = sorted({op for op, _ in s.cells}, key=lambda op: (op.lower(), op))
    body = []
    for op in ops:
        tds = []
        for mode in s.modes:
            c = s.cells.get((op, mode))
            mark = marks.get((op, mode), "")
            ref = failing.add(s.config, s.latest, op, mode, c) if c is not None and c.listed else None
            tds.append(_td(c, ref, f" {mark}" if mark else "", {"regressed": " ▼", "fixed": " ▲"}.get(mark, "")))
        here = [c for m in s.modes if (c := s.cells.get((op, m))) is not None]
        bad = any(c.failed for c in here)
        latest = next((k.name for k in KINDS if any(c.kinds[k.name] for c in here)), "skip")
        body.append(
            f'<tr data-op="{_esc(op)}" data-failing="{int(bad)}"><th>{_esc(op)}</th>'
            f'<td class="history">{_strip(op, window, op_counts, kinds, latest)}</td>{"".join(tds)}</tr>'
        )
    runs = ";".join(f"run {r.id}, {r.date[:10]}" for r in window)
    head = "".join(f"<th>{_esc(m)}</th>" for m in s.modes)
    return (
        f'<div class="filterable">{_controls("data-failing", "only ops with failures", len(ops))}'
        f'<table class="matrix" data-runs="{_esc(runs)}" style="--strip:{8 * len(window)}px"><thead><tr><th>op</th>'
        f'<th title="one square per run, oldest first, coloured by its most urgent verdict (see the legend)">'
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
                ref = failing.add(s.config, s.latest, op, mode, c) if c is not None and c.listed else None
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
    kinds = s.kinds
    verdicts = "".join(
        f'<span class="badge v-{k.name}" data-kind="{k.name}">{_esc(k.title)}: {kinds[k.name]}</span>'
        for k in KINDS
        if kinds[k.name]
    )
    return (
        f'<p class="counts"><span>{_esc(s.latest.samples)} samples</span>{outcomes}<span class="label">since the previous run:</span>'
        f'{versus}</p><p class="verdicts"><span class="label">verdicts:</span>{verdicts or "none"}</p>'
    )


def _flaky(s: _Section, flakes: Sequence[tuple[str, int, int, str]]) -> str:
    """The samples that were flaky in the last runs of this configuration: in how many of those
    that recorded them, and when last."""
    if not flakes:
        n = min(len(s.runs), STRIP_RUNS)
        return f'<p class="empty flaky">No sample was flaky in the last {_runs(n)} of this configuration.</p>'
    rows = "".join(
        f'<tr><td>{_esc(sample)}</td><td class="v-flaky">flaky in {_esc(n)} of {_runs(total)}</td><td>{_esc(last)}</td></tr>'
        for sample, n, total, last in flakes[:MAX_FLAKY]
    )
    more = f'<p class="more">and {len(flakes) - MAX_FLAKY} more flaky samples.</p>' if len(flakes) > MAX_FLAKY else ""
    return (
        f'<table class="flaky"><thead><tr><th>sample</th><th>flaky nights</th><th>last flaky</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>{more}"
    )


def _render_section(
    s: _Section,
    counts: dict[int, Counter[tuple[str, str]]],
    op_counts: dict[int, dict[str, tuple[int, int]]],
    kinds: dict[tuple[int, str], set[str]],
    failing: _Failing,
    flakes: Sequence[tuple[str, int, int, str]],
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
        f'<h3>Status by op and mode (run {_esc(latest.id)})</h3><p class="meta">Passed / checked samples, coloured and '
        'tagged by the most urgent verdict among them (see the <a href="#legend">legend</a>); ▼ new failures, '
        "▲ fixes since the previous run of this configuration; hover a cell for its verdicts and failing stages, click it "
        "for its samples and the command that checks them again.</p>"
        f"{_matrix(s, op_counts, kinds, failing)}"
        f"<h3>Flaky samples in the last {_runs(min(len(s.runs), STRIP_RUNS))} ({len(flakes)})</h3>{_flaky(s, flakes)}"
        f"<h3>Runs of this configuration</h3>{_runs_table(s.runs, counts, s.modes)}</section>"
    )


def _nav(sections: Sequence[_Section], counts: dict[int, Counter[tuple[str, str]]]) -> str:
    items = []
    for s in sections:
        failed = sum(n for (_, outcome), n in counts.get(s.latest.id, Counter()).items() if outcome == "failed")
        kinds = s.kinds
        items.append(
            f'<li><a href="#{s.anchor}">{_esc(s.config.label)}</a>: {_runs(len(s.runs))}, the latest run {_esc(s.latest.id)} '
            f"({_esc(s.latest.date[:10])}), {_esc(s.latest.samples)} samples, {_esc(failed)} failed "
            f"({kinds['new']} new, {kinds['xfail']} expected, {kinds['flaky']} flaky)</li>"
        )
    return f'<ul id="configurations">{"".join(items)}</ul>'


def _upstream(ref: str) -> str:
    """An upstream reference (``pytorch/pytorch#181606``) as a link to it; other text as text."""
    repo, _, number = ref.partition("#")
    if repo.count("/") == 1 and number.isdigit():
        return f'<a href="https://github.com/{_esc(repo)}/issues/{number}">{_esc(ref)}</a>'
    return _esc(ref)


def _cause_name(cause: str, copied: set[str]) -> str:
    """A known bug as ``known PyTorch bug: NAME``, linked to its repro (``findings/NAME.py``, copied
    beside the page), with its upstream issue; a signature as text."""
    bug = _causes.by_name(cause)
    if bug is None:
        return f'<code class="signature">{_esc(cause)}</code>'
    said = f"known PyTorch bug: {bug.name}"
    name = (
        f'<a class="known" href="{_esc(bug.finding)}">{_esc(said)}</a>'
        if bug.name in copied
        else f'<span class="known" title="{_esc(bug.finding)}">{_esc(said)}</span>'
    )
    extra = [f"<code>{_esc(bug.finding)}</code>"]
    if bug.upstream:
        extra.append(_upstream(bug.upstream))
    if bug.fixed_in:
        extra.append(f"fixed in {_esc(bug.fixed_in)}")
    return f'{name}<br><span class="meta">{_esc(bug.what)}; {", ".join(extra)}</span>'


def _nights(window: Sequence[Run], nights: dict[int, Counter[str]], cause: str) -> str:
    """The cause's failed samples in each of the last runs of a configuration, oldest first, as bars."""
    values = [nights.get(r.id, Counter())[cause] for r in window]
    top = max(values) or 1
    bars = "".join(f'<i style="height:{1 + round(13 * v / top)}px"></i>' for v in values)
    said = ", ".join(f"{v}" for v in values)
    return f'<span class="nights" title="failed samples per run, oldest first: {said}" data-nights="{said}">{bars}</span>'


def _cause_view(
    sections: Sequence[_Section], causes: _Causes, nights: dict[int, Counter[str]], failing: _Failing, copied: set[str]
) -> str:
    """Each cause of the latest runs' failures: per configuration, its failed samples (how many
    of them new), a bar per night, and a button that lists its samples; the ops it spans."""
    ranked = sorted(causes.by_name.values(), key=lambda c: (-c.total, c.name))
    if not ranked:
        return '<p class="empty" id="causes-none">No failures in the latest run of any configuration.</p>'
    labels = _short_labels([s.config for s in sections])
    head = "".join(f'<th title="{_esc(s.config.label)}">{_esc(label)}</th>' for s, label in zip(sections, labels))
    body = []
    for c in ranked[:MAX_CAUSES]:
        tds = []
        for s in sections:
            n, new = c.counts[s.index], c.new[s.index]
            strip = _nights(s.runs[-STRIP_RUNS:], nights, c.name)
            if not n:
                tds.append(f'<td class="count" data-count="0">0 {strip}</td>')
                continue
            samples = sorted(c.samples[s.index], key=lambda r: r.id)
            ref = failing.add_cause(s.config, s.latest, _causes.said(c.name), n, samples)
            what = f'<span class="bad">{new} new</span>' if new else '<span class="meta">none new</span>'
            tds.append(
                f'<td class="count" data-count="{n}"><button type="button" class="samples" data-cause="{ref}">'
                f"{n} sample{'s' if n != 1 else ''}</button> {what} {strip}</td>"
            )
        ops = sorted(c.ops, key=lambda op: (op.lower(), op))
        listed = ", ".join(_esc(op) for op in ops[:8]) + (f" and {len(ops) - 8} more" if len(ops) > 8 else "")
        body.append(
            f'<tr data-cause="{_esc(c.name)}"><td class="cause">{_cause_name(c.name, copied)}</td>'
            f'<td class="ops" title="{_esc(", ".join(ops))}">{len(ops)} op{"s" if len(ops) != 1 else ""}: {listed}</td>'
            f"{''.join(tds)}</tr>"
        )
    more = (
        f'<p class="more">Showing the {MAX_CAUSES} most frequent of {len(ranked)} causes.</p>' if len(ranked) > MAX_CAUSES else ""
    )
    return (
        f'<p class="meta">The failures of the latest run of each configuration, grouped by cause: a known PyTorch bug by '
        f"its name, else a signature (stage / transform or pattern / backend: the message with its values taken out). "
        f"Per configuration: its failed samples, how many of them are new failures (or not judged), and a bar per run "
        f"over its last {STRIP_RUNS} runs; click the count for the samples. {len(ranked)} causes.</p>"
        f'<table id="causes"><thead><tr><th>cause</th><th>ops</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>{more}'
    )


#: The counts a legend's cell of each kind shows: what such a cell could show.
_EXAMPLE = {"new": "0/4", "failed": "0/4", "fixed": "4/4", "flaky": "3/4", "xfail": "0/4", "pass": "4/4", "skip": "0/0"}


def _legend_squares() -> str:
    return ", ".join(f'<span class="strip"><i class="{c}"></i></span> {_esc(words)}' for c, _, words in _SQUARES.values())


def _legend(judge: Judge | None, judging: Counter[str]) -> str:
    """What each kind of cell means (a cell of each kind, with its word), the marks, and which
    registry judged the records that carry no verdict."""
    rows = "".join(
        f'<tr data-kind="{k.name}"><td class="v-{k.name} swatch">{_EXAMPLE[k.name]}'
        f"{f' <span class=tag>{k.tag}</span>' if k.tag else ''}</td>"
        f"<th>{_esc(k.title)}</th><td>{_esc(k.what)}</td></tr>"
        for k in KINDS
    )
    if judge is not None:
        judged_by = (
            f"Records that carry no verdict are judged here by <code>{_esc(judge.path)}</code>, under their run's torch "
            f"release: {judging['judged']} in the latest runs."
        )
    else:
        judged_by = "No registry was given (<code>--registry</code>): records that carry no verdict are not judged."
    unjudged = (
        f" {judging['unjudged']} records carry no verdict and are shown as failed, not judged." if judging["unjudged"] else ""
    )
    return (
        '<section id="legend"><h2>Legend</h2><p class="meta">A cell shows the passed / checked samples of an op in a mode, '
        "coloured and tagged by the most urgent verdict among them (in this order):</p>"
        f'<table class="legend"><tbody>{rows}</tbody></table>'
        '<p class="meta">▼ / ▲ after the counts: new failures / fixes since the previous run of the configuration. '
        f"History strips: a square per run of the op, oldest first, by the most urgent verdict among its samples in that run: "
        f"{_legend_squares()}.</p>"
        f'<p class="meta" id="judged-by">Verdicts are those each run recorded, judged by the registry it ran with. '
        f"{judged_by}{unjudged}</p></section>"
    )


_DETAIL = (
    '<aside id="detail" hidden><button id="detail-close" type="button" aria-label="close">close</button>'
    '<h3 id="detail-title"></h3><p class="meta" id="detail-where"></p>'
    '<p class="meta">Each command checks every sample of the op in that mode, dtype and device (and transform), '
    "as the run did; the sample is its line <code>sample N</code>.</p>"
    '<table id="detail-samples"><thead><tr><th>sample</th><th>verdict</th><th>stage</th><th>message</th><th>reproduce</th></tr></thead>'
    '<tbody></tbody></table><p class="more" id="detail-more"></p></aside>'
)

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:19px;margin:36px 0 8px;border-bottom:2px solid #ccc}
h3{font-size:16px;margin:22px 0 6px}h4{font-size:14px;margin:14px 0 4px}
.meta{color:#555}.empty{color:#777}table{border-collapse:collapse;margin:4px 0}
th,td{border:1px solid #ddd;padding:2px 8px;text-align:left;vertical-align:top}thead th{background:#f4f4f4}
.v-pass{background:#e6f4ea}.v-new{background:#f4a29b;color:#5b0f0a;font-weight:bold}.v-failed{background:#fce8e6}
.v-fixed{background:#c6dafc;color:#0b3a82}.v-flaky{background:#e4d0f5;color:#4a1a6b}.v-xfail{background:#fbefc4;color:#5a4300}
.v-skip{background:#eeeff1;color:#5f6368}td.none{color:#aaa}
.tag{display:inline-block;margin-left:4px;padding:0 3px;border:1px solid currentColor;border-radius:3px;font-size:11px;
line-height:14px;font-weight:bold;text-transform:uppercase;letter-spacing:.02em}
.v-flaky .tag{border-style:dashed}.v-xfail .tag{border-style:dotted}
.badge{display:inline-block;margin-right:8px;padding:0 6px;border-radius:3px}.label{color:#555;margin-right:8px}
#legend{border:1px solid #ccc;padding:4px 12px;margin:12px 0;background:#fafafa}#legend h2{margin-top:8px}
table.legend td.swatch{text-align:right;min-width:90px}
#causes td.count{white-space:nowrap}#causes td.ops{max-width:320px;font-size:12px}#causes code.signature{font-size:12px;white-space:pre-wrap}
.nights{display:inline-flex;align-items:flex-end;height:14px;vertical-align:middle;margin-left:4px}
.nights i{display:inline-block;width:4px;margin-right:1px;background:#c5221f}
button.samples{font:inherit;cursor:pointer}
@media print{*{-webkit-print-color-adjust:exact;print-color-adjust:exact}#detail{display:none}}td.regressed{outline:2px solid #c5221f;font-weight:bold}
td.fixed{outline:2px solid #188038}td.msg{font-family:ui-monospace,monospace;font-size:12px;white-space:pre-wrap;max-width:700px}
td.differs{box-shadow:inset 0 0 0 2px #e37400;font-weight:bold}td[data-cell]{cursor:pointer;text-decoration:underline dotted}
table.new_failure{border-left:4px solid #c5221f}table.fix{border-left:4px solid #188038}
.matrix td,#compare td{text-align:right;min-width:70px}.matrix td.history{text-align:left;min-width:0}.controls{margin:6px 0}.src{color:#777;font-size:12px}
.strip{display:inline-block;height:8px;white-space:nowrap;line-height:0}.strip i{display:inline-block;width:6px;height:8px;margin-right:2px}
%(strips)s
section.configuration{content-visibility:auto;contain-intrinsic-size:auto 3000px}svg .grid{stroke:#eee}svg .tick,svg .legend{font-size:11px;fill:#555}svg .series{fill:none;stroke-width:2}
.counts span{display:inline-block;margin-right:16px}.bad{color:#c5221f;font-weight:bold}.good{color:#188038;font-weight:bold}
#detail{position:fixed;left:24px;right:24px;bottom:0;max-height:45vh;overflow:auto;background:#fff;border:1px solid #999;
box-shadow:0 -4px 16px rgba(0,0,0,.2);padding:8px 16px}#detail-close{float:right;font-size:18px}
#detail td code{white-space:nowrap;font-size:12px}#detail td:nth-child(-n+3){white-space:nowrap}
#causes td.cause{max-width:560px}#causes td.ops{min-width:120px}
"""

_CSS = _CSS.replace(
    "%(strips)s",
    "".join(
        f".strip i.{c}{{background:{colour}}}.strip.all-{c}{{width:var(--strip);"
        f"background:repeating-linear-gradient(90deg,{colour} 0 6px,transparent 6px 8px)}}"
        for c, colour, _ in _SQUARES.values()
    ),
)

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
  function td(tr,text,code,cls){var c=document.createElement('td');if(cls)c.className=cls;if(code){var k=document.createElement('code');k.textContent=text;c.appendChild(k);}else{c.textContent=text;}tr.appendChild(c);}
  function fill(title,where,samples,more,whole){
    document.getElementById('detail-title').textContent=title;
    document.getElementById('detail-where').textContent=data.runs[where];
    var body=panel.querySelector('tbody');body.textContent='';
    samples.forEach(function(s){
      var tr=document.createElement('tr'),t=get(s,'transform'),k=s[s.length-1],v=get(s,'verdict')||'',op=get(s,'op')+(get(s,'variant')?'.'+get(s,'variant'):'');
      td(tr,(whole?op+' '+get(s,'mode')+' sample ':'')+get(s,'sample')+(t?' '+t:''));
      var kind=data.kinds[v]||['',v];td(tr,kind[1],false,'verdict v-'+kind[0]);td(tr,get(s,'stage')||'');td(tr,get(s,'message'));td(tr,k<0?data.no_command:data.commands[k],k>=0);body.appendChild(tr);
    });
    document.getElementById('detail-more').textContent=!more?'':whole?'and '+more+' more samples of this cause, not listed here.':'and '+more+' more samples, not listed here; the command checks them all.';
    panel.hidden=false;
  }
  function show(c){fill(c[1]+' '+c[2]+': '+c[3]+' of '+c[4]+' samples fail',c[0],c[6],c[5],false);}
  function showCause(c){fill(c[1]+': '+c[2]+' failed sample'+(c[2]===1?'':'s'),c[0],c[4],c[3],true);}
  document.addEventListener('click',function(e){
    var cell=e.target.closest('td[data-cell]'),cause=e.target.closest('[data-cause].samples');
    if(cell)show(data.cells[+cell.getAttribute('data-cell')]);
    if(cause)showCause(data.causes[+cause.getAttribute('data-cause')]);
  });
  document.getElementById('detail-close').addEventListener('click',function(){panel.hidden=true;});
  document.addEventListener('mouseover',function(e){
    var strip=e.target.closest('.strip');
    if(!strip||e.target.title)return;
    var runs=strip.closest('table').getAttribute('data-runs').split(';'),words=%(words)s;
    if(e.target===strip&&strip.className.indexOf('all-')>0){strip.title=words[strip.className.slice(-1)]+' in each of the last '+runs.length+' runs';return;}
    var i=Array.prototype.indexOf.call(strip.children,e.target);
    if(i>=0)e.target.title=runs[i]+': '+words[e.target.className];
  });
})();
"""
_JS = _JS.replace("%(words)s", json.dumps({c: words for c, _, words in _SQUARES.values()}, sort_keys=True))


def _copy_findings(causes: _Causes, out: Path) -> set[str]:
    """Copy the repro of each known bug among ``causes`` that :data:`FINDINGS` holds to
    ``out/findings/``, where the page links to it; the names of those copied."""
    copied = set()
    for name in causes.by_name:
        bug = _causes.by_name(name)
        source = FINDINGS / f"{name}.py"
        if bug is None or not source.is_file():
            continue
        (out / "findings").mkdir(exist_ok=True)
        write_atomic(out / bug.finding, source.read_bytes())
        copied.add(name)
    return copied


def build(history: History, out: Path, judge: Judge | None = None) -> Path:
    """Write ``index.html`` (and ``changes.json``, every change since the previous run of each
    configuration, and ``findings/``, the repro of each known bug the page names) into ``out``;
    ``judge`` judges the records that carry no verdict."""
    if out.exists() and not out.is_dir():
        raise DashboardError(f"{out}: not a directory (the dashboard is a folder: index.html and changes.json)")
    runs = history.runs()
    if not runs:
        raise DashboardError(f"{history.path}: the history holds no runs yet; ingest one with optests history ingest")
    counts = history.counts()
    index = out / "index.html"
    sections: list[_Section] = []
    causes, judging = _Causes(), Counter[str]()
    try:
        out.mkdir(parents=True, exist_ok=True)
        # each file atomically: a full disk or a kill leaves the old one, never half a page;
        # changes.json is written as its configurations are read, each section kept for the page
        write_atomic(out / "changes.json", _sections(history, by_configuration(runs), counts, sections, judge, causes, judging))
        copied = _copy_findings(causes, out)
    except WriteError as e:
        raise DashboardError(str(e)) from None
    except OSError as e:
        where = Path(e.filename) if isinstance(e.filename, str) else out
        raise DashboardError(f"{where}: {describe_os_error(where, e, writing=True)}") from None
    windows = [r for s in sections for r in s.runs[-STRIP_RUNS:]]
    op_counts = history.op_counts(windows)
    flagged = history.flagged(windows)
    nights: dict[int, Counter[str]] = {}
    for run, found in flagged.items():
        nights[run] = Counter()
        for (_, _, cause), n in found.items():
            if cause:
                nights[run][cause] += n
    kinds = _flagged_kinds(flagged)
    failing = _Failing()
    by_cause = _cause_view(sections, causes, nights, failing, copied)
    rendered = "".join(
        _render_section(s, counts, op_counts, kinds, failing, history.flaky_samples(s.runs[-STRIP_RUNS:])) for s in sections
    )
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
        f'{_legend(judge, judging)}<h2 id="by-cause">Failures by cause</h2>{by_cause}'
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
