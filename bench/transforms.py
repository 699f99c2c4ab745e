"""What each input transform and call pattern costs and finds, against the base samples of the same run.

    python bench/transforms.py                      # the subset of bench/speed.py (38 ops), static and
                                                    # dynamic, every transform and pattern, -n 2
    python bench/transforms.py --transforms tangents,backward
                                                    # the same, deriving only with these (the base is always run)
    python bench/transforms.py --transforms sequence --ops sin,add,sum,matmul,nn.functional.relu --select first:2
                                                    # one pattern over a few ops (the first two samples of
                                                    # each): its cost as a ratio of the base check's
    python bench/transforms.py --ops abs,gather,bmm,floor_divide --transforms special,tangents,out --by-index
                                                    # a few ops, each index of a transform priced alone
                                                    # (tangents-3 beside tangents-0 to -2, special-0 to -8)
    python bench/transforms.py --transforms func,checkpoint,hooks,inplace-between,rng --ops sin,mul,matmul,nn.functional.dropout
                                                    # what users wrap around the call, priced on a few ops
    python bench/transforms.py --results F... --wall SECONDS
                                                    # a report on runs already made, e.g. the groups of
                                                    # the full transform sweep (--wall: their summed wall time)

For each transform and each call pattern (they share the axis: a pattern derives samples too),
over the samples it derives in the run: how many (and per base sample), how
many are not applicable (eager fails on them), their check time (the sum of their recorded
durations) against the base samples' check time, how many pass, fail (by stage), and how many are
new findings (the derived sample fails where its base sample, in the same mode, passes). Then the
sweep time each transform adds: its check time plus its samples times the harness's overhead per
sample (measured in the same run: wall time x workers, less all durations, over all samples),
divided by the workers, and that time against the base samples' in the same run. This is the
figure that picks the transforms CI applies (README.md, "What CI runs": the
pull-request workflow applies `duplicated`, `.ci/run` none).
"""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from speed import SUBSET  # noqa: E402

from optests._findings import Outcome  # noqa: E402
from optests._key import CALL_PATTERNS, transform_name  # noqa: E402
from optests._results import SampleResult, merge_files  # noqa: E402


def run_subset(out: Path, workers: int, transforms: str = "all", ops: str = SUBSET, select: str = "all") -> float:
    """The subset (or ``ops``; ``select``: which of their samples) swept with ``transforms`` (and
    patterns) into ``out``; its wall time."""
    command = [
        *(sys.executable, "-m", "pytest", "opinfo_sweeps", "-q", "-p", "no:cacheprovider", "-n", str(workers)),
        *(f"--optests-ops={ops}", "--optests-modes=static,dynamic", f"--optests-transforms={transforms}"),
        *(f"--optests-select={select}", f"--optests-results={out}"),
    ]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):  # 1: unexpected failures, which this bench counts, not judges
        sys.exit(f"bench/transforms.py: the sweep exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return wall


def base_id(r: SampleResult) -> str:
    """The id of the sample ``r`` derives from: its key without the transform (under a backend
    other than ``aot_eager``, the id ends with the backend, after the transform)."""
    return dataclasses.replace(r.key, transform="").id


def report(records: list[SampleResult], wall: float, workers: int, by_index: bool = False) -> list[str]:
    """The table described in the module's docstring; ``by_index``: a row per derived sample's
    suffix (``tangents-3``, ``special-0``), not per transform."""
    groups: dict[str, list[SampleResult]] = defaultdict(list)
    for r in records:
        groups[(r.transform if by_index else transform_name(r.transform)) if r.transform else ""].append(r)
    base = groups.pop("", [])
    if not base or not sum(r.duration for r in base):
        raise ValueError("the results hold no base samples with check times to compare with")
    passed_base = {r.id for r in base if r.outcome is Outcome.PASSED}
    overhead = max(0.0, (wall * workers - sum(r.duration for r in records)) / len(records))

    def sweep_time(rs: list[SampleResult]) -> float:
        return (sum(r.duration for r in rs) + overhead * len(rs)) / workers

    base_time, base_check = sweep_time(base), sum(r.duration for r in base)
    lines = [
        f"{len(records):,} samples in {wall / 60:.1f} min with {workers} workers; harness overhead {overhead * 1000:.0f} ms a sample",
        f"base: {len(base):,} samples, check time {base_check / 60:.1f} min, sweep time {base_time / 60:.1f} min (the baseline)",
        "",
        f"{'transform':<14}{'samples':>9}{'/base':>7}{'n/a':>8}{'check':>9}{'x base':>8}{'sweep':>8}{'x base':>8}"
        f"{'passed':>9}{'failed':>8}{'new':>6}  failed by stage",
    ]
    patterns = [name for name in sorted(groups) if transform_name(name) in CALL_PATTERNS]
    order = [name for name in sorted(groups) if transform_name(name) not in CALL_PATTERNS]
    order += ["-- call patterns:"] * bool(patterns) + patterns  # after the input transforms, under a header
    for name in order:
        if name not in groups:
            lines.append(name)
            continue
        rs = groups[name]
        failed = [r for r in rs if r.outcome is Outcome.FAILED]
        stages = Counter(str(r.stage) for r in failed)
        new = sum(base_id(r) in passed_base for r in failed)
        check = sum(r.duration for r in rs)
        lines.append(
            f"{name:<14}{len(rs):>9,}{len(rs) / len(base):>7.2f}"
            f"{sum(r.outcome is Outcome.NOT_APPLICABLE for r in rs):>8,}"
            f"{check / 60:>8.1f}m{check / base_check:>8.2f}{sweep_time(rs) / 60:>7.1f}m{sweep_time(rs) / base_time:>8.2f}"
            f"{sum(r.outcome is Outcome.PASSED for r in rs):>9,}{len(failed):>8,}{new:>6,}  "
            + ", ".join(f"{s} {n}" for s, n in stages.most_common())
        )
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--results", nargs="+", type=Path, help="report on these results files (shards of one run) instead of running"
    )
    ap.add_argument("--wall", type=float, help="with --results: the run's wall time in seconds (summed over its groups)")
    ap.add_argument("--workers", type=int, default=2, help="xdist workers of the run (default 2)")
    ap.add_argument(
        "--transforms", default="all", help="what the run derives with, as --optests-transforms takes it (default all)"
    )
    ap.add_argument("--ops", default=SUBSET, help="op globs, comma-separated (default: the subset of bench/speed.py)")
    ap.add_argument("--select", default="all", help="which samples of each op, as --optests-select takes it (default all)")
    ap.add_argument(
        "--by-index", action="store_true", help="a row per index of a transform (tangents-3, special-0), not per transform"
    )
    args = ap.parse_args()
    if args.results:
        if args.wall is None:
            ap.error("--results needs --wall, the run's wall time")
        wall = args.wall
        _, records, _ = merge_files(args.results)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "results.json"
            wall = run_subset(out, args.workers, args.transforms, args.ops, args.select)
            _, records, _ = merge_files([out])
    try:
        print("\n".join(report(records, wall, args.workers, args.by_index)))
    except ValueError as e:
        sys.exit(f"bench/transforms.py: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
