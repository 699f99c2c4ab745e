"""``optests report``: one issue-ready markdown file per cause of failure, and an index.

A cause (:mod:`optests._causes`) groups the failures of results files across samples, ops, modes
and dtypes. For each cause the registry does not expect (every cause, with ``--all``) the report
holds what a PyTorch engineer needs to act on it: a title (a known bug's one-line ``what``, else
the signature), what differs, the environments of the runs that showed it, the smallest failing
sample's standalone repro inline with what it printed when the report was made, the affected ops
and sample ids, the torch releases and dates it was seen in (a history database, where given), and
a JSON block of the same facts. The smallest sample is the one with the fewest input elements
(its base sample's, as the op database makes it again); a ``resized`` sample is shrunk to the
smallest sizes that still fail at its stage, as ``optests check`` shrinks it, and a sample as made
to the smallest sizes (replaced as ``resized`` replaces them) whose failure has the same cause.

The repro needs the sample again: the record's op is found in its database and the sample made
and checked again here (:func:`optests._author.run_planned`, in an isolated child). A record whose
op cannot be found here, or whose sample cannot be made, gets a report that says why, without a
repro. Every file is written atomically (:func:`optests._files.write_atomic`), ``index.md`` last,
also when the report is stopped before its end (it then says how many causes have no file).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _causes, _registry, _results
from ._files import write_atomic
from ._findings import Outcome
from ._grouped import Group, group, listed
from ._key import transform_name
from ._known import CATALOG_VERSION
from ._results import SampleResult
from ._sanitize import printable
from .errors import ReportError as ReportError

#: How many sample ids a report lists (the JSON block has them all).
IDS_LISTED = 20
#: How many lines of a repro's output a report quotes (its last ones).
OUTPUT_LINES = 60
#: The seconds a repro may run (and a sample's check again, in its child) by default.
DEFAULT_TIMEOUT = 300.0


@dataclass(frozen=True)
class Loaded:
    """One results file as the report reads it."""

    path: str
    env: dict[str, str]
    records: list[SampleResult]

    @functools.cached_property
    def ids(self) -> frozenset[str]:
        return frozenset(r.id for r in self.records)


@dataclass
class Repro:
    """The smallest failing sample of a cause, and its standalone repro as it ran here."""

    #: The sample's id; its input elements, where the sample could be made again.
    sample: str
    elements: int | None = None
    #: A ``resized`` sample's shrunk sizes (``sizes 3->2``), where found.
    shrunk: str = ""
    #: The script's file name in ``repros/`` and its text ("": no runnable repro).
    name: str = ""
    script: str = ""
    #: A data file the script loads from beside it ("" if none).
    saved: str = ""
    #: What the script printed (stdout and stderr, its last :data:`OUTPUT_LINES` lines).
    output: str = ""
    #: One sentence: reproduced, not reproduced here, failed to run, or why there is no repro.
    status: str = ""
    #: The cause of the sample's failure here, where it failed otherwise than recorded.
    here: str = ""


def load(paths: Sequence[str]) -> list[Loaded]:
    """Each results file, read and checked (a missing or malformed one is an :class:`InputError`)."""
    return [Loaded(p, *_results.read(Path(p))) for p in paths]


def failures(loaded: Sequence[Loaded], registry: Path | None, every: bool) -> list[tuple[SampleResult, Loaded]]:
    """The failed records to report: those the registry does not expect (each file judged under its
    own torch release; without a registry, none is expected), or all of them (``every``)."""
    entries = _registry.load(registry) if registry is not None else []
    out = []
    for f in loaded:
        judge = _registry.Registry(entries, _registry.run_torch(f.path, f.env))
        for r in f.records:
            if r.outcome is not Outcome.FAILED:
                continue
            verdict, _ = judge.judge(r)
            if every or not verdict.ok:
                out.append((r, f))
    return out


def file_name(cause: str) -> str:
    """The report's file name of a cause: a known bug's name, else the signature's stage, family
    and backend and a hash of the whole (stable across runs)."""
    if _causes.by_name(cause) is not None:
        return f"{cause}.md"
    head = cause.split(": ", 1)[0]
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in head.replace("/", "-"))
    return f"{safe}-{hashlib.sha256(cause.encode()).hexdigest()[:10]}.md"


def title(cause: str) -> str:
    bug = _causes.by_name(cause)
    return bug.what if bug is not None else cause


# -- the smallest sample, and its repro --------------------------------------------------------------


def _refs(dbs: Iterable[str]) -> dict[tuple[str, str], Any]:
    """The ops of the databases that load here, by (database, op id)."""
    from . import _opinfo

    out: dict[tuple[str, str], Any] = {}
    for db in sorted(set(dbs)):
        try:
            refs = _opinfo.all_ops([db])
        except Exception:  # a user's database that does not import here: its ops are not found
            continue
        for r in refs:
            out.setdefault((db, r.id), r)
    return out


def sizes(records: Iterable[SampleResult], refs: Mapping[tuple[str, str], Any]) -> dict[str, int]:
    """Each record's input elements (its base sample's, made again), where the sample can be made."""
    import torch

    from . import _opinfo
    from ._pipeline import input_elements

    out: dict[str, int] = {}
    for r in records:
        ref = refs.get((r.db, r.op_id))
        dtype = getattr(torch, r.dtype, None)
        if ref is None or r.sample is None or not isinstance(dtype, torch.dtype):
            continue
        try:
            samples = _opinfo.cached_samples(ref, r.device, dtype)
            sample = samples[r.sample]
        except Exception:  # no such sample here (another torch), or its generator fails here
            continue
        out[r.id] = input_elements((sample.args, sample.kwargs))
    return out


def _target(ref: Any) -> Any:
    from . import _author, _opinfo

    op = _opinfo.opinfo(ref)
    return _author.Target(ref.name, op.op, op, ref.db)


def make_repro(r: SampleResult, refs: Mapping[tuple[str, str], Any], work: Path, timeout: float) -> Repro:
    """Check ``r``'s sample again (shrunk where it can be), write its standalone repro into
    ``work`` and run it there (a subprocess, ``timeout`` seconds at most)."""
    from . import _author

    repro = Repro(r.id)
    ref = refs.get((r.db, r.op_id))
    if ref is None:
        where = f"in {r.db}" if r.db else "in any database optests knows (a custom op of the run's own)"
        repro.status = f"No runnable repro: the op {r.op_id} is not found {where} here, so its sample cannot be made again."
        return repro
    target = _target(ref)
    family = transform_name(r.transform)
    try:
        planned = _author.plan(
            target, None, modes=[str(r.mode)], dtypes=[r.dtype], device=r.device, transforms=[family] if family else "none",
            backends=[r.key.backend],
        )  # fmt: skip
        p = next((p for p in planned if p.key.id == r.id and p.base is not None), None)
        if p is None:
            repro.status = f"No runnable repro: this torch makes no sample {r.id}."
            return repro
        (c,) = _author.run_planned(target, [p], timeout=timeout, shrink=True, shrink_alike=True)
    except Exception as e:  # the op, its samples or the backend fail here otherwise
        repro.status = f"No runnable repro: checking the sample again here raised {type(e).__name__}: {_first(str(e))}"
        return repro
    from ._pipeline import input_elements

    repro.elements = input_elements(c.shrunk[0] if c.shrunk is not None else c.inputs)
    repro.shrunk = c.shrunk[1] if c.shrunk is not None else ""
    here = c.record()
    if here.cause != r.cause:
        repro.here = here.cause or str(here.outcome)
    if c.result.error is None:
        said = f"{here.stage}: {_first(here.message)}" if here.stage else str(here.outcome)
        repro.status = f"No runnable repro: the sample did not fail with a finding here ({said})."
        return repro
    try:
        script = _author.write_repro(work, target, c)
    except Exception as e:  # an input with no literal, a func with no importable name
        repro.status = f"No runnable repro: the script could not be written: {type(e).__name__}: {_first(str(e))}"
        return repro
    repro.name = script.name
    repro.script = script.read_text(encoding="utf-8")
    saved = script.with_suffix(".pt")
    repro.saved = saved.name if saved.exists() else ""
    repro.status, repro.output = run_repro(script, timeout)
    return repro


def run_repro(script: Path, timeout: float) -> tuple[str, str]:
    """Run a repro script where it lies; one sentence on how it went, and what it printed."""
    if _imports_optests(script.read_text(encoding="utf-8")):
        return "The repro imports optests: it is not standalone, and was not run.", ""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    try:
        done = subprocess.run(
            [sys.executable, script.name],
            cwd=script.parent,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"The repro ran past {timeout:g} s and was stopped.", ""
    output = "\n".join((done.stdout + done.stderr).rstrip().splitlines()[-OUTPUT_LINES:])
    if done.returncode == 1 and "REPRODUCED" in done.stdout:
        return "The repro reproduces it (exit status 1).", output
    if done.returncode == 0:
        return "The repro did not reproduce it here (exit status 0).", output
    return f"The repro failed to run (exit status {done.returncode}).", output


def _imports_optests(source: str) -> bool:
    """Whether a script imports optests (a statement, not a mention in a comment or docstring)."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        if any(n == "optests" or n.startswith("optests.") for n in names):
            return True
    return False


def _first(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0][:300] if lines else ""


# -- the history --------------------------------------------------------------------------------------


def seen_in(history: Path, causes: set[str]) -> dict[str, list[tuple[str, str]]]:
    """Per cause: the (torch, date) of each run of the history that showed it."""
    from . import _history

    out: dict[str, list[tuple[str, str]]] = {}
    with _history.History(history) as db:
        for run in db.runs():
            env = db.environment(run)
            shown = {_causes.of(r, env) for r in db.records(run) if r.outcome is Outcome.FAILED} & causes
            for cause in shown:
                out.setdefault(cause, []).append((run.torch, run.date))
    return out


# -- the files ----------------------------------------------------------------------------------------


def _environment_lines(envs: Sequence[Mapping[str, str]]) -> list[str]:
    lines = []
    for env in envs:
        cuda = f", CUDA {env['cuda']}" if env.get("cuda") else ""
        cpu = env.get("cpu") or "not recorded"
        lines.append(
            f"- torch {env.get('torch', '?')}{cuda} ({env.get('torch_git', '') or 'git version not recorded'}), "
            f"Python {env.get('python', '?')}, OS {env.get('platform', '?')}, CPU {cpu}; "
            f"optests {env.get('optests', '?')}, run {env.get('date', '?')}"
        )
    return lines


def _fence(text: str, lang: str = "") -> list[str]:
    """``text`` in a code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in text.split("\n") for run in _backtick_runs(run)), default=0)
    ticks = "`" * max(3, longest + 1)
    return [f"{ticks}{lang}", text.rstrip("\n"), ticks]


def _backtick_runs(line: str) -> list[str]:
    runs, current = [], ""
    for ch in line:
        if ch == "`":
            current += ch
        elif current:
            runs.append(current)
            current = ""
    return runs + ([current] if current else [])


def render(
    g: Group, loaded: Sequence[Loaded], repro: Repro, seen: Sequence[tuple[str, str]] | None
) -> tuple[str, dict[str, Any]]:
    """One cause's report (markdown) and its machine-readable facts."""
    bug = _causes.by_name(g.cause)
    rep = g.representative
    spans = g.spans()
    files = _files_of(g, loaded)
    envs = list({json.dumps(f.env, sort_keys=True): f.env for f in loaded if f.path in files}.values())
    lines = [f"# {printable(title(g.cause))}", ""]
    if bug is not None:
        upstream = f", upstream {bug.upstream}" if bug.upstream else ", not filed upstream yet"
        fixed = f", fixed in {bug.fixed_in}" if bug.fixed_in else ""
        lines += [f"A known PyTorch bug: `{bug.name}` (its repro: `{bug.finding}`{upstream}{fixed}).", ""]
    stage = rep.stage.value if rep.stage else "?"
    lines += [
        "## What differs",
        "",
        f"Under AOTAutograd ({', '.join(spans['backends'])}), at the `{stage}` stage: {printable(_first(rep.message))}",
        "",
        f"Cause signature: `{printable(_causes.signature(rep.key, rep.stage, rep.message))}`",
        "",
        "## Environment",
        "",
        *_environment_lines(envs),
        "",
        "## Smallest failing sample",
        "",
    ]
    size = f" ({repro.elements} input elements)" if repro.elements is not None else ""
    shrunk = f"; shrunk ({repro.shrunk}) to sizes that fail alike, which the repro uses" if repro.shrunk else ""
    lines += [f"`{printable(repro.sample)}`{size}{shrunk}.", ""]
    if repro.here:
        lines += [f"Checked again here it fails otherwise: `{printable(repro.here)}`.", ""]
    lines += [repro.status, ""]
    if repro.script:
        saved = f" It loads `{repro.saved}` from beside it (in `repros/`)." if repro.saved else ""
        lines += [
            f"The standalone repro (`repros/{repro.name}`: it needs torch, not optests).{saved}",
            "",
            "<details><summary>repro script</summary>",
            "",
            *_fence(repro.script, "python"),
            "",
            "</details>",
            "",
        ]
    if repro.output:
        shown = "\n".join(printable(line) for line in repro.output.splitlines())
        lines += ["What it printed:", "", *_fence(shown, "text"), ""]
    by_op = Counter(r.op_id for r in g.records)
    ids = [r.id for r in g.records]
    lines += [
        "## Affected",
        "",
        f"{g.count} sample{'s' if g.count != 1 else ''} of {len(by_op)} op{'s' if len(by_op) != 1 else ''}: "
        + ", ".join(f"`{printable(op)}` ({n})" for op, n in by_op.most_common()),
        "",
        f"Modes {', '.join(spans['modes'])}; dtypes {', '.join(spans['dtypes'])}; transforms "
        f"{', '.join(spans['transforms'])}; backends {', '.join(spans['backends'])}.",
        "",
        f"Sample ids ({min(len(ids), IDS_LISTED)} of {len(ids)}):",
        "",
        *(f"- `{printable(i)}`" for i in ids[:IDS_LISTED]),
        "",
        "## Seen in",
        "",
    ]
    if seen is None:
        runs = sorted({(f.env.get("torch", "?"), f.env.get("date", "?")) for f in loaded if f.path in files})
        lines += [f"- torch {t}, {d} (the results reported; `--history DB` lists every run)" for t, d in runs]
    elif seen:
        lines += [f"- torch {t}, {d}" for t, d in sorted(set(seen), key=lambda td: (td[1], td[0]))]
    else:
        lines.append("- in no run of the history")
    facts: dict[str, Any] = {
        "cause": g.cause,
        "known": bug is not None,
        "title": title(g.cause),
        "count": g.count,
        "ops": dict(sorted(by_op.items())),
        **{k: v for k, v in spans.items() if k != "ops"},
        "ids": ids,
        "smallest": {
            "id": repro.sample,
            "elements": repro.elements,
            "shrunk": repro.shrunk,
            "repro": repro.name,
            "status": repro.status,
        },
        "environments": [dict(e) for e in envs],
        "seen_in": [{"torch": t, "date": d} for t, d in sorted(set(seen or ()), key=lambda td: (td[1], td[0]))],
        "catalog_version": CATALOG_VERSION,
    }
    if bug is not None:
        facts.update(finding=bug.finding, upstream=bug.upstream, fixed_in=bug.fixed_in, releases=list(bug.releases))
    lines += ["", "## Machine-readable", "", *_fence(json.dumps(facts, indent=2, sort_keys=True), "json"), ""]
    return "\n".join(lines), facts


def _files_of(g: Group, loaded: Sequence[Loaded]) -> set[str]:
    ids = {r.id for r in g.records}
    return {f.path for f in loaded if ids & f.ids}


def index(rows: Sequence[tuple[Group, str]], loaded: Sequence[Loaded], unexpected: bool, causes: int | None = None) -> str:
    """The index of the cause files written (``rows``); ``causes``, where more were to be written
    (a report stopped before its end), says how many, so the index never passes for the whole."""
    which = "the registry does not expect" if unexpected else "of every failure"
    failures = sum(g.count for g, _ in rows)
    lines = [
        "# optests report",
        "",
        f"{failures} failure{'s' if failures != 1 else ''} {which}, {len(rows)} cause{'s' if len(rows) != 1 else ''}, "
        f"from {', '.join(f'`{printable(f.path)}`' for f in loaded)}.",
        "",
    ]
    if causes is not None and causes > len(rows):
        lines += [
            f"**Stopped after {len(rows)} of {causes} causes**: {causes - len(rows)} "
            f"{'has' if causes - len(rows) == 1 else 'have'} no file here; run the report again for every cause.",
            "",
        ]
    lines += [
        "| cause | samples | ops | report |",
        "|---|---:|---|---|",
    ]
    for g, name in rows:
        cause = _causes.said(g.cause).replace("|", "\\|")
        ops = listed(g.spans()["ops"], 3).replace("|", "\\|")
        lines.append(f"| {printable(cause)} | {g.count} | {printable(ops)} | [{name}]({name}) |")
    return "\n".join(lines) + "\n"


def write(
    paths: Sequence[str],
    out: Path,
    *,
    registry: Path | None = None,
    history: Path | None = None,
    every: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[tuple[Group, str]]:
    """Write the report of ``paths`` into ``out`` (see the module's docstring); returns each cause's
    group and file name, largest first."""
    if out.exists() and not out.is_dir():
        raise ReportError(f"--out {out}: not a folder")
    loaded = load(paths)
    if history is not None and not history.exists():
        raise ReportError(f"--history {history}: no such file")
    chosen = failures(loaded, registry, every)
    groups = group((r for r, _ in chosen), by_verdict=False)
    refs = _refs(r.db for r, _ in chosen) if groups else {}
    seen = seen_in(history, {g.cause for g in groups}) if history is not None and groups else None
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ReportError(f"--out {out}: cannot make the folder: {e.strerror or e}") from None
    rows: list[tuple[Group, str]] = []
    work = Path(tempfile.mkdtemp(prefix="optests-report-"))
    try:
        for g in groups:
            small = sizes(g.records, refs)
            ranked = group(g.records, small, by_verdict=False)[0]  # its representative: the smallest
            repro = make_repro(ranked.representative, refs, work, timeout)
            if repro.elements is None and ranked.representative.id in small:
                repro.elements = small[ranked.representative.id]
            name = file_name(g.cause)
            text, _ = render(ranked, loaded, repro, None if seen is None else seen.get(g.cause, []))
            if repro.name:
                for produced in (repro.name, repro.saved):
                    if produced:
                        write_atomic(out / "repros" / produced, (work / produced).read_bytes())
            write_atomic(out / name, text.encode())
            rows.append((g, name))
    finally:
        try:  # last, and also when stopped (Ctrl-C, an error): an index of the files written, saying so
            write_atomic(out / "index.md", index(rows, loaded, not every, len(groups)).encode())
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return rows
