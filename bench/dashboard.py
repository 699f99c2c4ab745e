"""History and dashboard at scale: ingest, database size, page size and open time.

    python bench/dashboard.py --runs 30 --configurations 3

Takes a real results file (default: the committed four-mode sweep, 75,552 samples) and makes
``--runs`` synthetic nights from it, each with a few hundred samples flipped between passing and
failing, spread in turn over ``--configurations`` torch release series (2.13, 2.14, ...: each a
configuration of its own, with its own page section, and side by side in the comparison),
ingests them into a fresh history and builds the dashboard. The open time is measured in
headless Chromium (navigation start to the load event, median of 5, after one warm-up load).
Size and open time are printed as ratios against a baseline measured in the same run and the
same browser: the page of the first two nights only, both of the first configuration.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from optests import Outcome, Stage, Verdict  # noqa: E402
from optests._dashboard import build  # noqa: E402
from optests._history import History  # noqa: E402
from optests._results import SampleResult, read  # noqa: E402

DEFAULT = ROOT / "sweep-results" / "2026-11-22-torch-2.13.0-cpu-float32-four-modes.json"


def nights(base: list[SampleResult], n: int, flips: int, seed: int = 0) -> Iterator[list[SampleResult]]:
    rng = random.Random(seed)
    current = list(base)
    for _ in range(n):
        for i in rng.sample(range(len(current)), flips):
            r = current[i]
            if r.outcome is Outcome.PASSED:
                current[i] = dataclasses.replace(
                    r,
                    outcome=Outcome.FAILED,
                    stage=Stage.FORWARD,
                    message=f"synthetic finding {rng.random():.6f}",
                    verdict=Verdict.UNEXPECTED_FAILURE,
                    cause="",
                )
            elif r.outcome is Outcome.FAILED:
                fixed = Verdict.UNEXPECTED_PASS if r.verdict is Verdict.XFAILED else Verdict.PASSED
                current[i] = dataclasses.replace(r, outcome=Outcome.PASSED, stage=None, message="", verdict=fixed, cause="")
        current = [dataclasses.replace(r, duration=r.duration * rng.uniform(0.9, 1.1)) for r in current]
        yield current


def open_times(pages: list[Path], repeat: int = 5) -> list[float]:
    """Median time from navigation start to the load event, per page, in one browser: each
    page is opened once first (not counted), then the pages take turns."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("bench/dashboard.py: error: no chromium on PATH (apt-get install chromium)")
    times: list[list[float]] = [[] for _ in pages]
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
        )
        for rnd in range(repeat + 1):
            for i, index in enumerate(pages):
                page = browser.new_page()
                page.goto(index.as_uri(), wait_until="load")
                if rnd:
                    times[i].append(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd") / 1000)
                page.close()
        browser.close()
    return [statistics.median(t) for t in times]


def configurations(env: dict[str, str], n: int) -> list[dict[str, str]]:
    """``n`` environments of torch release series of their own: 2.13, 2.14, ..."""
    return [{**env, "torch": f"2.{13 + k}.0+cpu"} for k in range(n)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=DEFAULT, help="the real results file the nights start from")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--flips", type=int, default=200, help="samples flipped per night")
    ap.add_argument("--configurations", type=int, default=3, help="torch release series the nights take turns on")
    args = ap.parse_args()
    env, base = read(args.results)
    envs = configurations(env, args.configurations)
    runs = nights(base, args.runs, args.flips)
    start = datetime.datetime(2026, 10, 1, 3, tzinfo=datetime.timezone.utc)
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        ingest = []
        with History(where / "history.db", create=True) as db, History(where / "baseline.db", create=True) as baseline:
            for i, records in enumerate(runs):
                date = (start + datetime.timedelta(days=i)).isoformat()
                t = time.perf_counter()
                db.ingest(envs[i % len(envs)], records, f"night{i}.json", date=date)
                ingest.append(time.perf_counter() - t)
                if i < 2:
                    baseline.ingest(envs[0], records, f"night{i}.json", date=date)
            t = time.perf_counter()
            small = build(baseline, where / "two-runs")
            small_build = time.perf_counter() - t
            t = time.perf_counter()
            index = build(db, where / "site")
            big_build = time.perf_counter() - t
        size_db = (where / "history.db").stat().st_size
        small_open, big_open = open_times([small, index])
        print(f"history: {args.runs} runs x {len(base)} samples, {args.flips} flips a night, {len(envs)} configurations")
        print(f"  ingest: median {statistics.median(ingest):.2f} s a run (first {ingest[0]:.2f} s, it adds the cases)")
        print(f"  database: {size_db / 2**20:.1f} MiB ({size_db / args.runs / 2**20:.2f} MiB a run)")
        print(
            f"dashboard ({args.runs} runs in {len(envs)} configurations) vs baseline (the first 2 runs, one configuration), "
            "same samples:"
        )
        print(f"  build: {big_build:.2f} s vs {small_build:.2f} s  ({big_build / small_build:.2f}x)")
        big_size, small_size = index.stat().st_size, small.stat().st_size
        print(f"  index.html: {big_size / 1024:.0f} KiB vs {small_size / 1024:.0f} KiB  ({big_size / small_size:.2f}x)")
        print(
            f"  open in chromium (load event, median of 5): {big_open * 1000:.0f} ms vs {small_open * 1000:.0f} ms  ({big_open / small_open:.2f}x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
