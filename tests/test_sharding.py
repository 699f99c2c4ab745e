"""Scheduling from recorded durations, and shards (pytest-split) that add up to one run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from sweepdir import run_inline
from test_history import ENV, NEW

from optests import cli
from optests._results import read, read_with_status, write

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "sweep_fixtures"
DB = ["--optests-dbs=nightly_ops:ops", "-p", "no:cacheprovider", "--optests-modes=static,dynamic"]


def _order(nightly_sweep: pytest.Pytester, *args: str) -> list[str]:
    result = run_inline(nightly_sweep, *DB, "--collect-only", "-q", *args)
    return [m.group(1) for m in re.finditer(r"test_aot_autograd\[(\S+)\]", result.stdout.str())]


def test_long_ops_run_first_and_an_ops_samples_stay_together(nightly_sweep: pytest.Pytester) -> None:
    plain = _order(nightly_sweep)
    assert [i.split("-")[3] for i in plain[::8]] == ["alpha", "beta", "gamma"]  # collection order: op-major
    durations = {f"test_aot_autograd.py::test_aot_autograd[{i}]": 0.01 for i in plain}
    durations["test_aot_autograd.py::test_aot_autograd[dynamic-float32-cpu-gamma-sample3]"] = 5.0
    durations["test_aot_autograd.py::test_aot_autograd[static-float32-cpu-beta-sample0]"] = 1.0
    (nightly_sweep.path / ".test_durations").write_text(json.dumps(durations))
    ordered = _order(nightly_sweep)
    assert ordered == [i for op in ("gamma", "beta", "alpha") for i in plain if f"-{op}-" in i]
    (nightly_sweep.path / ".test_durations").write_text("{not json")
    result = run_inline(nightly_sweep, *DB, "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --durations-path: *.test_durations: not a durations file (Expecting property name*"])


@pytest.mark.slow
def test_four_shards_merge_into_the_single_runs_results(
    nightly_sweep: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_inline(nightly_sweep, *DB, "--optests-accept").ret == pytest.ExitCode.OK  # expects beta's and gamma's failures
    single = nightly_sweep.path / "single.json"
    assert run_inline(nightly_sweep, *DB, "--optests-strict-registry", f"--optests-results={single}").ret == pytest.ExitCode.OK
    shards = []
    for group in range(1, 5):
        shard = nightly_sweep.path / f"shard{group}.json"
        result = run_inline(
            nightly_sweep, *DB, "--splits=4", f"--group={group}", "--optests-strict-registry", f"--optests-results={shard}"
        )
        result.stdout.fnmatch_lines([f"*Running group {group}/4*"])
        assert result.ret == pytest.ExitCode.OK  # a shard does not call the other shards' entries stale
        assert "stale" not in result.stdout.str()
        shards.append(str(shard))
    merged = nightly_sweep.path / "merged.json"
    assert cli.main(["merge", *shards, "--out", str(merged)]) == 0
    sizes = [len(read(Path(s))[1]) for s in shards]
    assert all(sizes) and sum(sizes) == 24  # each shard ran some samples, and none ran twice

    def key(path: Path) -> list[tuple[object, ...]]:
        return [(r.id, r.outcome, r.stage, r.message, r.verdict) for r in read(path)[1]]

    assert key(merged) == key(single)
    assert cli.main(["diff", str(single), str(merged)]) == 0
    assert ", 0 samples added, 0 samples removed; 24 unchanged" in capsys.readouterr().out


def test_durations_command_updates_the_file_from_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results, path = tmp_path / "r.json", tmp_path / ".test_durations"
    write(results, NEW, ENV)
    path.write_text(json.dumps({"tests/test_other.py::test_x": 2.5}))
    assert cli.main(["durations", str(results), "--out", str(path)]) == 0
    data = json.loads(path.read_text())
    assert data["tests/test_other.py::test_x"] == 2.5
    assert data["opinfo_sweeps/test_aot_autograd.py::test_aot_autograd[static-float32-cpu-sin-sample0]"] == 0.01
    assert "opinfo_sweeps/test_aot_autograd.py::test_aot_autograd[static-float32-cpu-abs-not_applicable]" not in data
    assert capsys.readouterr().out == f"{path}: 8 durations updated, 9 in all\n"
    path.write_text("[1, 2]")
    assert cli.main(["durations", str(results), "--out", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"optests durations: error: {path}: not a durations file (expected an object of test id -> seconds)\n"
    )


@pytest.mark.slow
def test_a_killed_run_keeps_what_it_checked(nightly_sweep: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    """The controller journals each record as it arrives; a run killed half-way leaves the
    journal, which optests merge (and accept, and history ingest) read as they read results."""
    nightly_sweep.makeconftest(
        """
import os
import pytest

seen = []
controller = False

def pytest_configure(config):
    global controller
    controller = not hasattr(config, "workerinput")

@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    if controller and report.when == "call":
        seen.append(report.nodeid)
        if len(seen) == 5:
            os._exit(9)  # killed: no session finish, no results file
"""
    )
    results = nightly_sweep.path / "results.json"
    # a subprocess: the planted conftest ends the controller's process
    result = nightly_sweep.runpytest_subprocess(*DB, "-n", "2", f"--optests-results={results}")
    assert result.ret == 9 and not results.exists()
    journal = nightly_sweep.path / "results.json.partial"
    assert cli.main(["merge", str(journal), "--out", str(results)]) == 0
    env, records = read(results)
    assert len(records) == 5 and env["torch"]
    assert capsys.readouterr().out.endswith(
        f"{results}: 5 samples from 1 file(s) (partial: a journal or an interrupted run among them)\n"
    )
    assert read_with_status(results)[2] is False


def test_a_finished_run_leaves_no_journal(nightly_sweep: pytest.Pytester) -> None:
    results = nightly_sweep.path / "results.json"
    run_inline(nightly_sweep, *DB, f"--optests-results={results}", "--optests-ops=alpha")
    assert len(read(results)[1]) == 8
    assert not (nightly_sweep.path / "results.json.partial").exists()
