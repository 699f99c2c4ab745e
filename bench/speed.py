"""Where the sweep's time and memory go, as ratios against baselines measured in the same run.

    python bench/speed.py              # the fixed, representative subset (about 16 minutes here)
    python bench/speed.py --all        # every op (hours)
    python bench/speed.py --skip a     # leave out a part (a, b, c, d, e)

The harness's overhead in a single-mode sweep against a baseline commit, side by side (issue 24;
about 10 minutes a tree and mode on 2 cores for every 3rd op, the whole static sweep about 25):

    python bench/speed.py --skip a,c,d,e --modes static --every 3 --baseline 3322cba --repeat 2

(a) per sample, on the same samples in static and dynamic mode, two processes: our check with
    its extra checks on, and off, against PyTorch's in-tree ``aot_autograd_check``;
(b) the sweep's wall time under ``pytest -n 2`` (process start to exit) against the sum of its
    bare check times (the durations in its results file) divided by 2: the harness's overhead;
    and the CPU time of the whole process tree less those check times: the harness's CPU per
    sample outside the timed checks (on a quiet machine; elsewhere other load stretches the checks'
    wall time, and with it what is subtracted).
    ``--baseline REV`` runs the same sweep from a temporary ``git worktree`` of REV (its code on
    ``PYTHONPATH``, its registry and sweep folder), alternating with this tree ``--repeat`` times;
(c) collection time of the whole default sweep (``--collect-only``), and of the subset;
(d) ``optests check sin`` wall time, split into imports and checking;
(e) peak memory (VmHWM) of each process of the run in (b), by role, against a bare process that
    imports torch and the OpInfo database.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
SUBSET = (
    "abs,add,addmm,amax,argsort,cat,cumsum,diag_embed,einsum,gather,index_add,index_put,linalg.solve,linalg.qr,"
    "logsumexp,matmul,mean,masked.sum,nn.functional.conv2d,nn.functional.cross_entropy,nn.functional.interpolate,"
    "nn.functional.layer_norm,nn.functional.linear_cross_entropy,nn.functional.avg_pool2d,nonzero,norm,repeat,"
    "scatter_add,softmax,sort,std,topk,unique,var_mean,where,cond,map,NumpyCubeCustomOp"
)
MODES = ("static", "dynamic")


def every_kth(k: int) -> str:
    """Every ``k``-th op of the default databases, in their order: a large op set that is the same
    in every tree and run (ops whose names are globs of others' ids select those too, alike)."""
    code = f"from optests import _opinfo; print(','.join(r.id for r in _opinfo.all_ops()[::{k}]))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def _pytest(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "opinfo_sweeps", "-q", "-p", "no:cacheprovider", *args]


# -- (a) ---------------------------------------------------------------------------------------


def _checks_worker(job: tuple[str, int, int, tuple[str, ...]]) -> dict[str, list[float]]:
    ops, shard, shards, modes = job
    import warnings

    import torch
    from torch.testing._internal.optests import aot_autograd_check as in_tree

    from optests import _opinfo
    from optests._api import run_check
    from optests._check import assert_close_equal_nan

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    torch._functorch.config.error_on_custom_op_aliasing = False

    def ours(s: Any, dynamic: bool, extras: bool) -> None:
        run_check(
            s.func, s.args, s.kwargs, dynamic, assert_equals_fn=assert_close_equal_nan, check_gradients=s.check_gradients,
            try_check_data_specialization=True, skip_correctness_check=s.skip_correctness_check,
            check_metadata=extras, check_mutations=extras, randomize_without_gradients=extras,
        )  # fmt: skip

    def theirs(s: Any, dynamic: bool) -> None:
        try:
            in_tree(
                s.func, s.args, s.kwargs, dynamic, assert_equals_fn=assert_close_equal_nan, check_gradients=s.check_gradients,
                try_check_data_specialization=True, skip_correctness_check=s.skip_correctness_check,
            )  # fmt: skip
        except Exception:  # the in-tree check raises whatever it meets; only its time counts here
            pass

    checkers = {
        "in-tree": theirs,
        "ours, extras on": lambda s, d: ours(s, d, True),
        "ours, extras off": lambda s, d: ours(s, d, False),
    }
    warm = next(_opinfo.samples(_opinfo.select(_opinfo.all_ops(), ["sin"])[0], "cpu", torch.float32))
    for check in checkers.values():  # the first compile in a process pays one-time costs
        check(warm, False)
    times: dict[str, list[float]] = defaultdict(list)
    refs = [r for r in _opinfo.select(_opinfo.all_ops(), ops.split(",")) if _opinfo.applicable(r, "cpu", torch.float32)]
    for n, ref in enumerate(refs):
        if n % shards != shard:
            continue
        # each checker gets its own copy of the samples (generated under the same seed): a check
        # that lets an in-place op mutate its inputs must not change what the next one sees
        copies = {name: list(_opinfo.samples(ref, "cpu", torch.float32)) for name in checkers}
        for i in range(len(copies["in-tree"])):
            for mode in modes:
                for name, check in checkers.items():
                    start = time.perf_counter()
                    check(copies[name][i], mode == "dynamic")
                    times[f"{name}|{mode}"].append(time.perf_counter() - start)
    return dict(times)


def part_a(ops: str, modes: tuple[str, ...]) -> None:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        parts = pool.map(_checks_worker, [(ops, i, 2, modes) for i in range(2)])
    times: dict[str, list[float]] = defaultdict(list)
    for part in parts:
        for key, values in part.items():
            times[key] += values
    print("(a) check time per sample, same samples, one thread each, vs the in-tree check:")
    for mode in modes:
        base = times[f"in-tree|{mode}"]
        print(f"  {mode}: {len(base)} samples; in-tree {1000 * sum(base) / len(base):.1f} ms mean")
        for name in ("ours, extras on", "ours, extras off"):
            t = times[f"{name}|{mode}"]
            print(f"    {name:17} {1000 * sum(t) / len(t):6.1f} ms mean  {sum(t) / sum(base):.2f}x in-tree")


# -- (b) and (e) -------------------------------------------------------------------------------


def _descendants(root: int) -> list[tuple[int, int]]:
    """(pid, depth below root) for root and every process under it."""
    children: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children[ppid].append(int(entry))
    out, todo = [], [(root, 0)]
    while todo:
        pid, depth = todo.pop()
        out.append((pid, depth))
        todo += [(c, depth + 1) for c in children.get(pid, [])]
    return out


def _peak_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            return int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))  # type: ignore[union-attr]
    except (OSError, AttributeError):
        return 0


class PeakMemory(threading.Thread):
    """Polls the peak RSS of a process tree; roles by depth: controller, xdist worker, runner child."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root, self.done = root, threading.Event()
        self.peaks: dict[int, int] = {}
        self.depth: dict[int, int] = {}

    def run(self) -> None:
        while not self.done.wait(0.5):
            for pid, depth in _descendants(self.root):
                self.peaks[pid] = max(self.peaks.get(pid, 0), _peak_kib(pid))
                self.depth[pid] = depth

    def by_role(self) -> dict[str, list[int]]:
        names = {0: "controller", 1: "xdist worker", 2: "runner child"}
        roles: dict[str, list[int]] = defaultdict(list)
        for pid, kib in self.peaks.items():
            if kib:
                roles[names.get(self.depth[pid], "other")].append(kib)
        return roles


class SweepRun(NamedTuple):
    """One timed sweep of part (b)."""

    samples: int
    wall: float
    bare: float  # the sum of the checks' durations
    cpu: float  # user + system time of the whole process tree
    summary: str
    memory: PeakMemory | None

    def line(self, workers: int) -> str:
        ratio = self.wall / (self.bare / workers)
        outside = 1000 * (self.cpu - self.bare) / self.samples
        return (
            f"wall {self.wall:.1f} s vs bare check time / {workers} = {self.bare / workers:.1f} s: {ratio:.3f}x, "
            f"overhead {100 * (ratio - 1):.1f}%; process tree CPU {self.cpu:.1f} s, less the check time: {outside:.1f} ms a sample "
            f"({self.samples} samples; {self.summary})"
        )


def sweep(tree: Path, ops: str, modes: tuple[str, ...], workers: int) -> SweepRun:
    """Part (b)'s sweep, run from ``tree`` with its code first on ``PYTHONPATH``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), *filter(None, [os.environ.get("PYTHONPATH")])])}
    where = subprocess.run([sys.executable, "-c", "import optests; print(optests.__file__)"], cwd=tree, env=env,
                           capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    if not Path(where).resolve().is_relative_to(tree.resolve()):
        sys.exit(f"bench/speed.py: optests imports from {where}, but expected it from {tree}")
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.json"
        selection = [f"--optests-ops={ops}"] if ops != "*" else []  # the whole sweep: as it is run
        args = _pytest("-n", str(workers), "--tb=no", *selection, f"--optests-modes={','.join(modes)}",
                       f"--optests-results={results}")  # fmt: skip
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.Popen(args, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        memory = PeakMemory(proc.pid)
        memory.start()
        out, _ = proc.communicate()
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        memory.done.set()
        memory.join()
        if not results.exists():
            sys.exit(f"bench/speed.py: the sweep in {tree} wrote no results:\n{out[-3000:]}")
        samples = json.loads(results.read_text())["samples"]
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    tail = [ln.strip("= ") for ln in out.splitlines() if re.search(r"\d+ (passed|failed).* in [\d.]+s", ln)][-1:]
    return SweepRun(len(samples), wall, sum(s["duration"] for s in samples), cpu, " ".join(tail), memory)


def part_b(ops: str, modes: tuple[str, ...], workers: int, baseline: str | None, repeat: int, baseline_kib: int | None) -> None:
    label = "the subset" if ops != "*" and "," in ops and len(ops.split(",")) < 100 else f"{len(ops.split(','))} ops"
    print(f"(b) sweep of {'every op' if ops == '*' else label}, modes {','.join(modes)}, pytest -n {workers}:")
    trees = {"this tree": ROOT}
    with contextlib.ExitStack() as stack:
        if baseline is not None:
            trees[f"baseline {baseline}"] = stack.enter_context(_worktree(baseline))
        runs: dict[str, list[SweepRun]] = defaultdict(list)
        for _ in range(repeat):
            for name, tree in trees.items():
                runs[name].append(sweep(tree, ops, modes, workers))
                print(f"  {name:20} {runs[name][-1].line(workers)}", flush=True)
    if repeat > 1:
        print("  median of the runs:")
        for name, done in runs.items():
            ratio = statistics.median(r.wall / (r.bare / workers) for r in done)
            outside = statistics.median(1000 * (r.cpu - r.bare) / r.samples for r in done)
            print(f"  {name:20} overhead {100 * (ratio - 1):.1f}%; tree CPU less check time {outside:.1f} ms a sample")
    memory = runs["this tree"][-1].memory
    assert memory is not None
    print("(e) peak memory (VmHWM) by process role during (b), this tree:")
    for role, kibs in sorted(memory.by_role().items()):
        ratio_text = f", {max(kibs) / baseline_kib:.2f}x the bare import" if baseline_kib else ""
        print(
            f"  {role:13} {len(kibs)} process(es), peak {max(kibs) / 1024:.0f} MiB, median {statistics.median(kibs) / 1024:.0f} MiB{ratio_text}"
        )


@contextlib.contextmanager
def _worktree(rev: str) -> Iterator[Path]:
    """A temporary ``git worktree`` of ``rev`` (detached), removed afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "baseline"
        done = subprocess.run(["git", "worktree", "add", "--detach", str(path), rev], cwd=ROOT, capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"bench/speed.py: --baseline {rev}: git worktree add failed: {done.stderr.strip().splitlines()[-1:]}")
        try:
            yield path
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, capture_output=True, check=False)


def bare_import_kib() -> int:
    code = "import resource, torch; from torch.testing._internal import common_methods_invocations; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    return int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()[-1])


# -- (c) and (d) -------------------------------------------------------------------------------


def part_c(ops: str) -> None:
    print("(c) collection (--collect-only), process start to exit:")
    for label, extra in (("whole default sweep", []), ("the subset", [f"--optests-ops={ops}"])):
        start = time.perf_counter()
        done = subprocess.run(_pytest("--collect-only", *extra), cwd=ROOT, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        count = re.findall(r"(\d+) tests? collected", done.stdout)
        print(f"  {label}: {count[-1] if count else '?'} tests in {wall:.1f} s")


def part_d() -> None:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "optests.cli", "check", "sin"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    m = re.search(r"; ([\d.]+) s \(([\d.]+) s imports\)", done.stdout)
    if m is None:
        print(f"(d) optests check sin: unexpected output:\n{done.stdout}{done.stderr}")
        return
    total, imports = float(m.group(1)), float(m.group(2))
    print(
        f"(d) optests check sin: {wall:.1f} s wall; imports {imports:.1f} s ({imports / wall:.0%}), checks {total - imports:.1f} s, interpreter start and exit {wall - total:.1f} s"
    )


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}, but expected an integer >= 1")
    return value


def _modes(text: str) -> tuple[str, ...]:
    modes = tuple(m.strip() for m in text.split(","))
    bad = [m for m in modes if m not in ("static", "dynamic", "static-nofunc", "dynamic-nofunc")]
    if bad or not modes:
        raise argparse.ArgumentTypeError(
            f"{bad[0] if bad else text!r}, but expected static, dynamic, static-nofunc or dynamic-nofunc"
        )
    return modes


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_true", help="every op instead of the fixed subset")
    which.add_argument("--ops", default=SUBSET, help="op globs, comma-separated (default: the fixed subset)")
    which.add_argument("--every", type=_positive, metavar="K", help="every K-th op of the default databases")
    p.add_argument("--modes", type=_modes, default=MODES, help="modes, comma-separated (default: static,dynamic)")
    p.add_argument("--workers", type=_positive, default=2, help="pytest-xdist workers in (b) (default: 2)")
    p.add_argument("--baseline", metavar="REV", help="also run (b) from a git worktree of REV, side by side")
    p.add_argument("--repeat", type=_positive, default=1, help="run (b) this many times, alternating the trees")
    p.add_argument("--skip", default="", help="parts to leave out, e.g. 'a,c'")
    a = p.parse_args()
    ops, skip = ("*" if a.all else every_kth(a.every) if a.every else a.ops), set(a.skip.split(","))
    shown = "all" if a.all else f"every {a.every}th ({len(ops.split(','))})" if a.every else ops
    print(f"ops: {shown}; modes {', '.join(a.modes)}; {os.cpu_count()} cores")
    if "a" not in skip:
        part_a(ops, a.modes)
    if "b" not in skip or "e" not in skip:
        part_b(ops, a.modes, a.workers, a.baseline, a.repeat, bare_import_kib() if "e" not in skip else None)
    if "c" not in skip:
        part_c(ops)
    if "d" not in skip:
        part_d()


if __name__ == "__main__":
    main()
