"""Where the sweep's time and memory go, as ratios against baselines measured in the same run.

    python bench/speed.py              # the fixed, representative subset (about 16 minutes here)
    python bench/speed.py --all        # every op (hours)
    python bench/speed.py --skip a     # leave out a part (a, b, c, d, e)

(a) per sample, on the same samples in static and dynamic mode, two processes: our check with
    its extra checks on, and off, against PyTorch's in-tree ``aot_autograd_check``;
(b) the sweep's wall time under ``pytest -n 2`` (process start to exit) against the sum of its
    bare check times (the durations in its results file) divided by 2: the harness's overhead;
(c) collection time of the whole default sweep (``--collect-only``), and of the subset;
(d) ``optests check sin`` wall time, split into imports and checking;
(e) peak memory (VmHWM) of each process of the run in (b), by role, against a bare process that
    imports torch and the OpInfo database.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SUBSET = (
    "abs,add,addmm,amax,argsort,cat,cumsum,diag_embed,einsum,gather,index_add,index_put,linalg.solve,linalg.qr,"
    "logsumexp,matmul,mean,masked.sum,nn.functional.conv2d,nn.functional.cross_entropy,nn.functional.interpolate,"
    "nn.functional.layer_norm,nn.functional.linear_cross_entropy,nn.functional.avg_pool2d,nonzero,norm,repeat,"
    "scatter_add,softmax,sort,std,topk,unique,var_mean,where,cond,map,NumpyCubeCustomOp"
)
MODES = ("static", "dynamic")


def _pytest(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "opinfo_sweeps", "-q", "-p", "no:cacheprovider", *args]


# -- (a) ---------------------------------------------------------------------------------------


def _checks_worker(job: tuple[str, int, int]) -> dict[str, list[float]]:
    ops, shard, shards = job
    import warnings

    import torch
    from torch.testing._internal.optests import aot_autograd_check as in_tree

    from optests import _opinfo
    from optests._check import assert_close_equal_nan, run_check

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
            for mode in MODES:
                for name, check in checkers.items():
                    start = time.perf_counter()
                    check(copies[name][i], mode == "dynamic")
                    times[f"{name}|{mode}"].append(time.perf_counter() - start)
    return dict(times)


def part_a(ops: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        parts = pool.map(_checks_worker, [(ops, i, 2) for i in range(2)])
    times: dict[str, list[float]] = defaultdict(list)
    for part in parts:
        for key, values in part.items():
            times[key] += values
    print("(a) check time per sample, same samples, one thread each, vs the in-tree check:")
    for mode in MODES:
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


def part_b(ops: str, baseline_kib: int | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.json"
        args = _pytest("-n", "2", "--tb=no", f"--optests-ops={ops}", f"--optests-modes={','.join(MODES)}",
                       f"--optests-registry={tmp}/none.json", f"--optests-results={results}")  # fmt: skip
        start = time.perf_counter()
        proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        memory = PeakMemory(proc.pid)
        memory.start()
        out, _ = proc.communicate()
        wall = time.perf_counter() - start
        memory.done.set()
        memory.join()
        samples = json.loads(results.read_text())["samples"]
    bare = sum(s["duration"] for s in samples)
    tail = [ln.strip("= ") for ln in out.splitlines() if re.search(r"\d+ (passed|failed).* in [\d.]+s", ln)][-1:]
    print(f"(b) sweep of the subset, pytest -n 2 ({len(samples)} samples; {' '.join(tail)}):")
    print(
        f"  wall {wall:.1f} s vs bare check time / 2 = {bare / 2:.1f} s: {wall / (bare / 2):.3f}x, overhead {100 * (wall / (bare / 2) - 1):.1f}%"
    )
    print("(e) peak memory (VmHWM) by process role during (b):")
    for role, kibs in sorted(memory.by_role().items()):
        ratio = f", {max(kibs) / baseline_kib:.2f}x the bare import" if baseline_kib else ""
        print(
            f"  {role:13} {len(kibs)} process(es), peak {max(kibs) / 1024:.0f} MiB, median {statistics.median(kibs) / 1024:.0f} MiB{ratio}"
        )


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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--all", action="store_true", help="every op instead of the fixed subset")
    p.add_argument("--ops", default=SUBSET, help="op globs, comma-separated (default: the fixed subset)")
    p.add_argument("--skip", default="", help="parts to leave out, e.g. 'a,c'")
    a = p.parse_args()
    ops, skip = ("*" if a.all else a.ops), set(a.skip.split(","))
    print(f"ops: {'all' if a.all else ops}; modes {', '.join(MODES)}; {os.cpu_count()} cores")
    if "a" not in skip:
        part_a(ops)
    if "b" not in skip or "e" not in skip:
        part_b(ops, bare_import_kib() if "e" not in skip else None)
    if "c" not in skip:
        part_c(ops)
    if "d" not in skip:
        part_d()


if __name__ == "__main__":
    main()
