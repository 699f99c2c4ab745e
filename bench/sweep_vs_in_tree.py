"""Wall time of the sweep (pytest -n 2) vs a plain loop calling the in-tree check on 2 processes.

    python bench/sweep_vs_in_tree.py --ops 'a*,b*,c*' --modes static,dynamic

Both sides take the same samples (generated the same way, under the same seed), with the same
check arguments, and both are timed from process start (imports included). The loop has no
crash isolation, no registry and no results; the ratio is what the harness costs on top.
"""

from __future__ import annotations

import argparse
import multiprocessing
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _loop_worker(args: tuple[list[str], list[str], int, int]) -> tuple[int, int]:
    patterns, modes, shard, shards = args
    import torch
    from torch.testing._internal.optests import aot_autograd_check

    from optests import _opinfo

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    refs = _opinfo.select(_opinfo.all_ops(), patterns)
    samples = failures = 0
    for n, ref in enumerate(refs):
        if n % shards != shard or not _opinfo.applicable(ref, "cpu", torch.float32):
            continue
        for s in _opinfo.samples(ref, "cpu", torch.float32):
            for mode in modes:
                samples += 1
                try:
                    aot_autograd_check(
                        s.func,
                        s.args,
                        s.kwargs,
                        mode == "dynamic",
                        check_gradients=s.check_gradients,
                        try_check_data_specialization=True,
                        skip_correctness_check=s.skip_correctness_check,
                    )
                except Exception:
                    failures += 1
    return samples, failures


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ops", default="a*,b*,c*", help="op globs, comma-separated (default: %(default)s)")
    p.add_argument("--modes", default="static,dynamic", help="static and/or dynamic (default: %(default)s)")
    a = p.parse_args()
    patterns, modes = a.ops.split(","), a.modes.split(",")

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "opinfo_sweeps", "-n", "2", "-q", "--tb=no", "-p", "no:cacheprovider",
             f"--optests-ops={a.ops}", f"--optests-modes={a.modes}", f"--optests-registry={tmp}/none.json"],
            cwd=ROOT, capture_output=True, text=True, check=False,
        )  # fmt: skip
        sweep_wall = time.perf_counter() - start
    summary = [ln for ln in done.stdout.splitlines() if " samples:" in ln or ln.startswith("=")][-3:]

    start = time.perf_counter()
    ctx = multiprocessing.get_context("spawn")  # fresh interpreters, imports timed like the sweep's
    with ctx.Pool(2) as pool:
        parts = pool.map(_loop_worker, [(patterns, modes, i, 2) for i in range(2)])
    loop_wall = time.perf_counter() - start
    samples = sum(n for n, _ in parts)

    print(f"ops {a.ops}, modes {a.modes}: {samples} sample checks")
    print("sweep summary: " + " | ".join(s.strip() for s in summary))
    print(f"sweep (pytest -n 2):               {sweep_wall:8.1f} s wall")
    print(f"in-tree check, plain loop, 2 procs: {loop_wall:8.1f} s wall ({sum(f for _, f in parts)} raised)")
    print(f"ratio sweep / loop:                 {sweep_wall / loop_wall:8.2f}")


if __name__ == "__main__":
    main()
