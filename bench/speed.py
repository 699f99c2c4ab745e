"""Where the sweep's time and memory go, as ratios against baselines measured in the same run.

    python bench/speed.py              # the fixed, representative subset (about 16 minutes here)
    python bench/speed.py --all        # every op (hours)
    python bench/speed.py --skip a     # leave out a part (a, b, c, d, e)

The harness's overhead in a single-mode sweep against a baseline commit, side by side (issue 24;
about 10 minutes a tree and mode on 2 cores for every 3rd op, the whole static sweep about 25):

    python bench/speed.py --skip a,c,d,e --modes static --every 3 --baseline 3322cba --repeat 2

The README's main job (the whole sweep, both modes) priced against its floor, its results kept
for ``optests diff`` against the committed ones (about 35 minutes here):

    python bench/speed.py --all --skip a,c,d,e --results results/cpu-float32.json

Against PyTorch's own, on ops ``a*``-``c*`` in a few minutes (every 4th op; parts a and b):

    python bench/speed.py --skip c,d,e --ops 'a*,b*,c*' --every 4

(a) per sample, side by side on the same samples in each mode, two processes, one thread each,
    the two alternating sample by sample: the sweep's check of a case as its runner child runs
    it (``optests._execute.execute_in_child``: the OpInfo's decorations, the redraw, the check,
    the state kept) against PyTorch's in-tree ``aot_autograd_check`` as its OpInfo test calls it
    (``TestCase.assertEqual``, gradients, the randomized rerun); ops without autograd (which
    that test skips) and samples the OpInfo's decorations skip are left out. Wall and CPU time,
    and ours as a ratio of the in-tree check's;
(b) the sweep's wall time under ``pytest -n 2`` (process start to exit) against the sum of its
    bare check times (the durations in its results file) divided by 2: the harness's overhead;
    and the CPU time of the whole process tree less those check times: the harness's CPU per
    sample outside the timed checks (on a quiet machine; elsewhere other load stretches the checks'
    wall time, and with it what is subtracted). Then, right after it, the floor: an empty
    parametrized pytest run of as many items under the same ``-n``; what the harness adds beyond
    the floor and beyond the check time, as a percentage of the sweep's wall, is the last line
    ``overhead beyond the floor: X%`` (the median, with ``--repeat``), beside the CPU it adds a
    sample. ``--baseline REV`` runs the same sweep from a temporary ``git worktree`` of REV (its code on
    ``PYTHONPATH``, its registry and sweep folder), alternating with this tree ``--repeat`` times;
(c) collection time of the whole default sweep (``--collect-only``), and of the subset;
(d) ``optests check sin`` wall time, split into imports and checking;
(e) peak memory (VmHWM) of each process of the run in (b), by role, against a bare process that
    imports torch and the OpInfo database.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import multiprocessing
import os
import re
import resource
import shutil
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


def every_kth(k: int, ops: str | None = None) -> str:
    """Every ``k``-th op of the default databases (of those the globs ``ops`` select), in their
    order: an op set that is the same in every tree and run (ops whose names are globs of others'
    ids select those too, alike)."""
    refs = "_opinfo.all_ops()" if ops is None else f"_opinfo.select(_opinfo.all_ops(), {ops.split(',')!r})"
    code = f"from optests import _opinfo; print(','.join(r.id for r in {refs}[::{k}]))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def _pytest(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "opinfo_sweeps", "-q", "-p", "no:cacheprovider", *args]


# -- (a) ---------------------------------------------------------------------------------------


def _side_by_side_worker(job: tuple[str, int, int, tuple[str, ...]]) -> dict[str, list[tuple[float, float]]]:
    """(wall, CPU) seconds of each check, by ``checker|mode``, for this shard's ops."""
    ops, shard, shards, modes = job
    import warnings

    import torch
    from torch.testing._internal.common_utils import TestCase
    from torch.testing._internal.optests import aot_autograd_check as in_tree

    from optests import _opinfo
    from optests._case import Case
    from optests._execute import execute_in_child, prepare_child

    warnings.filterwarnings("ignore")
    prepare_child(("op_db", "hop_db"))
    test = TestCase()
    dtype = torch.float32

    def theirs(ref: Any, sample: Any, mode: str) -> None:
        # as TestEagerFusionOpInfo's test calls it (test/functorch/test_aotdispatch.py)
        try:
            in_tree(
                sample.func, sample.args, sample.kwargs, mode == "dynamic", test.assertRaisesRegex, test.assertEqual,
                check_gradients=True, try_check_data_specialization=True,
                skip_correctness_check=sample.skip_correctness_check,
            )  # fmt: skip
        except Exception:  # the in-tree check raises whatever it meets; only its time counts here
            pass

    def ours(ref: Any, index: int, mode: str) -> None:
        execute_in_child(Case.of(ref, mode, "float32", "cpu", index))

    all_refs = _opinfo.all_ops(("op_db", "hop_db"))
    sin = _opinfo.select(all_refs, ["sin"])[0]
    for mode in modes:  # the first compile of a mode in a process pays one-time costs (dynamic: sympy)
        ours(sin, 0, mode)
        theirs(sin, next(_opinfo.samples(sin, "cpu", dtype)), mode)
    times: dict[str, list[tuple[float, float]]] = defaultdict(list)
    refs = [r for r in _opinfo.select(all_refs, ops.split(",")) if _opinfo.applicable(r, "cpu", dtype)]
    for n, ref in enumerate(refs):
        # the in-tree test skips an op without autograd; both skip what the OpInfo's decorations skip
        if n % shards != shard or not _opinfo.opinfo(ref).supports_autograd:
            continue
        count = len(_opinfo.cached_samples(ref, "cpu", dtype))
        for mode in modes:
            if not count or _opinfo.decorations(_opinfo.opinfo(ref), mode == "dynamic", "cpu", dtype).skip:
                continue
            fresh = list(_opinfo.samples(ref, "cpu", dtype))  # the in-tree check mutates what in-place ops mutate
            for i in range(count):
                runs = (
                    ("ours", functools.partial(ours, ref, i, mode)),
                    ("in-tree", functools.partial(theirs, ref, fresh[i], mode)),
                )
                for name, run in runs if i % 2 == 0 else runs[::-1]:  # ABAB: neither always runs first
                    wall, cpu = time.perf_counter(), time.process_time()
                    run()
                    times[f"{name}|{mode}"].append((time.perf_counter() - wall, time.process_time() - cpu))
    return dict(times)


def side_by_side(times: dict[str, list[tuple[float, float]]], modes: tuple[str, ...]) -> list[str]:
    """Part (a)'s report: per mode, each checker's wall and CPU time over the same samples, and
    ours as a ratio of the in-tree check's."""
    lines = ["(a) the sweep's check of each sample (its runner child's share) vs the in-tree check, same samples:"]
    for mode in modes:
        ours, theirs = times.get(f"ours|{mode}", []), times.get(f"in-tree|{mode}", [])
        if not ours or len(ours) != len(theirs):
            lines.append(f"  {mode}: no samples")
            continue
        (o_wall, o_cpu), (t_wall, t_cpu) = (tuple(map(sum, zip(*runs))) for runs in (ours, theirs))
        lines.append(
            f"  {mode}: {len(ours)} samples; ours {o_wall:.1f} s wall, {o_cpu:.1f} s CPU; in-tree {t_wall:.1f} s wall, "
            f"{t_cpu:.1f} s CPU; ours/in-tree {o_wall / t_wall:.2f}x wall, {o_cpu / t_cpu:.2f}x CPU"
        )
    return lines


def part_a(ops: str, modes: tuple[str, ...]) -> None:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        parts = pool.map(_side_by_side_worker, [(ops, i, 2, modes) for i in range(2)])
    times: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for part in parts:
        for key, values in part.items():
            times[key] += values
    print("\n".join(side_by_side(times, modes)), flush=True)


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


class Floor(NamedTuple):
    """An empty parametrized pytest run: what any run of that many items with that ``-n`` costs."""

    items: int
    wall: float
    cpu: float  # user + system time of the whole process tree


def floor(items: int, workers: int) -> Floor:
    """Time an empty parametrized test of ``items`` items under ``pytest -n workers`` (no ``-n``
    for 0), in a folder of its own, as the sweep is run (``-q``, no cache provider)."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "test_floor.py").write_text(
            f"import pytest\n\n\n@pytest.mark.parametrize('i', range({items}))\ndef test_empty(i):\n    pass\n"
        )
        args = [sys.executable, "-m", "pytest", "test_floor.py", "-q", "-p", "no:cacheprovider", "--tb=short"]
        args += ["-n", str(workers)] if workers else []
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(args, cwd=tmp, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode or not re.search(rf"\b{items} passed", done.stdout):
        sys.exit(f"bench/speed.py: the empty pytest run of {items} items failed:\n{(done.stdout + done.stderr)[-2000:]}")
    return Floor(items, wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime))


def beyond_floor(run: SweepRun, base: Floor, workers: int) -> tuple[float, float]:
    """What the harness adds beyond the floor and beyond the bare check time: as a percentage of
    the sweep's wall (its wall, less the floor's, less the check time spread over the workers),
    and in CPU milliseconds a sample (the process tree's CPU less the floor's and the check time)."""
    wall = run.wall - base.wall - run.bare / workers
    cpu = run.cpu - base.cpu - run.bare
    return 100 * wall / run.wall, 1000 * cpu / run.samples


def floor_lines(run: SweepRun, base: Floor, workers: int) -> list[str]:
    """The floor's line and the overhead beyond it (the line that ends with the percentage)."""
    percent, per_sample = beyond_floor(run, base, workers)
    rest = run.wall - base.wall - run.bare / workers
    return [
        f"floor: empty pytest run of {base.items} items, -n {workers}: wall {base.wall:.1f} s, process tree CPU {base.cpu:.1f} s",
        f"CPU beyond the floor and the check time: {per_sample:.1f} ms a sample",
        f"overhead beyond the floor: {percent:.1f}% (wall {run.wall:.1f} s - floor {base.wall:.1f} s "
        f"- check time / {workers} {run.bare / workers:.1f} s = {rest:.1f} s)",
    ]


def sweep(tree: Path, ops: str, modes: tuple[str, ...], workers: int, keep: Path | None = None) -> SweepRun:
    """Part (b)'s sweep, run from ``tree`` with its code first on ``PYTHONPATH``; its results
    file is copied to ``keep``, where given (for ``optests diff``: the whole sweep of ``--all``
    is the README's main job)."""
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
        if keep is not None:
            keep.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(results, keep)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    tail = [ln.strip("= ") for ln in out.splitlines() if re.search(r"\d+ (passed|failed).* in [\d.]+s", ln)][-1:]
    return SweepRun(len(samples), wall, sum(s["duration"] for s in samples), cpu, " ".join(tail), memory)


def part_b(
    ops: str,
    modes: tuple[str, ...],
    workers: int,
    baseline: str | None,
    repeat: int,
    baseline_kib: int | None,
    keep: Path | None = None,
) -> None:
    label = "the subset" if ops != "*" and "," in ops and len(ops.split(",")) < 100 else f"{len(ops.split(','))} ops"
    print(f"(b) sweep of {'every op' if ops == '*' else label}, modes {','.join(modes)}, pytest -n {workers}:")
    trees = {"this tree": ROOT}
    with contextlib.ExitStack() as stack:
        if baseline is not None:
            trees[f"baseline {baseline}"] = stack.enter_context(_worktree(baseline))
        runs: dict[str, list[SweepRun]] = defaultdict(list)
        floors: dict[str, list[Floor]] = defaultdict(list)
        for _ in range(repeat):
            for name, tree in trees.items():
                runs[name].append(sweep(tree, ops, modes, workers, keep if tree is ROOT else None))
                print(f"  {name:20} {runs[name][-1].line(workers)}", flush=True)
                floors[name].append(floor(runs[name][-1].samples, workers))  # in the same run, right after
                for line in floor_lines(runs[name][-1], floors[name][-1], workers):
                    print(f"  {name:20} {line}", flush=True)
    if repeat > 1:
        print("  median of the runs:")
        for name, done in runs.items():
            ratio = statistics.median(r.wall / (r.bare / workers) for r in done)
            outside = statistics.median(1000 * (r.cpu - r.bare) / r.samples for r in done)
            print(f"  {name:20} overhead {100 * (ratio - 1):.1f}%; tree CPU less check time {outside:.1f} ms a sample")
        for name, done in runs.items():
            beyond = [beyond_floor(r, f, workers) for r, f in zip(done, floors[name])]
            cpu = statistics.median(ms for _, ms in beyond)
            print(f"  {name:20} CPU beyond the floor and the check time: {cpu:.1f} ms a sample")
            print(f"  {name:20} median overhead beyond the floor: {statistics.median(p for p, _ in beyond):.1f}%")
    this = [beyond_floor(r, f, workers)[0] for r, f in zip(runs["this tree"], floors["this tree"])]
    print(
        f"  this tree: overhead beyond the floor: {statistics.median(this):.1f}%"
        + (f" (median of {repeat})" if repeat > 1 else "")
    )
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
    which.add_argument("--ops", help="op globs, comma-separated (default: the fixed subset)")
    p.add_argument("--every", type=_positive, metavar="K", help="every K-th op of the default databases (of --ops)")
    p.add_argument("--modes", type=_modes, default=MODES, help="modes, comma-separated (default: static,dynamic)")
    p.add_argument("--workers", type=_positive, default=2, help="pytest-xdist workers in (b) (default: 2)")
    p.add_argument("--baseline", metavar="REV", help="also run (b) from a git worktree of REV, side by side")
    p.add_argument("--repeat", type=_positive, default=1, help="run (b) this many times, alternating the trees")
    p.add_argument("--skip", default="", help="parts to leave out, e.g. 'a,c'")
    p.add_argument("--results", type=Path, metavar="PATH", help="keep this tree's results file of (b) at PATH")
    a = p.parse_args()
    if a.all and a.every:
        p.error("argument --every: not allowed with argument --all")
    ops, skip = ("*" if a.all else every_kth(a.every, a.ops) if a.every else a.ops or SUBSET), set(a.skip.split(","))
    if not ops:
        p.error(f"argument --ops: {a.ops!r} selects no op")
    shown = "all" if a.all else f"every {a.every}th of {a.ops or 'all'} ({len(ops.split(','))}): {ops}" if a.every else ops
    print(f"ops: {shown}; modes {', '.join(a.modes)}; {os.cpu_count()} cores")
    if "a" not in skip:
        part_a(ops, a.modes)
    if "b" not in skip or "e" not in skip:
        part_b(ops, a.modes, a.workers, a.baseline, a.repeat, bare_import_kib() if "e" not in skip else None, a.results)
    if "c" not in skip:
        part_c(ops)
    if "d" not in skip:
        part_d()


if __name__ == "__main__":
    main()
