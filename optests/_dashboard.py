"""The nightly dashboard: one self-contained HTML page from the history database. Torch-free.

The page works offline (no CDN, no server, inline CSS, SVG and a few lines of script) and its
size does not grow with the sample count: the trend reads per-run counts, the matrix is per op and
mode, and samples are listed only where they changed since the previous run.
"""

from __future__ import annotations

import html
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

from . import _diff
from ._files import write_json_atomic
from ._history import History, Run
from ._results import describe_os_error

MODE_ORDER = ("static", "dynamic", "static-nofunc", "dynamic-nofunc")
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
#: Samples listed one by one per change kind; the rest are in changes.json beside the page.
MAX_LISTED = 2000


class DashboardError(ValueError):
    """The dashboard cannot be built (no runs yet) or written; the message names the path."""


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _modes(found: set[str]) -> list[str]:
    return [m for m in MODE_ORDER if m in found] + sorted(found - set(MODE_ORDER))


def pass_rate(counts: Counter[tuple[str, str]], mode: str) -> float | None:
    """Passed over passed + failed, in percent; skips and not-applicable records do not count."""
    passed, failed = counts[(mode, "passed")], counts[(mode, "failed")]
    return 100.0 * passed / (passed + failed) if passed + failed else None


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
        f'<svg id="trend" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
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
                f"run {run.id}, {_esc(run.date)}, torch {_esc(run.torch)}</title></circle>"
            )
        ly = top + 14 + 18 * k
        last = f"{points[-1][2]:.2f}%" if points else "-"
        parts.append(
            f'<rect x="{width - right + 12}" y="{ly - 9}" width="12" height="3" fill="{color}"/>'
            f'<text x="{width - right + 30}" y="{ly - 4}" class="legend">{_esc(mode)} {last}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _changes(d: _diff.RunDiff) -> str:
    out = [f'<p id="change-summary">{_esc(_diff.summary_line(d))}</p>']
    for kind in (_diff.Kind.NEW_FAILURE, _diff.Kind.FIX, _diff.Kind.STAGE_CHANGE, _diff.Kind.OUTCOME_CHANGE):
        changes = [c for group in d.grouped(kind).values() for c in group]
        out.append(f'<h3 id="{kind.value}">{_esc(_diff.TITLES[kind])} ({len(changes)})</h3>')
        if not changes:
            out.append('<p class="empty">None.</p>')
            continue
        rows = []
        for c in changes[:MAX_LISTED]:
            r = c.record
            rows.append(
                f"<tr><td>{_esc(r.op_id)}</td><td>{_esc(r.mode)}</td><td>{_esc(r.dtype)} {_esc(r.device)}</td>"
                f'<td>{_esc(r.key.sample_text)}</td><td>{_esc(c.transition)}</td><td class="msg">{_esc(c.message)}</td></tr>'
            )
        more = (
            f'<p class="more">Showing {MAX_LISTED} of {len(changes)}; all are in <a href="changes.json">changes.json</a>.</p>'
            if len(changes) > MAX_LISTED
            else ""
        )
        out.append(
            f'<table class="changes {kind.value}"><thead><tr><th>op</th><th>mode</th><th>dtype, device</th><th>sample</th>'
            f"<th>change</th><th>message</th></tr></thead><tbody>{''.join(rows)}</tbody></table>{more}"
        )
    for kind in (_diff.Kind.ADDED, _diff.Kind.REMOVED):
        groups = d.grouped(kind)
        total = len(d.of(kind))
        out.append(f'<h3 id="{kind.value}">{_esc(_diff.TITLES[kind])} ({total})</h3>')
        if not groups:
            out.append('<p class="empty">None.</p>')
            continue
        by_mode = Counter(mode for (_, mode), cs in groups.items() for _ in cs)
        ops = len({op for op, _ in groups})
        out.append(
            f"<p>{total} samples over {ops} ops: " + ", ".join(f"{_esc(m)} {n}" for m, n in sorted(by_mode.items())) + ".</p>"
        )
    return "".join(out)


def _matrix(rows: list[tuple[str, str, str, str | None, int]], modes: Sequence[str], d: _diff.RunDiff | None) -> str:
    cells: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    stages: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for op, mode, outcome, stage, n in rows:
        cells[(op, mode)][outcome] += n
        if stage and outcome != "passed":
            stages[(op, mode)][stage] += n
    marks: dict[tuple[str, str], str] = {}
    if d is not None:
        for change in d.changes:
            key = (change.record.op_id, change.record.mode)
            if change.kind is _diff.Kind.NEW_FAILURE:
                marks[key] = "regressed"
            elif change.kind is _diff.Kind.FIX and key not in marks:
                marks[key] = "fixed"
    ops = sorted({op for op, _ in cells}, key=lambda op: (op.lower(), op))
    head = "".join(f"<th>{_esc(m)}</th>" for m in modes)
    body = []
    for op in ops:
        tds, failing = [], False
        for mode in modes:
            c = cells.get((op, mode))
            if c is None:
                tds.append('<td class="none">·</td>')
                continue
            passed, failed = c["passed"], c["failed"]
            other = sum(c.values()) - passed - failed
            failing = failing or failed > 0
            cls = "fail" if failed else ("pass" if passed else "none")
            why = ", ".join(f"{n} {s}" for s, n in stages[(op, mode)].most_common())
            title = (
                f"{passed} passed, {failed} failed"
                + (f" ({why})" if why else "")
                + (f", {other} skipped or n/a" if other else "")
            )
            mark = marks.get((op, mode), "")
            arrow = {"regressed": " ▼", "fixed": " ▲"}.get(mark, "")
            tds.append(f'<td class="{cls} {mark}" title="{_esc(title)}">{passed}/{passed + failed}{arrow}</td>')
        body.append(f'<tr data-op="{_esc(op)}" data-failing="{int(failing)}"><th>{_esc(op)}</th>{"".join(tds)}</tr>')
    return (
        '<div class="controls"><input id="filter" type="search" placeholder="filter ops" aria-label="filter ops"> '
        '<label><input id="only-failing" type="checkbox"> only ops with failures</label> '
        f'<span id="shown">{len(ops)} ops</span></div>'
        f'<table id="matrix"><thead><tr><th>op</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
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
            f"<tr><td>{r.id}</td><td>{_esc(r.date)}</td><td>{_esc(r.torch)}</td><td><code>{_esc(r.torch_git[:12])}</code></td>"
            f"<td>{_esc(r.device)}</td><td>{_esc(r.python)}</td><td>{_esc(r.optests)}</td><td>{r.samples}</td>{''.join(rates)}"
            f'<td class="src">{_esc(r.source)}</td></tr>'
        )
    return (
        f'<table id="runs"><thead><tr><th>run</th><th>date</th><th>torch</th><th>git</th><th>device</th><th>python</th>'
        f"<th>optests</th><th>samples</th>{head}<th>source</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}h3{font-size:15px;margin:16px 0 6px}
.meta{color:#555}.empty{color:#777}table{border-collapse:collapse;margin:4px 0}
th,td{border:1px solid #ddd;padding:2px 8px;text-align:left;vertical-align:top}thead th{background:#f4f4f4}
td.pass{background:#e6f4ea}td.fail{background:#fce8e6}td.none{color:#aaa}td.regressed{outline:2px solid #c5221f;font-weight:bold}
td.fixed{outline:2px solid #188038}td.msg{font-family:ui-monospace,monospace;font-size:12px;white-space:pre-wrap;max-width:700px}
table.new_failure{border-left:4px solid #c5221f}table.fix{border-left:4px solid #188038}
#matrix td{text-align:right;min-width:90px}.controls{margin:6px 0}.src{color:#777;font-size:12px}
svg .grid{stroke:#eee}svg .tick,svg .legend{font-size:11px;fill:#555}svg .series{fill:none;stroke-width:2}
.counts span{display:inline-block;margin-right:16px}.bad{color:#c5221f;font-weight:bold}.good{color:#188038;font-weight:bold}
"""

_JS = """
(function(){
  var filter=document.getElementById('filter'),only=document.getElementById('only-failing'),shown=document.getElementById('shown');
  var rows=Array.prototype.slice.call(document.querySelectorAll('#matrix tbody tr'));
  function apply(){
    var q=filter.value.trim().toLowerCase(),n=0;
    rows.forEach(function(r){
      var ok=r.getAttribute('data-op').toLowerCase().indexOf(q)>=0&&(!only.checked||r.getAttribute('data-failing')==='1');
      r.style.display=ok?'':'none';if(ok)n++;
    });
    shown.textContent=n+' ops';
  }
  filter.addEventListener('input',apply);only.addEventListener('change',apply);
})();
"""


def build(history: History, out: Path) -> Path:
    """Write ``index.html`` (and ``changes.json``, every change since the previous run) into ``out``."""
    if out.exists() and not out.is_dir():
        raise DashboardError(f"{out}: not a directory (the dashboard is a folder: index.html and changes.json)")
    runs = history.runs()
    if not runs:
        raise DashboardError(f"{history.path}: the history holds no runs yet; ingest one with optests history ingest")
    counts = history.counts()
    latest = runs[-1]
    previous = runs[-2] if len(runs) > 1 else None
    matrix_rows = history.matrix(latest)
    modes = _modes({m for c in counts.values() for m, _ in c} | {row[1] for row in matrix_rows})
    d = _diff.diff(history.records(previous), history.records(latest)) if previous is not None else None

    latest_counts = counts.get(latest.id, Counter())
    totals: Counter[str] = Counter()
    for (_, outcome), n in latest_counts.items():
        totals[outcome] += n
    regress = len(d.regressions) if d is not None else 0
    fixes = len(d.of(_diff.Kind.FIX)) if d is not None else 0
    headline = (
        f'<p class="counts"><span>{latest.samples} samples</span>'
        + "".join(f"<span>{n} {_esc(o)}</span>" for o, n in sorted(totals.items()))
        + (
            f'<span class="{"bad" if regress else "good"}" id="regressions-count">{regress} new failures</span>'
            f'<span class="good" id="fixes-count">{fixes} fixes</span>'
            if d is not None
            else "<span>first run: nothing to compare</span>"
        )
        + "</p>"
    )
    since = (
        f"<h2>Since the previous run (run {previous.id}, {_esc(previous.date)})</h2>{_changes(d)}"
        if previous is not None and d is not None
        else '<h2>Since the previous run</h2><p class="empty">This is the first run in the history.</p>'
    )
    page = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">'
        f"<title>optests: run {latest.id}, {_esc(latest.date[:10])}</title><style>{_CSS}</style></head><body>"
        f"<h1>optests dashboard</h1>"
        f'<p class="meta" id="latest">Latest: run {latest.id}, {_esc(latest.date)}, torch {_esc(latest.torch)} '
        f"(<code>{_esc(latest.torch_git[:12])}</code>), {_esc(latest.device)}, Python {_esc(latest.python)}, "
        f"optests {_esc(latest.optests)}. {len(runs)} runs in the history.</p>{headline}"
        f"<h2>Pass rate per mode</h2>{_plot(runs, counts, modes)}"
        f"{since}"
        f'<h2>Status by op and mode (run {latest.id})</h2><p class="meta">Passed / checked samples; '
        "▼ new failures, ▲ fixes since the previous run; hover a cell for its failing stages.</p>"
        f"{_matrix(matrix_rows, modes, d)}"
        f"<h2>Runs</h2>{_runs_table(runs, counts, modes)}"
        f"<script>{_JS}</script></body></html>\n"
    )
    index = out / "index.html"
    changes = _diff.to_json(d) if d is not None else {"summary": {}, "changes": []}
    changes["old_run"] = previous.id if previous is not None else None
    changes["new_run"] = latest.id
    try:
        out.mkdir(parents=True, exist_ok=True)
        index.write_text(page, encoding="utf-8")
        write_json_atomic(out / "changes.json", changes)
    except OSError as e:
        where = Path(e.filename) if isinstance(e.filename, str) else out
        raise DashboardError(f"{where}: {describe_os_error(where, e, writing=True)}") from None
    return index
