"""What each backend costs against ``aot_eager``, measured in the same run.

    python bench/backends.py                        # OPS (12 ops), static, the first sample of each
                                                    # (--optests-select=first:1), every backend in one
                                                    # sweep, -n 1 (a few minutes here, most of it inductor)
    python bench/backends.py --ops sin,add --select all --backends aot_eager_decomp_partition
    python bench/backends.py --results F...         # a report on runs already made

One sweep checks every sample under ``aot_eager`` and under each other backend, so the machine,
its load and the caches are the same for all. For each backend, over the samples both it and
``aot_eager`` checked (the same id less ``@BACKEND``):

- per sample: the median and the largest ratio of its check time (the record's ``duration``) to
  ``aot_eager``'s on the same sample;
- per sweep: its summed check time against ``aot_eager``'s, the ratio a sweep of these ops takes
  (the harness's own time per sample is the same for every backend, and left out);
- what it found: passed, failed by stage, and failures where ``aot_eager`` passes.

Inductor's cost depends on its FX graph cache (``TORCHINDUCTOR_CACHE_DIR``): the bench runs with
a fresh cache directory unless ``--warm`` is given, so the figure is a cold sweep's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from optests._findings import Outcome  # noqa: E402
from optests._key import DEFAULT_BACKEND  # noqa: E402
from optests._results import SampleResult, merge_files  # noqa: E402

#: Cheap, common ops of several kinds: pointwise, reductions, views, matmul, indexing, a norm.
OPS = "abs,add,amax,cat,cumsum,gather,matmul,mean,nn.functional.layer_norm,nn.functional.relu,softmax,where"
BACKENDS = "aot_eager_decomp_partition,inductor,dynamo:aot_eager"


def run(out: Path, ops: str, backends: str, select: str, modes: str, warm: bool) -> float:
    """One sweep of ``ops`` under ``aot_eager`` and ``backends`` into ``out``; its wall time."""
    command = [
        *(sys.executable, "-m", "pytest", "opinfo_sweeps", "-q", "-p", "no:cacheprovider", "-n", "1"),
        *(f"--optests-ops={ops}", f"--optests-modes={modes}", f"--optests-select={select}"),
        *(f"--optests-backends={DEFAULT_BACKEND},{backends}", f"--optests-results={out}", "--optests-registry=none.json"),
        *(["--optests-compile-cache=shared"] if warm else []),  # a sweep compiles into a fresh cache by default
    ]
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as cache:
        if not warm:
            env["TORCHINDUCTOR_CACHE_DIR"] = cache
        started = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - started
    if done.returncode not in (0, 1):  # 1: findings, which this bench counts, not judges
        sys.exit(f"bench/backends.py: the sweep exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return wall


def report(records: list[SampleResult]) -> list[str]:
    """The table described in the module's docstring."""
    base = {r.key.id: r for r in records if r.key.backend == DEFAULT_BACKEND}
    by_backend: dict[str, list[tuple[SampleResult, SampleResult]]] = defaultdict(list)
    for r in records:
        if r.key.backend != DEFAULT_BACKEND:
            twin = base.get(r.key.id.removesuffix(f"@{r.key.backend}"))
            if twin is not None:
                by_backend[r.key.backend].append((r, twin))
    lines = [
        f"{len(base)} samples under {DEFAULT_BACKEND}, check time {sum(r.duration for r in base.values()):.1f} s (the baseline)",
        "",
        f"{'backend':30} {'samples':>7} {'median x':>8} {'max x':>8} {'time':>8} {'sweep x':>8} "
        f"{'passed':>6} {'failed':>6} {'new':>4}  stages",
    ]
    for backend, pairs in sorted(by_backend.items()):
        ratios = [r.duration / max(twin.duration, 1e-6) for r, twin in pairs]
        mine, theirs = sum(r.duration for r, _ in pairs), sum(twin.duration for _, twin in pairs)
        failed = [r for r, _ in pairs if r.outcome is Outcome.FAILED]
        new = sum(1 for r, twin in pairs if r.outcome is Outcome.FAILED and twin.outcome is Outcome.PASSED)
        stages = Counter(str(r.stage) for r in failed if r.stage is not None)
        passed = sum(1 for r, _ in pairs if r.outcome is Outcome.PASSED)
        lines.append(
            f"{backend:30} {len(pairs):7} {statistics.median(ratios):8.2f} {max(ratios):8.2f} {mine:7.1f}s "
            f"{mine / max(theirs, 1e-6):8.2f} {passed:6} {len(failed):6} {new:4}  "
            + ", ".join(f"{stage} {n}" for stage, n in sorted(stages.items()))
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", default=OPS)
    parser.add_argument("--backends", default=BACKENDS, help="compared with aot_eager (default: %(default)s)")
    parser.add_argument("--select", default="first:1", help="--optests-select (default: %(default)s)")
    parser.add_argument("--modes", default="static", help="--optests-modes (default: %(default)s)")
    parser.add_argument("--warm", action="store_true", help="use inductor's cache as it is, rather than a fresh one")
    parser.add_argument("--results", nargs="+", type=Path, help="report on these results files rather than sweep")
    args = parser.parse_args()
    if args.results:
        _, records, _ = merge_files(args.results)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "backends.json"
            wall = run(out, args.ops, args.backends, args.select, args.modes, args.warm)
            _, records, _ = merge_files([out])
        print(f"one sweep, every backend: {wall:.0f} s wall, -n 1")
    print("\n".join(report(records)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
