"""The ``optests`` command. Every error is one line on stderr, and the exit status says which
kind it is: 2 for a usage or input error (the line names the file and what is wrong), 3 for an
internal error of optests (the line names the file holding the traceback), 130 for Ctrl-C and
141 for a reader that went away. 1 is kept for findings (``check``) and new failures (``diff``),
so a crash never reads as a result. :func:`main` is the one place that maps errors to these."""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import shlex
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import __version__, _causes, _durations, _registry, _results, _settings
from ._env import CompileCache, environment, now
from ._errors import InputError
from ._files import check_writable
from ._findings import Verdict
from ._key import DEVICES, DTYPES, MODES
from ._sanitize import printable, shell_join
from .errors import CommandError as CommandError

EXIT_USAGE, EXIT_INTERNAL = 2, 3  # 0: fine; 1: findings (check) or new failures (diff)
EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 128 + 2, 128 + 13  # as if killed by SIGINT, SIGPIPE, as shells report it
_EXIT_HELP = (
    "2 usage or input error, 3 internal error (a bug in optests; the traceback is saved to a file), 130 interrupted, "
    "141 the reader of its output went away (a closed pipe)"
)


#: How long ``optests report`` lets a sample's check, and its repro, run (seconds).
DEFAULT_REPORT_TIMEOUT = 300.0
#: How many causes of unexpected verdicts ``optests judge`` shows a block of, a file, without ``--all``.
_JUDGE_SHOWN = 10


def _read_results(path: str) -> tuple[dict[str, str], list[_results.SampleResult]]:
    return _results.read(Path(path))


def _accept(args: argparse.Namespace) -> int:
    loaded = []
    torch_versions = set()
    for path in args.results:
        env, records = _read_results(path)
        torch_versions.add(_registry.run_torch(path, env))
        loaded.append(records)
    if len(torch_versions) > 1:
        raise CommandError(
            f"the results come from different torch versions ({', '.join(sorted(torch_versions))}); accept them one version at a time"
        )
    merged = _results.merge(loaded)
    entries, new = _registry.accept_into(args.registry, merged.values(), torch_versions.pop())
    before, after = set(entries), set(new)
    print(
        f"{args.registry}: {len(merged)} samples from {len(args.results)} file(s); {len(after - before)} entries added or changed, {len(before - after)} removed or changed, {len(after)} in all"
    )
    return 0


def _judge(args: argparse.Namespace) -> int:
    from . import _grouped

    if not args.registry.exists():
        raise CommandError(f"{args.registry}: no registry there")
    entries = _registry.load(args.registry)
    samples = wrong = 0
    for path in args.results:
        env, records, whole = _results.read_with_status(Path(path))
        registry = _registry.Registry(entries, _registry.run_torch(path, env))
        verdicts = Counter[Verdict]()
        unexpected = []
        for r in records:
            verdict, _ = registry.judge(r)
            verdicts[verdict] += 1
            if not verdict.ok:
                unexpected.append(dataclasses.replace(r, verdict=verdict))
        samples, wrong = samples + len(records), wrong + len(unexpected)
        counts = ", ".join(f"{v.value} {verdicts[v]}" for v in Verdict if verdicts[v])
        # ids, messages and the torch version come from the file: no raw escapes
        print(
            printable(
                f"{path}: {len(records)} samples{'' if whole else ' (a partial run)'}, torch {env.get('torch', '?')}: {counts or 'none'}"
            )
        )
        groups = _grouped.group(unexpected, env=env)
        shown = groups if args.all else groups[:_JUDGE_SHOWN]
        for i, g in enumerate(shown, 1):
            head, spans, _ = _grouped.block_head(i, g)
            print(printable(f"  {head}"))
            print(printable(f"  {spans}"))
            listed = g.records if args.all else (g.representative,)
            for r in listed:
                said = f" [{r.stage}] {r.message.splitlines()[0]}" if r.stage and r.message else ""
                print(printable(f"     {r.id}{said}"))
            if len(listed) < g.count:
                print(f"     ... {g.count - len(listed)} more (--all lists them)")
        if len(shown) < len(groups):
            print(
                f"  ... {len(groups) - len(shown)} more causes, {sum(g.count for g in groups[len(shown) :])} samples (--all lists them)"
            )
    print(printable(f"{len(args.results)} file(s), {samples} samples: {wrong} not as {args.registry} expects"))
    return 1 if wrong else 0


def _check(args: argparse.Namespace) -> int:
    """``optests check``, under the compile cache it chose (``--compile-cache``)."""
    choice = _settings.parse_compile_cache_option("--compile-cache", args.compile_cache)
    from ._backends.inductor import check_compile_cache

    check_compile_cache("--compile-cache", choice)  # torch creates it as Dynamo is imported (below)
    with CompileCache(choice) as cache:
        return _check_under(args, cache)


def _check_under(args: argparse.Namespace, cache: CompileCache) -> int:
    start, started = time.perf_counter(), now()
    if args.json is not None:  # before the checks, rather than losing them at the end
        check_writable(args.json)
    from . import _author, _pipeline
    from ._pipeline import NOT_RUN

    sys.path.insert(0, os.getcwd())  # the author's modules, as `python -m` would find them
    modes = _settings.parse_choices("--modes", args.modes, MODES)
    dtypes = _settings.parse_choices("--dtypes", args.dtypes, DTYPES)
    timeout = _settings.parse_seconds("--timeout", args.timeout)
    reruns = _settings.parse_reruns("--reruns", args.reruns)
    devices = _settings.parse_choices("--device", args.device, DEVICES)
    if len(devices) > 1:
        raise _settings.SettingError(f"--device: one device, not {args.device!r}")
    if devices[0] == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise CommandError("--device cuda: CUDA is not available on this machine")
    entries, registry_name = _author.registry_of(args.registry)
    _author.import_modules(args.imports)
    samples = _author.load_samples(args.samples) if args.samples else None  # its module may register the op
    transforms = _author.transforms_of(args.transforms)
    backends = _author.backends_of(args.backends)
    targets = _author.resolve(args.ops)
    if samples is not None and len(targets) > 1:
        raise _author.AuthorError(f"--samples gives the samples of one op, but {len(targets)} ops were named")
    imported = time.perf_counter() - start

    import torch

    registry = _registry.Registry(entries, str(torch.__version__))
    checks, findings = [], []
    for target in targets:
        target_checks = _author.check_target(
            target, samples, modes=modes, dtypes=dtypes, device=devices[0], transforms=transforms, backends=backends,
            timeout=timeout, shrink=True, select=args.select, reruns=reruns, derived_after_death=args.derived_after_death,
            judged_by=registry, registry_name=registry_name,
        )  # fmt: skip
        derived = len({(c.dtype, c.sample, c.key.transform) for c in target_checks if c.key.transform})
        also = f" (and {derived} derived by {', '.join(transforms)})" if transforms else ""
        made = len({(c.dtype, c.sample) for c in target_checks if c.sample is not None})
        print(f"{target.name}: {made} samples{also} x {len(modes)} modes")
        for c in target_checks:
            assert c.verdict is not None  # judged by the registry (an empty one without --registry)
            if args.verbose:
                words = {
                    "passed": "PASS",
                    "xfailed": "XFAIL",
                    "unexpected_pass": "XPASS",
                    "skipped": "SKIP",
                    "not_applicable": "N/A",
                    "flaky": "FLAKY",
                }
                word = words.get(c.verdict.value, "FAIL")
                stage = f" [{c.result.stage}]" if c.result.stage else ""
                print(f"  {word:5} {c.mode:14} {c.dtype:8} sample {c.key.sample_text}{stage}  {c.result.duration:.2f} s")
            checks.append(c)
            if not c.verdict.ok:
                findings.append((target, c))
    planned_keys = [c.key for c in checks]
    stale = _pipeline.stale_entries(entries, planned_keys, transforms, str(torch.__version__)) if args.select == "all" else []
    if args.json:  # first: nothing below may lose it
        _results.write(args.json, [c.record() for c in checks], environment(started, cache.label))
    if args.verbose:
        for target, c in findings:
            print()
            for line in _finding_lines(args, target, c):
                print(line)
    else:
        if findings:
            _print_grouped(args, findings)
        _print_not_applicable(checks)
    outcomes = Counter(c.result.outcome.value for c in checks)
    took = time.perf_counter() - start
    print()
    not_run = sum(1 for c in checks if c.result.message.startswith(NOT_RUN))
    if not_run:
        print(
            f"{not_run} derived checks not run: the sample each derives from timed out or crashed (--derived-after-death runs them)"
        )
    for entry in stale:
        print(printable(f"{registry_name}: {_pipeline.stale_line(entry)}"))
    flaky = [c for c in checks if c.verdict is Verdict.FLAKY]
    for c in flaky:
        print(printable(_pipeline.flaky_line(c.record())))
    skipped = f", {outcomes['skipped']} skipped" if outcomes["skipped"] else ""
    skipped += f", {len(flaky)} flaky" if flaky else ""
    skipped += f", {outcomes['not_applicable']} not applicable" if outcomes["not_applicable"] else ""
    print(
        f"{len(checks)} checks: {outcomes['passed']} passed, {outcomes['failed']} failed{skipped}, {len(findings)} not expected; "
        f"{took:.1f} s ({imported:.1f} s imports)"
    )
    return 1 if findings else 0


def _finding_lines(args: argparse.Namespace, target: Any, c: Any, indent: str = "", settled: str = "") -> list[str]:
    """One finding of ``optests check`` as it prints it: the judgement, or the finding's summary,
    detail and standalone repro (written into ``--repro-dir``); ``settled``: what checking other
    samples of its cause again found, said where it was not checked again itself."""
    from . import _author, _pipeline

    error = c.result.error
    if error is None or c.verdict is not Verdict.UNEXPECTED_FAILURE:  # a death, a broken key, a stage or a pass not expected
        return [indent + printable(line) for line in c.judgement.splitlines()]
    lines = [f"[{error.stage}] {error.summary}"]
    if _causes.by_name(cause := c.record().cause) is not None:  # PyTorch's bug, not the op's
        lines.append(f"    {_causes.said(cause)}")
    lines += [f"    {line}" for line in error.detail.splitlines()]
    if c.reruns:
        lines.append(f"    {_pipeline.reproduced(c.record())}")
    elif settled:
        lines.append(f"    {settled}")
    if c.shrunk is not None:  # a resized finding: the repro takes the smallest sizes that fail alike
        lines.append(f"    shrunk: {c.shrunk[1]} fail at {error.stage} too; the repro uses them")
    try:
        script = _author.write_repro(args.repro_dir, target, c, args.imports)
    except OSError as e:  # the findings and --json stand without it
        lines.append(f"    repro: not written: {_results.describe_os_error(args.repro_dir, e, writing=True)}")
    else:
        lines.append(f"    repro: {shell_join(['python', str(script)])}")
    return [indent + printable(line) for line in lines]


def _print_grouped(args: argparse.Namespace, findings: Sequence[tuple[Any, Any]]) -> None:
    """``optests check``'s findings, one block per cause: the count, what it spans, the smallest
    sample's finding and repro, and where the rest are (``-v``, ``--json``)."""
    from . import _grouped, _pipeline
    from ._pipeline import input_elements

    by_id = {c.id: (target, c) for target, c in findings}
    sizes = {c.id: input_elements(c.shrunk[0] if c.shrunk is not None else c.inputs) for _, c in findings}
    groups = _grouped.group((c.record() for _, c in findings), sizes)
    print()
    print(_grouped.headline(groups))
    for i, g in enumerate(groups, 1):
        print()
        for line in _grouped.block_head(i, g, sizes):
            print(printable(line))
        target, c = by_id[g.representative.id]
        again = [r for r in g.records if r.reruns]  # where the cause settled first, not its smallest sample
        for line in _finding_lines(
            args, target, c, indent="   ", settled=_pipeline.settled_line(again, g.count) if again else ""
        ):
            print(line)
        if g.count > 1:
            where = f"; each record in {args.json}" if args.json else "; --json PATH records each"
            print(printable(f"   the other {g.count - 1}: -v lists each with its finding and repro{where}"))


#: How many reasons for not-applicable checks ``optests check`` prints without ``-v``.
NOT_APPLICABLE_SHOWN = 3


def _print_not_applicable(checks: Sequence[Any]) -> None:
    """Why checks were not applicable, one line a reason, most checks first: a user who asked
    for a dtype or a pattern the op cannot take is told so without ``-v``."""
    first: dict[str, str] = {}  # each reason (the message, its values taken out): its first message
    reasons: Counter[str] = Counter()
    for c in checks:
        if c.verdict is Verdict.NOT_APPLICABLE:
            reason = _causes.normalized(c.result.message)
            first.setdefault(reason, _causes.strip_context(c.result.message))
            reasons[reason] += 1
    if not reasons:
        return
    print()
    for reason, count in reasons.most_common(NOT_APPLICABLE_SHOWN):
        print(printable(f"N/A  {count} {'check' if count == 1 else 'checks'}: {first[reason]}"))
    if len(reasons) > NOT_APPLICABLE_SHOWN:
        print(f"N/A  and {len(reasons) - NOT_APPLICABLE_SHOWN} more reasons: -v lists each check")


def _merge(args: argparse.Namespace) -> int:
    env, records, complete = _results.merge_files(Path(p) for p in args.results)
    reruns = ""
    for path in args.rerun:
        records, replaced, outside = _results.apply_rerun(records, env, path)
        left_out = f"; {outside} of its samples not in the run, left out" if outside else ""
        reruns += f", {replaced} replaced by {path}{left_out}"
    _results.write(args.out, records, env, complete=complete)
    partial = "" if complete else " (partial: a journal or an interrupted run among them)"
    print(f"{args.out}: {len(records)} samples from {len(args.results)} file(s){reruns}{partial}")
    return 0


def _update_durations(args: argparse.Namespace) -> int:
    _, records, _ = _results.merge_files(Path(p) for p in args.results)
    durations = _durations.load(args.out)
    fresh = _durations.of(records)
    durations.update(fresh)
    _durations.dump(args.out, durations)
    print(f"{args.out}: {len(fresh)} durations updated, {len(durations)} in all")
    return 0


def _diff(args: argparse.Namespace) -> int:
    from . import _diff as diff

    (old_env, old, old_whole), (new_env, new, new_whole) = (_results.read_with_status(Path(p)) for p in (args.old, args.new))
    for path, whole in ((args.old, old_whole), (args.new, new_whole)):
        if not whole:  # its missing samples read as "removed": say why
            print(f"optests diff: note: {path} holds a partial run (interrupted, or a journal)", file=sys.stderr)
    d = diff.diff(old, new)
    if args.format == "json":
        sys.stdout.write(diff.render_json(d, args.by))
    else:
        render = diff.render_markdown if args.format == "markdown" else diff.render_text
        sys.stdout.write(render(d, args.old, args.new, old_env, new_env, args.by))
    return 1 if d.regressions else 0


def _report(args: argparse.Namespace) -> int:
    from . import _report as report

    timeout = _settings.parse_seconds("--timeout", args.timeout)
    rows = report.write(
        args.results, args.out, registry=args.registry, history=args.history, every=args.all, timeout=timeout
    )  # fmt: skip
    failures = sum(g.count for g, _ in rows)
    which = "" if args.all else " not expected"
    causes = f"{len(rows)} cause{'s' if len(rows) != 1 else ''}"
    print(
        printable(
            f"{args.out}: {causes} of {failures} failure{'s' if failures != 1 else ''}{which}, one file each; index.md lists them"
        )
    )
    return 0


def _history(args: argparse.Namespace) -> int:
    from . import _history as history

    def shown(line: str) -> None:  # what the history holds came from results files: no raw escapes
        print(printable(line))

    # every results file is read (and checked) before the database is opened, let alone created
    loaded = [(path, *_read_results(path)) for path in args.results] if args.history_command == "ingest" else []
    with history.History(args.db, create=args.history_command == "ingest") as db:
        if args.history_command == "ingest":
            for path, env, records in loaded:
                run, new = db.ingest(env, records, source=path, date=args.date)
                if new:
                    shown(f"{args.db}: ingested {path} as run {run.id} ({run.date}, torch {run.torch}, {run.samples} samples)")
                else:
                    shown(f"{args.db}: {path} is already run {run.id}; nothing to do")
        elif args.history_command == "list":
            counts, flaky = db.counts(), db.flaky_counts()
            for run in db.runs():
                c = counts.get(run.id)
                failed = sum(n for (_, outcome), n in c.items() if outcome == "failed") if c else 0
                of_them = f" ({flaky[run.id]} of them flaky)" if flaky[run.id] else ""
                shown(
                    f"run {run.id}  {run.date}  [{run.configuration.label}]  torch {run.torch}  {run.device}  "
                    f"{run.samples} samples, {failed} failed{of_them}  {run.source}"
                )
        elif args.history_command == "flaky":
            flakes = db.flakes()
            for f in flakes:
                shown(f"{f.sample}: flaky in {f.flaky} of {f.runs} runs, last {f.last}")
            n = len(flakes)
            shown(f"{args.db}: {n} sample{'' if n == 1 else 's'} flaky in some run, of {len(db.runs())} runs")
        else:
            like = history.configuration_of(*_read_results(args.like)) if args.like else None
            run = db.run(args.run_ref, like)
            _results.write(args.out, db.records(run), db.environment(run))
            shown(f"{args.out}: run {run.id} ({run.date}, {run.samples} samples)")
    return 0


def _dashboard(args: argparse.Namespace) -> int:
    from . import _dashboard as dashboard
    from . import _history as history

    start = time.perf_counter()
    judge = None
    if args.registry is not None:
        if not args.registry.is_file():
            raise CommandError(f"{args.registry}: no registry there")
        judge = dashboard.Judge(str(args.registry), tuple(_registry.load(args.registry)))
    with history.History(args.db) as db:
        index = dashboard.build(db, args.out, judge)
    size = index.stat().st_size
    print(f"{index}: {size / 1024:.0f} KiB, built in {time.perf_counter() - start:.1f} s")
    return 0


def _results_argument(parser: argparse.ArgumentParser, also: str = "") -> None:
    parser.add_argument("results", nargs="+", help=f"results files written with --optests-results{also}")


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """``optests check``'s flags of the run options that have one (:attr:`optests._settings.Option.cli_flag`),
    each with its declared help, metavar, type and author's default (none where that is empty; the
    help says it where there is one)."""
    for opt in _settings.OPTIONS:
        if not opt.cli_flag:
            continue
        if opt.flag:
            parser.add_argument(opt.cli_flag, action="store_true", help=opt.author_help)
        else:
            default = opt.author_value or None
            said = f"{opt.author_help} (default: %(default)s)" if default is not None else opt.author_help
            parser.add_argument(opt.cli_flag, default=default, metavar=opt.metavar, type=opt.cli_type or str, help=said)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="optests",
        description="Conformance harness for PyTorch operators under AOTAutograd.",
        epilog=f"Exit status: 0 success, 1 findings (check) or new failures (diff), {_EXIT_HELP}.",
    )
    p.add_argument("--version", action="version", version=f"optests {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    a = sub.add_parser(
        "accept",
        help="rewrite the expected-failures registry from results files (e.g. one per shard)",
        description="Merge results files (from shards or runs with --optests-results) and rewrite the registry from them: "
        "failing samples are recorded by stage, samples that now pass are removed, scopes not in the results are left alone.",
    )
    _results_argument(a)
    a.add_argument(
        "--registry", type=Path, default=Path(_registry.DEFAULT_PATH), help="registry to rewrite (default: %(default)s)"
    )
    a.set_defaults(run=_accept)
    c = sub.add_parser(
        "check",
        help="check ops (OpInfo names or globs, module_db modules such as nn.Linear, or ns::op custom ops) under AOTAutograd",
        description="Check each sample of each op in each mode; print the findings one block per cause (a known PyTorch "
        "bug by name, else the failure's signature): how many samples, the ops, modes and transforms it spans, and the "
        "smallest sample's finding with a standalone repro script (-v: a verdict per sample, and every finding). "
        f"Exit status: 0 no finding, 1 findings, {_EXIT_HELP}.",
    )
    c.add_argument(
        "ops",
        nargs="+",
        metavar="OP",
        help="an OpInfo name or glob (sin, 'nn.functional.conv*'), a module of module_db (nn.Linear, or "
        "nn.BatchNorm2d.eval for one training mode), a ModuleInfo of yours (MODULE:ATTRIBUTE), an nn.Module instance "
        "of yours (MODULE:ATTRIBUTE, with --samples) or a custom op (mylib::myop)",
    )
    c.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first (it registers your ops); repeatable",
    )
    c.add_argument(
        "--samples",
        metavar="MODULE:FUNC",
        help="FUNC() returns SampleInputs or (args, kwargs) pairs; required for a custom op without an OpInfo",
    )
    _add_run_options(c)
    c.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print a verdict line per sample and mode, and every finding with its repro (default: one block per cause)",
    )
    c.add_argument("--json", type=Path, metavar="PATH", help="write the results (the sweep's results format) to PATH")
    c.add_argument("--repro-dir", type=Path, default=Path("optests-repro"), help="where repro scripts go (default: %(default)s)")
    c.set_defaults(run=_check)
    m = sub.add_parser(
        "merge",
        help="merge the results files of one run's shards into one",
        description="Merge results files written by the shards of one run (pytest-split groups, -k splits, one per "
        "mode) into one results file. A sample recorded twice must agree; the shards must share a torch version. "
        "A rerun (some of the run's samples checked again, --optests-ids) replaces the run's records of its samples.",
    )
    _results_argument(m)
    m.add_argument(
        "--rerun",
        type=Path,
        action="append",
        default=[],
        metavar="RESULTS",
        help="a results file of some of the run's samples checked again: its records replace the run's (repeatable; "
        "later reruns win)",
    )
    m.add_argument("--out", type=Path, required=True, help="the merged results file to write")
    m.set_defaults(run=_merge)
    t = sub.add_parser(
        "durations",
        help="update the durations file (pytest-split's) from results files",
        description="Write each sample's check time from results files into pytest-split's durations file, which "
        "balances --splits groups and puts long ops first in every run. Entries for other tests are kept.",
    )
    _results_argument(t)
    t.add_argument("--out", type=Path, default=Path(".test_durations"), help="the durations file (default: %(default)s)")
    t.set_defaults(run=_update_durations)
    j = sub.add_parser(
        "judge",
        help="judge results files by the registry: what it does not expect",
        description="Judge each sample of each results file by the registry, under the file's own torch release, as a "
        "sweep judges it: verdicts counted per file, and the samples it does not expect (unexpected failures and "
        f"passes, changed stages) one block per cause (a known PyTorch bug, or the failure's signature), largest first. Exit status: 0 all as expected, 1 some not, {_EXIT_HELP}.",
    )
    _results_argument(j)
    j.add_argument("--registry", type=Path, default=Path(_registry.DEFAULT_PATH), help="the registry (default: %(default)s)")
    j.add_argument(
        "--all",
        action="store_true",
        help=f"every cause, and every sample of each (default: the first {_JUDGE_SHOWN} causes a file, one sample each)",
    )
    j.set_defaults(run=_judge)
    d = sub.add_parser(
        "diff",
        help="what changed between two results files",
        description="Compare two results files sample by sample: new failures, fixes, stage changes, samples added "
        f"or removed, grouped by op and mode. Exit status: 0 no new failure, 1 new failures, {_EXIT_HELP}.",
    )
    d.add_argument("old", help="the earlier results file")
    d.add_argument("new", help="the later results file")
    d.add_argument(
        "--format",
        choices=("text", "markdown", "json"),
        default="text",
        help="markdown suits a PR comment (default: %(default)s)",
    )
    d.add_argument(
        "--by",
        choices=("op", "cause"),
        default="op",
        help="group new failures, fixes and stage changes by op and mode (a line a sample), or by cause (a block a "
        "cause: a known PyTorch bug, or the failure's signature; json adds a causes list) (default: %(default)s)",
    )
    d.set_defaults(run=_diff)
    r = sub.add_parser(
        "report",
        help="write an issue-ready markdown file per cause of failure in results files",
        description="Group the failures of results files by cause (a known PyTorch bug, or the failure's signature) and "
        "write one markdown file per cause the registry does not expect, ready to paste as a GitHub issue: the "
        "title, what differs, the environment, the smallest failing sample's standalone repro with what it printed "
        "when run here, the affected ops and sample ids, the torch releases and dates it was seen in (--history), and "
        "a JSON block; and index.md listing every cause. The sample is made and checked again here, in a child "
        "process, so the op's database must load here.",
    )
    _results_argument(r, " or optests check --json")
    r.add_argument(
        "--registry",
        type=Path,
        help="report only the failures this registry does not expect (default: none is expected)",
    )
    r.add_argument(
        "--history", type=Path, metavar="DB", help="a history database: the torch releases and dates each cause was seen in"
    )
    r.add_argument("--all", action="store_true", help="every cause, expected by the registry or not")
    r.add_argument(
        "--timeout",
        default=str(int(DEFAULT_REPORT_TIMEOUT)),
        metavar="SECONDS",
        help="how long a sample's check, and its repro, may run (default: %(default)s)",
    )
    r.add_argument("--out", type=Path, required=True, help="the folder to write the reports, repros/ and index.md into")
    r.set_defaults(run=_report)
    h = sub.add_parser("history", help="store runs in a history database (SQLite) and read them back")
    hsub = h.add_subparsers(dest="history_command", required=True, metavar="COMMAND")
    hi = hsub.add_parser("ingest", help="add results files to the history (the same run twice is a no-op)")
    _results_argument(hi, " or optests check --json")
    hi.add_argument("--date", help="when the run happened (ISO 8601), for results files that do not record it")
    hl = hsub.add_parser("list", help="list the runs in the history, oldest first, each with its configuration")
    hf = hsub.add_parser(
        "flaky",
        help="list the samples that were flaky in some run, each with how many runs (its checks disagreed: --optests-reruns)",
    )
    he = hsub.add_parser("export", help="write one run back out as a results file (e.g. last night's, for optests diff)")
    he.add_argument(
        "--run",
        dest="run_ref",
        type=int,
        default=-1,
        help="a run id, or -1 for the latest, -2 for the one before (default: %(default)s)",
    )
    he.add_argument(
        "--like",
        metavar="RESULTS",
        help="count --run among the runs of this results file's configuration (torch series, device, dtype, "
        "transforms, backends): with -1, the last run to compare it with",
    )
    he.add_argument("--out", type=Path, required=True, help="the results file to write")
    for sp in (hi, hl, hf, he):
        sp.add_argument("--db", type=Path, required=True, help="the history database (SQLite file)")
        sp.set_defaults(run=_history)
    b = sub.add_parser("dashboard", help="build the static dashboard from a history database")
    b.add_argument("--db", type=Path, required=True, help="the history database (SQLite file)")
    b.add_argument("--out", type=Path, required=True, help="the folder to write index.html and changes.json into")
    b.add_argument(
        "--registry",
        type=Path,
        help="judge the records that carry no verdict (ingested unjudged) by this expected-failures registry, under each "
        "run's torch release (default: none; records keep the verdicts their runs gave them)",
    )
    b.set_defaults(run=_dashboard)
    return p


def _crash_report(argv: Sequence[str]) -> Path:
    """The traceback of the exception being handled, with what ran, in a file of its own."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    fd, name = tempfile.mkstemp(prefix=f"optests-crash-{os.getpid()}-{stamp}-", suffix=".txt")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(f"optests {__version__}, Python {platform.python_version()}, {platform.platform()}\n")
        f.write(f"command: optests {shlex.join(argv)}\n\n{traceback.format_exc()}")
    return Path(name)


def _quiet_stdout() -> None:
    """No second error when Python flushes a stdout whose reader went away, at exit."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand, and map what it raises to an exit status, here and nowhere else:
    :class:`~optests._errors.InputError` 2 (its one-line message), Ctrl-C 130, a reader that went
    away 141, anything else 3 (a bug in optests: its traceback saved to a file). Files are written
    atomically, so an interrupted command leaves each as it was or as it would be."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except InputError as e:
        print(printable(f"optests {args.command}: error: {e}"), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"optests {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (optests history list | head): not a bug
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as e:  # a bug in optests: never exit 1, which reads as a result
        text = str(e).strip().splitlines()
        what = f"{type(e).__name__}: {text[0]}" if text else type(e).__name__
        try:
            where = f"full traceback in {_crash_report(sys.argv[1:] if argv is None else argv)}"
        except OSError as report_error:
            traceback.print_exc()
            where = f"traceback above; it could not be saved: {report_error}"
        print(printable(f"optests {args.command}: internal error: {what} ({where})"), file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
