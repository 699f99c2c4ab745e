"""A large run through the results tools: ``merge``, ``diff``, ``history ingest``, ``dashboard``.

    python bench/scale.py                      # 100k and 1M records (about 250 MB of JSON at 1M)
    python bench/scale.py --sizes 100000       # one size
    python bench/scale.py --code /tmp/before   # the optests at /tmp/before (a checkout of another commit)

Makes a synthetic run of N sample records (about 10% failing, each with its own message) and a
second run of the same samples with 1% of them flipped between passing and failing, written as
``--optests-results`` writes them. Each command then runs in a process of its own, and its wall
time and peak memory (``ru_maxrss`` of that process, from ``wait4``) are printed beside the ratio
against a baseline measured in the same run: a process that only ``json.load``s the first file.
Commands: ``merge`` (the first run into a new file), ``diff`` (first against second), ``history
ingest`` (the first run into a new database), ``ingest 2nd`` (the second run into that database,
the one that holds the first), and ``dashboard`` (of that database: two runs, so a diff of two
runs of N records).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from optests._causes import normalized
from optests._results import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[1]
MODES = ("static", "dynamic", "static-nofunc", "dynamic-nofunc")
STAGES = ("trace", "forward", "backward", "metadata", "mutation")
ENV = {"date": "2026-11-24T03:00:00+00:00", "optests": "0.1.0", "platform": "Linux", "python": "3.11.7", "torch": "2.13.0"}


def _records(n: int, seed: int, flip: float = 0.0) -> Iterator[dict[str, object]]:
    """N records of a synthetic run, sorted by id; ``flip``: the share of samples whose outcome
    is flipped between passing and failing against the run of the same seed with no flip."""
    ops = max(1, n // (len(MODES) * 25))  # 25 samples per op and mode
    rng, flips = random.Random(seed), random.Random(seed + 1)
    keys: list[tuple[str, str, str, int]] = []
    for k in range(ops):
        op = f"op{k:05d}"
        for mode in MODES:
            for i in range(25):
                if len(keys) < n:
                    keys.append((f"{mode}-float32-cpu-{op}-sample{i}", op, mode, i))
    keys.sort()
    for key, op, mode, i in keys:
        roll = rng.random()
        outcome = "failed" if roll < 0.1 else "skipped" if roll < 0.13 else "not_applicable" if roll < 0.15 else "passed"
        if flip and outcome in ("passed", "failed") and flips.random() < flip:
            outcome = "passed" if outcome == "failed" else "failed"
        failed = outcome == "failed"
        stage = STAGES[i % len(STAGES)] if failed else None
        differs = rng.random()  # drawn for every record: a flip leaves the others as they were
        message = f"{stage}: output 0 differs: max abs diff {differs:.6f} [{op} {mode} float32 cpu sample {i}]" if failed else ""
        verdict = {"failed": "xfailed", "skipped": "skipped", "not_applicable": "not_applicable"}.get(outcome, "passed")
        yield {
            "db": "op_db", "device": "cpu", "dtype": "float32", "duration": round(rng.uniform(0.01, 2.0), 4), "id": key,
            "message": message, "mode": mode, "op": op, "outcome": outcome, "sample": i, "stage": stage,
            "tolerance": "", "transform": "", "variant": "", "verdict": verdict,
        } | ({"cause": f"{stage}/call/aot_eager: {normalized(message)}"} if failed else {})  # fmt: skip


def write_run(path: Path, n: int, seed: int = 0, flip: float = 0.0) -> None:
    """A results file of N records, byte for byte as ``optests`` writes one (sorted keys, indent 2),
    written a record at a time."""
    head = json.dumps({"complete": True, "environment": ENV, "kind": "optests-results"}, indent=2, sort_keys=True)
    with path.open("w", encoding="utf-8") as f:
        f.write(head[: -len("\n}")] + ',\n  "samples": [')
        for k, record in enumerate(_records(n, seed, flip)):
            text = json.dumps(record, indent=2, sort_keys=True).replace("\n", "\n    ")
            f.write(("," if k else "") + "\n    " + text)
        f.write(f'\n  ],\n  "schema_version": {SCHEMA_VERSION}\n}}\n')


def measure(argv: Sequence[str], code: Path, cwd: Path, ok: Sequence[int] = (0,)) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one process."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    start = time.perf_counter()
    # not run from the checkout: "python -m" puts the current folder ahead of PYTHONPATH
    with subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as process:
        assert process.stderr is not None
        stderr = process.stderr.read().decode()  # to its end: the process has exited
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in ok:
        raise SystemExit(f"{' '.join(argv)}: exit {process.returncode}: {stderr.strip()}")
    return wall, usage.ru_maxrss / 1024  # KiB on Linux


def run(size: int, work: Path, code: Path) -> list[tuple[str, float, float]]:
    """``(command, seconds, MB)`` for the baseline and each command, on runs of ``size`` records."""
    old, new = work / "old.json", work / "new.json"
    write_run(old, size, seed=0)
    write_run(new, size, seed=0, flip=0.01)
    py = sys.executable
    cli = [py, "-m", "optests.cli"]
    db, site = work / "history.db", work / "site"
    steps: list[tuple[str, list[str], tuple[int, ...]]] = [
        ("json.load", [py, "-c", "import json, sys; json.load(open(sys.argv[1]))", str(old)], (0,)),
        ("merge", [*cli, "merge", str(old), "--out", str(work / "merged.json")], (0,)),
        ("diff", [*cli, "diff", str(old), str(new)], (0, 1)),
        ("history ingest", [*cli, "history", "ingest", str(old), "--db", str(db)], (0,)),
        ("ingest 2nd", [*cli, "history", "ingest", str(new), "--db", str(db)], (0,)),
        ("dashboard", [*cli, "dashboard", "--db", str(db), "--out", str(site)], (0,)),
    ]
    return [(name, *measure(argv, code, work, ok)) for name, argv, ok in steps]


def report(size: int, rows: Sequence[tuple[str, float, float]]) -> list[str]:
    (_, base_s, base_mb), *_ = rows
    lines = [f"{size} records", f"  {'command':16} {'seconds':>8} {'x load':>7} {'peak MB':>8} {'x load':>7}"]
    for name, seconds, mb in rows:
        lines.append(f"  {name:16} {seconds:8.1f} {seconds / base_s:7.2f} {mb:8.0f} {mb / base_mb:7.2f}")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="100000,1000000", help="record counts, comma-separated (default: %(default)s)")
    p.add_argument("--code", type=Path, default=ROOT, help="the optests checkout to measure (default: this one)")
    p.add_argument("--work", type=Path, help="where the files go (default: a temporary folder, removed after)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="optests-scale-", dir=args.work) as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            work = Path(tmp) / str(size)
            work.mkdir()
            print("\n".join(report(size, run(size, work, args.code.resolve()))), flush=True)
            for f in work.iterdir():  # the next size needs the room
                if f.is_file():
                    f.unlink()


if __name__ == "__main__":
    main()
