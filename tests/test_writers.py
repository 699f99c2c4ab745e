"""Writers lose nothing: concurrent accepts all land, symlinks are written through, read-only
files are refused, and results files say whether they hold a whole run."""

from __future__ import annotations

import gzip
import json
import os
import re
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from sweepdir import run_inline, sweep_dir

import optests
from optests import Outcome, Stage
from optests._files import WriteError, check_writable, write_json_atomic
from optests._key import Mode, SampleKey
from optests._registry import Entry, Status, dump, load
from optests._results import ResultsError, SampleResult, read, read_with_status, write

OPTESTS = [sys.executable, "-m", "optests.cli"]
#: The optests under test, for subprocesses whose PYTHONPATH is set (the venv may hold another).
HERE = str(Path(optests.__file__).resolve().parents[1])
FIXTURES = str(Path(__file__).resolve().parent / "sweep_fixtures")


def _failing(op: str) -> SampleResult:
    key = SampleKey(op, "", Mode.STATIC, "float32", "cpu", 0)
    return SampleResult(key, "op_db", Outcome.FAILED, Stage.FORWARD, f"{op} differs [ctx]")


def test_ten_concurrent_accepts_into_one_registry_keep_every_entry(tmp_path: Path) -> None:
    """Each accept reads, changes and writes the registry; without the lock, one in two pairs
    of concurrent accepts lost an entry (issue 12)."""
    registry = tmp_path / "expected_failures.json"
    ops = [f"op{i}" for i in range(10)]
    for op in ops:
        write(tmp_path / f"{op}.json", [_failing(op)], {"torch": "2.13.0"})
    procs = [
        subprocess.Popen(
            [*OPTESTS, "accept", str(tmp_path / f"{op}.json"), "--registry", str(registry)], stdout=subprocess.DEVNULL
        )
        for op in ops
    ]
    assert [p.wait() for p in procs] == [0] * 10
    assert sorted(e.op for e in load(registry)) == ops


def test_accept_writes_through_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "registry.json"
    target.write_text('{"entries": [], "schema_version": 1}\n')
    link = tmp_path / "expected_failures.json"
    link.symlink_to(target)
    write(tmp_path / "r.json", [_failing("sin")], {"torch": "2.13.0"})
    done = subprocess.run([*OPTESTS, "accept", str(tmp_path / "r.json"), "--registry", str(link)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and [e.op for e in load(target)] == ["sin"]


def test_accept_refuses_a_read_only_registry_in_one_line(tmp_path: Path) -> None:
    registry = tmp_path / "expected_failures.json"
    registry.write_text('{"entries": [], "schema_version": 1}\n')
    registry.chmod(0o444)
    write(tmp_path / "r.json", [_failing("sin")], {"torch": "2.13.0"})
    done = subprocess.run(
        [*OPTESTS, "accept", str(tmp_path / "r.json"), "--registry", str(registry)], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"optests accept: error: {registry}: is read-only (mode 444); make it writable or write elsewhere"
    ]
    assert registry.read_text() == '{"entries": [], "schema_version": 1}\n'


def test_atomic_writes_refuse_directories_and_unwritable_places(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(WriteError, match="cannot be written: Not a directory"):
        check_writable(tmp_path / "file" / "out.json")
    with pytest.raises(WriteError, match="is a directory, not a file"):
        write_json_atomic(tmp_path, {})
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        write_json_atomic(tmp_path / "nan.json", {"duration": float("nan")})
    assert not (tmp_path / "nan.json").exists()


# -- results files of whole and partial runs ---------------------------------------------------


@pytest.fixture
def sweep(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    return sweep_dir(pytester, monkeypatch, Path(HERE))


def test_a_run_stopped_early_is_marked_incomplete(sweep: pytest.Pytester) -> None:
    args = ["--optests-dbs=buggy_ops:ops", "--optests-modes=static", "--optests-results=r.json", "-p", "no:cacheprovider"]
    run_inline(sweep, *args)
    whole = json.loads((sweep.path / "r.json").read_text())
    assert (whole["complete"], len(whole["samples"])) == (True, 12)
    run_inline(sweep, *args, "-x")
    stopped = json.loads((sweep.path / "r.json").read_text())
    assert stopped["complete"] is False and len(stopped["samples"]) < 12


def test_a_run_that_records_nothing_replaces_an_older_results_file(sweep: pytest.Pytester) -> None:
    args = ["--optests-dbs=buggy_ops:ops", "--optests-modes=static", "--optests-results=r.json", "-p", "no:cacheprovider"]
    run_inline(sweep, *args, "-k", "good")
    assert len(json.loads((sweep.path / "r.json").read_text())["samples"]) == 4
    run_inline(sweep, *args, "-k", "no_such_test")
    after = json.loads((sweep.path / "r.json").read_text())
    assert (after["samples"], after["complete"]) == ([], True)


@pytest.mark.parametrize("value", ["inf", "1e300", "nan", "0", "-1"])
def test_a_timeout_that_no_clock_can_hold_is_a_usage_error(sweep: pytest.Pytester, value: str) -> None:
    result = run_inline(sweep, "--optests-dbs=buggy_ops:ops", f"--optests-timeout={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --optests-timeout: *{value}*"])


def test_history_and_accept_leave_no_temp_files(tmp_path: Path) -> None:
    write(tmp_path / "r.json", [_failing("sin")], {"torch": "2.13.0"})
    subprocess.run([*OPTESTS, "accept", str(tmp_path / "r.json"), "--registry", str(tmp_path / "reg.json")], check=True)
    assert sorted(os.listdir(tmp_path)) == ["r.json", "reg.json", "reg.json.lock"]


def test_merging_a_killed_runs_journal_gives_a_partial_results_file(tmp_path: Path) -> None:
    from optests._results import Journal, read_with_status

    journal = Journal(tmp_path / "r.json", {"torch": "2.13.0"})
    journal.add(_failing("sin"))
    journal._file.close()  # as a killed run leaves it
    out = tmp_path / "merged.json"
    done = subprocess.run([*OPTESTS, "merge", str(journal.path), "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0 and "(partial: a journal or an interrupted run among them)" in done.stdout
    assert read_with_status(out)[2] is False
    write(tmp_path / "whole.json", [_failing("sin")], {"torch": "2.13.0"})
    diff = subprocess.run([*OPTESTS, "diff", str(tmp_path / "whole.json"), str(out)], capture_output=True, text=True)
    assert diff.returncode == 0
    assert diff.stderr.splitlines() == [f"optests diff: note: {out} holds a partial run (interrupted, or a journal)"]


def test_a_journal_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    from optests._results import ResultsError, read

    path = tmp_path / "r.json.partial"
    path.write_text('{"kind": "optests-results-journal", "schema_version": 99, "environment": {}}\n')
    with pytest.raises(ResultsError, match=r"r.json.partial:1: journal schema_version 99 is not supported"):
        read(path)


def test_results_files_ending_in_gz_are_compressed_the_same_bytes_each_time(tmp_path: Path) -> None:
    """Sweeps of hundreds of thousands of samples are committed and archived compressed;
    every reader (merge, diff, accept, history) takes either form, and a damaged file is one line."""
    records = [_failing(f"op{i}") for i in range(50)]
    plain, packed = tmp_path / "r.json", tmp_path / "r.json.gz"
    write(plain, records, {"torch": "2.13.0"})
    write(packed, records, {"torch": "2.13.0"})
    first = packed.read_bytes()
    write(packed, reversed(records), {"torch": "2.13.0"})
    assert packed.read_bytes() == first and first[:2] == b"\x1f\x8b"
    assert gzip.decompress(first) == plain.read_bytes()
    assert read(packed) == read(plain)
    (tmp_path / "cut.json.gz").write_bytes(first[: len(first) // 2])
    with pytest.raises(ResultsError, match=r"^\S+cut.json.gz: a truncated or corrupt gzip file$"):
        read(tmp_path / "cut.json.gz")


# -- full disks, one writer per results path, killed writes (issue 25) --------------------------


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([HERE, FIXTURES]), "PYTHONDONTWRITEBYTECODE": "1"}


def _file_size_limit(size: int) -> Callable[[], None]:
    """A full disk, for one subprocess: writes past ``size`` bytes fail with EFBIG."""

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the kernel kills the writer
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


def _sweep(sweep: pytest.Pytester, *args: str, limit: int | None = None) -> subprocess.CompletedProcess[str]:
    """The sweep over the buggy ops, results in ``r.json``: in this process, or with ``limit`` in a
    subprocess whose writes past ``limit`` bytes fail (a full disk)."""
    command = [
        "--optests-dbs=buggy_ops:ops",
        "--optests-modes=static",
        "-p",
        "no:cacheprovider",
        "--optests-results=r.json",
        *args,
    ]
    if limit is None:
        result = run_inline(sweep, *command)
        out, err = (f"{chr(10).join(lines)}\n" for lines in (result.outlines, result.errlines))
        return subprocess.CompletedProcess(command, int(result.ret), out, err)
    return subprocess.run(
        [sys.executable, "-m", "pytest", *command],
        cwd=sweep.path,
        env=_env(),
        capture_output=True,
        text=True,
        preexec_fn=_file_size_limit(limit),
    )


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.slow
def test_a_full_disk_stops_the_sweep_in_one_line_with_exit_4_and_keeps_the_journal(
    sweep: pytest.Pytester, xdist: list[str]
) -> None:
    """The journal's write failed with ENOSPC: pytest stopped with an INTERNALERROR, then a
    second traceback from the results file, exit 1 (which reads as findings), and 0 bytes kept."""
    done = _sweep(sweep, *xdist, limit=1500)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert _lines(done.stderr) == [
        "ERROR: --optests-results: r.json.partial: cannot be written: File too large (EFBIG); the sweep stopped, and the "
        "samples checked before are in r.json.partial (optests merge reads it)"
    ]
    assert "INTERNALERROR" not in done.stdout and "Traceback" not in done.stdout
    assert "journal kept" not in done.stdout  # the error line said where the samples are
    env, records, complete = read_with_status(sweep.path / "r.json.partial")
    assert env and records and not complete
    assert sorted(set(os.listdir(sweep.path)) - {"__pycache__"}) == ["conftest.py", "r.json.partial", "test_aot_autograd.py"]


@pytest.mark.slow
def test_a_full_disk_at_the_results_file_is_one_line_and_exit_4(sweep: pytest.Pytester) -> None:
    whole = _sweep(sweep)
    assert whole.returncode == pytest.ExitCode.TESTS_FAILED
    size = (sweep.path / "r.json").stat().st_size
    (sweep.path / "r.json").unlink()
    done = _sweep(sweep, limit=size - 300)  # room for the (compact) journal, not the results file
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr and not _lines(done.stderr)
    assert (
        "results not written: r.json: cannot be written: File too large (EFBIG); the samples checked are in r.json.partial"
        in done.stdout
    )
    assert len(read(sweep.path / "r.json.partial")[1]) == 12
    assert sorted(set(os.listdir(sweep.path)) - {"__pycache__"}) == ["conftest.py", "r.json.partial", "test_aot_autograd.py"]


_HOLD_JOURNAL = """
import sys
from pathlib import Path
from optests._results import Journal
journal = Journal(Path(sys.argv[1]), {"torch": "2.13.0"})
print("writing", flush=True)
sys.stdin.read()
"""


@pytest.mark.slow
def test_a_second_sweep_on_a_results_path_being_written_is_refused_before_any_test(sweep: pytest.Pytester) -> None:
    """Two sweeps on one path opened the journal with "w", wrote over each other's lines, and the
    first to finish deleted the other's journal."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_JOURNAL, "r.json"],
        cwd=sweep.path,
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "writing\n"
        journal = (sweep.path / "r.json.partial").read_bytes()
        done = _sweep(sweep, "-n", "2")
        assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
        assert _lines(done.stderr) == [
            "ERROR: --optests-results: r.json: another run is writing it (it holds the lock on r.json.partial); "
            "wait for it, or write elsewhere"
        ]
        assert "test_aot_autograd" not in done.stdout  # no test ran
        assert (sweep.path / "r.json.partial").read_bytes() == journal and not (sweep.path / "r.json").exists()
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.stdout.close()
        holder.wait()
    # its owner gone (the kernel released the lock), the path is free again
    done = _sweep(sweep)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    assert len(read(sweep.path / "r.json")[1]) == 12 and not (sweep.path / "r.json.partial").exists()


def test_a_killed_runs_journal_is_taken_over_and_a_live_ones_is_not(tmp_path: Path) -> None:
    from optests._files import Busy
    from optests._results import Journal

    first = Journal(tmp_path / "r.json", {"torch": "2.13.0"})
    first.add(_failing("sin"))
    with pytest.raises(Busy, match="another run is writing it"):
        Journal(tmp_path / "r.json", {"torch": "2.13.0"})
    assert [r.op for r in read(first.path)[1]] == ["sin"]
    first._file.close()  # as a killed run leaves it: the kernel drops its lock
    second = Journal(tmp_path / "r.json", {"torch": "2.13.0"})
    assert read(second.path)[1] == []
    second.finish()
    assert os.listdir(tmp_path) == []


def test_a_full_disk_leaves_the_dashboard_as_it_was_and_names_the_file(tmp_path: Path) -> None:
    """index.html was written in place: a full disk cut it mid-tag, and the message blamed the
    folder (``site: is a directory, not a file``)."""
    db, site = tmp_path / "h.db", tmp_path / "site"
    write(tmp_path / "1.json", [_failing("sin")], {"torch": "2.13.0", "date": "2026-11-01T00:00:00+00:00"})
    write(tmp_path / "2.json", [_failing(f"op{i}") for i in range(20)], {"torch": "2.13.0", "date": "2026-11-02T00:00:00+00:00"})
    for args in (["history", "ingest", str(tmp_path / "1.json")], ["dashboard", "--out", str(site)]):
        subprocess.run([*OPTESTS, *args, "--db", str(db)], check=True, env=_env(), stdout=subprocess.DEVNULL)
    before = {name: (site / name).read_bytes() for name in os.listdir(site)}
    assert sorted(before) == ["changes.json", "index.html"]
    subprocess.run([*OPTESTS, "history", "ingest", str(tmp_path / "2.json"), "--db", str(db)], check=True, env=_env())
    # the sizes the dashboard now writes: changes.json (every field of each change) fits the
    # limit, index.html does not
    scratch = tmp_path / "scratch"
    subprocess.run(
        [*OPTESTS, "dashboard", "--db", str(db), "--out", str(scratch)], check=True, env=_env(), stdout=subprocess.DEVNULL
    )
    limit = max(len(before["index.html"]) + 100, (scratch / "changes.json").stat().st_size)
    assert (scratch / "index.html").stat().st_size > limit
    done = subprocess.run(
        [*OPTESTS, "dashboard", "--db", str(db), "--out", str(site)],
        env=_env(),
        capture_output=True,
        text=True,
        preexec_fn=_file_size_limit(limit),
    )
    assert done.returncode == 2, done.stderr
    assert _lines(done.stderr) == [f"optests dashboard: error: {site / 'index.html'}: cannot be written: File too large (EFBIG)"]
    assert (site / "index.html").read_bytes() == before["index.html"]
    assert sorted(os.listdir(site)) == ["changes.json", "index.html"]  # no temp file left


_WRITE = """
import os, signal, sys
from pathlib import Path
from optests import _files
real = getattr(os, sys.argv[2])
def patched(*args):
    {how}
    return real(*args)
setattr(os, sys.argv[2], patched)
_files.write_json_atomic(Path(sys.argv[1]), {{"new": True}})
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: signal.Signals(s).name)
def test_a_write_killed_by_a_signal_leaves_the_old_file_and_no_temp_file(tmp_path: Path, signum: int) -> None:
    """A SIGTERM mid-write left a full-size ``.reg.json.XXXXXXXX`` beside the registry."""
    target = tmp_path / "reg.json"
    target.write_text('{"old": true}\n')
    script = _WRITE.format(how=f"os.kill(os.getpid(), {int(signum)}); import time; time.sleep(5)")
    done = subprocess.run(
        [sys.executable, "-c", script, str(target), "fsync"],
        env=_env(),
        capture_output=True,
        text=True,
        # the signal's default handling, whatever this run inherited (`nohup` leaves SIGHUP ignored,
        # a shell's background job SIGINT)
        preexec_fn=lambda: signal.signal(signum, signal.SIG_DFL),
    )
    assert done.returncode == -signum, done.stderr  # as the signal would have: Python re-raises SIGINT too
    assert target.read_text() == '{"old": true}\n'
    assert os.listdir(tmp_path) == ["reg.json"]


def test_a_dead_writers_temp_file_is_swept_by_the_next_write_and_a_live_ones_is_kept(tmp_path: Path) -> None:
    target = tmp_path / "reg.json"
    target.write_text('{"old": true}\n')
    killed = _WRITE.format(how="os.kill(os.getpid(), signal.SIGKILL)")
    done = subprocess.run([sys.executable, "-c", killed, str(target), "replace"], env=_env())
    assert done.returncode == -signal.SIGKILL
    (stale,) = set(os.listdir(tmp_path)) - {"reg.json"}
    assert re.fullmatch(r"\.reg\.json\.[a-z0-9_]{8}", stale)
    paused = _WRITE.format(how="print('ready', flush=True); sys.stdin.readline()")
    live = subprocess.Popen(
        [sys.executable, "-c", paused, str(target), "replace"],
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert live.stdin is not None and live.stdout is not None
    try:
        assert live.stdout.readline() == "ready\n"
        (pending,) = set(os.listdir(tmp_path)) - {"reg.json", stale}
        write_json_atomic(target, {"mine": True})
        assert sorted(os.listdir(tmp_path)) == sorted(["reg.json", pending])  # the dead one's swept, the live one's kept
        assert json.loads(target.read_text()) == {"mine": True}
        live.stdin.write("go\n")
        live.stdin.close()
        assert live.wait() == 0
    finally:
        live.kill()
        live.wait()
        live.stdout.close()
    assert os.listdir(tmp_path) == ["reg.json"] and json.loads(target.read_text()) == {"new": True}


# -- the sweep's terminal (issue 25) -------------------------------------------------------------


def test_the_sweep_ends_on_its_summary_and_counts_expected_failures_unless_asked_to_list_them(sweep: pytest.Pytester) -> None:
    """``-ra`` in a project's addopts listed each of a sweep's 2,745 expected failures after its summary."""
    sweep.makeini("[pytest]\naddopts = -ra\n")
    args = ["--optests-dbs=buggy_ops:ops", "--optests-modes=static", "-p", "no:cacheprovider", "--optests-registry=reg.json"]
    run_inline(sweep, *args, "--optests-accept")
    counted = run_inline(sweep, *args)
    counted.assert_outcomes(passed=6, xfailed=6)
    assert "XFAIL" not in counted.stdout.str()
    lines = counted.stdout.lines
    assert lines[-1].startswith("=") and "6 passed, 6 xfailed" in lines[-1]
    assert "registry: passed 6, xfailed 6" in lines[-2]  # the sweep's own summary comes last
    for explicit in (["-rx"], ["--report-chars=a"]):
        listed = run_inline(sweep, *args, *explicit)
        assert sum(line.startswith("XFAIL ") for line in listed.stdout.lines) == 6


def test_a_forked_child_does_not_keep_the_journal_s_lock(tmp_path: Path) -> None:
    """The sweep's runner child is forked after the journal is claimed: were the lock shared with
    it, a child orphaned on a hanging sample would refuse every later sweep on the path."""
    from optests._results import Journal

    results = tmp_path / "r.json"
    journal = Journal(results, {"torch": "2.13.0"})
    ready_r, ready_w = os.pipe()
    child = os.fork()
    if child == 0:  # the child outlives its parent's run, as an orphan on a hanging sample would
        os.write(ready_w, b"1")  # os.fork has returned here: the fork hooks have run
        signal.pause()
        os._exit(0)
    os.close(ready_w)
    try:
        assert os.read(ready_r, 1) == b"1"
        journal.close()  # the run that took the lock is gone
        Journal(results, {"torch": "2.13.0"}).close()  # so the next run may take it
    finally:
        os.close(ready_r)
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


# -- resuming a killed sweep ------------------------------------------------------------------


def _journal_of(where: Path, records: list[dict[str, object]], env: dict[str, str], cut: str = "") -> None:
    """The journal a killed sweep leaves: its header, ``records``, then a line cut off mid-write."""
    lines = [json.dumps({"kind": "optests-results-journal", "schema_version": 4, "environment": env})]
    lines += [json.dumps(r) for r in records]
    (where / "r.json.partial").write_text("\n".join(lines) + "\n" + cut)


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.slow
def test_a_resumed_sweep_checks_only_what_the_killed_run_did_not(sweep: pytest.Pytester, xdist: list[str]) -> None:
    """A sweep of hours killed at 70% was run again from the start. With ``--optests-resume`` the
    samples in its journal keep their records (their tests judged again by the registry, not
    checked: the planted durations stay) and the rest are checked; the results are one whole run."""
    whole = _sweep(sweep)
    assert whole.returncode == pytest.ExitCode.TESTS_FAILED, whole.stdout + whole.stderr
    first = json.loads((sweep.path / "r.json").read_text())
    done = [dict(r, duration=123.0) for r in first["samples"][:5]]
    _journal_of(sweep.path, done, first["environment"], cut=json.dumps(first["samples"][5])[:40])
    (sweep.path / "r.json").unlink()

    again = _sweep(sweep, "--optests-resume", *xdist)
    assert again.returncode == pytest.ExitCode.TESTS_FAILED, again.stdout + again.stderr
    assert "resumed: 5 samples checked by the run this one went on from (r.json.partial)" in again.stdout
    results = json.loads((sweep.path / "r.json").read_text())
    assert results["complete"] is True and not (sweep.path / "r.json.partial").exists()
    by_id = {r["id"]: r for r in results["samples"]}
    assert sorted(by_id) == sorted(r["id"] for r in first["samples"])
    replayed = {r["id"] for r in done}
    assert {i for i, r in by_id.items() if r["duration"] == 123.0} == replayed  # the 6th, cut off, was checked again
    for r in first["samples"]:
        assert (by_id[r["id"]]["outcome"], by_id[r["id"]]["verdict"]) == (r["outcome"], r["verdict"])


def test_a_resumed_run_that_selects_less_keeps_the_journal_whole_and_says_so(sweep: pytest.Pytester) -> None:
    _sweep(sweep)
    first = json.loads((sweep.path / "r.json").read_text())
    _journal_of(sweep.path, first["samples"], first["environment"])
    again = _sweep(sweep, "--optests-resume", "-k", "good")
    assert again.returncode == pytest.ExitCode.OK, again.stdout + again.stderr
    assert (
        "resumed: 4 samples checked by the run this one went on from (r.json.partial); 8 of its records are not among "
        "this run's results (the journal keeps them)" in again.stdout
    )
    assert "journal kept: r.json.partial holds samples the results lack; go on from it with --optests-resume" in again.stdout
    assert [r["op"] for r in json.loads((sweep.path / "r.json").read_text())["samples"]] == ["good"] * 4
    assert len(read(sweep.path / "r.json.partial")[1]) == 12  # nothing lost, nothing written twice


def test_a_run_stopped_early_keeps_its_journal_to_go_on_from(sweep: pytest.Pytester) -> None:
    """``-x`` (or Ctrl-C) wrote the results of a partial run and deleted the journal, so a resumed
    run started afresh; and a resumed run stopped early deleted the records it had not replayed."""
    stopped = _sweep(sweep, "-x")
    assert stopped.returncode == pytest.ExitCode.TESTS_FAILED, stopped.stdout + stopped.stderr
    assert json.loads((sweep.path / "r.json").read_text())["complete"] is False
    checked = read(sweep.path / "r.json.partial")[1]
    assert 0 < len(checked) < 12 and "journal kept: r.json.partial" in stopped.stdout
    again = _sweep(sweep, "--optests-resume", "-x")
    assert {r.id for r in checked} <= {r.id for r in read(sweep.path / "r.json.partial")[1]}
    done = _sweep(sweep, "--optests-resume")
    assert "journal kept: r.json.partial" in again.stdout  # stopped at its first (replayed) failure
    assert json.loads((sweep.path / "r.json").read_text())["complete"] is True
    assert len(read(sweep.path / "r.json")[1]) == 12 and not (sweep.path / "r.json.partial").exists(), done.stdout


def test_a_skipped_record_is_decided_again_not_replayed(sweep: pytest.Pytester) -> None:
    """A skip entry removed since the dead run (its crash fixed) must not pass the sample unchecked."""
    _sweep(sweep)
    first = json.loads((sweep.path / "r.json").read_text())
    good = [r for r in first["samples"] if r["op"] == "good"]
    skipped = [dict(r, outcome="skipped", verdict="skipped", message="planted skip", duration=123.0) for r in good]
    _journal_of(sweep.path, skipped, first["environment"])
    again = _sweep(sweep, "--optests-resume", "-k", "good")
    assert again.returncode == pytest.ExitCode.OK, again.stdout + again.stderr
    after = json.loads((sweep.path / "r.json").read_text())["samples"]
    assert [(r["outcome"], r["duration"] != 123.0) for r in after] == [("passed", True)] * 4


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.slow
def test_a_skip_decided_again_in_a_run_that_keeps_the_journal_leaves_it_readable(
    sweep: pytest.Pytester, xdist: list[str]
) -> None:
    """The new record of a sample the journal held as skipped was appended after the old one: the
    journal then held its id twice, and a second resume, ``merge`` or ``accept`` refused it."""
    _sweep(sweep)
    first = json.loads((sweep.path / "r.json").read_text())
    planted = [
        dict(r, outcome="skipped", verdict="skipped", stage=None, message="planted skip") if r["op"] == "good" else r
        for r in first["samples"]
    ]
    _journal_of(sweep.path, planted, first["environment"])
    again = _sweep(sweep, "--optests-resume", "-k", "good", *xdist)  # selects less: the journal is kept
    assert "journal kept: r.json.partial" in again.stdout, again.stdout + again.stderr
    kept = {r.id: r.outcome.value for r in read(sweep.path / "r.json.partial")[1]}
    assert kept == {r["id"]: r["outcome"] for r in first["samples"]}  # each once, the skips decided again
    done = _sweep(sweep, "--optests-resume")
    assert "resumed: 12 samples checked by the run this one went on from" in done.stdout, done.stdout + done.stderr
    assert not (sweep.path / "r.json.partial").exists()


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.slow
def test_a_resumed_sample_a_skip_entry_now_decides_is_skipped_not_counted_as_replayed(
    sweep: pytest.Pytester, xdist: list[str]
) -> None:
    """The controller counted every resumed id that came back as replayed, a skip decided again
    among them: the worker says which records it replayed."""
    _sweep(sweep)
    first = json.loads((sweep.path / "r.json").read_text())
    _journal_of(sweep.path, first["samples"], first["environment"])
    skip = Entry("good", "", "static", "float32", "cpu", Status.SKIP, Stage.FORWARD, "planted: it hangs")
    dump(sweep.path / "reg.json", [skip])
    again = _sweep(sweep, "--optests-resume", "--optests-registry=reg.json", *xdist)
    assert "resumed: 8 samples checked by the run this one went on from (r.json.partial)\n" in again.stdout, again.stdout
    after = {r["id"]: r["outcome"] for r in json.loads((sweep.path / "r.json").read_text())["samples"]}
    assert sorted(after) == sorted(r["id"] for r in first["samples"])
    assert [after[r["id"]] for r in first["samples"] if r["op"] == "good"] == ["skipped"] * 4
    assert not (sweep.path / "r.json.partial").exists()


def test_resume_without_a_journal_is_a_fresh_run(sweep: pytest.Pytester) -> None:
    done = _sweep(sweep, "--optests-resume")
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    assert len(read(sweep.path / "r.json")[1]) == 12 and "resumed:" not in done.stdout


@pytest.mark.parametrize(
    ("journal", "args", "error"),
    [
        (
            "torch",
            [],
            "ERROR: --optests-resume: r.json.partial: written under torch 2.99.0, this run has {torch}: resume under the same "
            "one, or start afresh without --optests-resume",
        ),
        (
            "garbage",
            [],
            "ERROR: --optests-resume: r.json.partial: not an optests journal; remove it, or write the results elsewhere",
        ),
        (
            "none",
            ["--optests-results="],
            "ERROR: --optests-resume: goes on from the journal of --optests-results, which is not given",
        ),
    ],
)
def test_a_journal_resume_cannot_go_on_from_is_one_line_and_no_test(
    sweep: pytest.Pytester, journal: str, args: list[str], error: str
) -> None:
    if journal == "torch":
        _journal_of(sweep.path, [], {"torch": "2.99.0", "torch_git": "", "cuda": ""})
    elif journal == "garbage":
        (sweep.path / "r.json.partial").write_text('{"samples": []}\n')
    before = (sweep.path / "r.json.partial").read_bytes() if journal != "none" else b""
    done = _sweep(sweep, "--optests-resume", *args)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    (line,) = _lines(done.stderr)
    assert re.fullmatch(re.escape(error).replace(re.escape("{torch}"), r"2\.\d+\.\d+\S*"), line), line
    assert "test_aot_autograd" not in done.stdout and not (sweep.path / "r.json").exists()
    if journal != "none":  # left as it was, for a run under the right torch
        assert (sweep.path / "r.json.partial").read_bytes() == before


def test_a_resumed_journal_killed_again_holds_both_runs_records(tmp_path: Path) -> None:
    from optests._results import Journal

    first = Journal(tmp_path / "r.json", {"torch": "2.13.0"})
    first.add(_failing("sin"))
    first._file.write('{"id": "static-float32-cpu-co')  # the kill, mid-line
    first._file.close()
    second = Journal(tmp_path / "r.json", {"torch": "2.13.0"}, resume=True)
    assert [r.op for r in second.resumed.values()] == ["sin"]
    second.add(_failing("cos"))
    second._file.close()  # killed again
    env, records = read(second.path)
    assert env == {"torch": "2.13.0"} and [r.op for r in records] == ["sin", "cos"]


_S, _P, _F = Outcome.SKIPPED, Outcome.PASSED, Outcome.FAILED


@pytest.mark.parametrize(
    ("outcomes", "read_as"),
    [
        ([_S, _P], _P),  # a skip decided again by a resumed run
        ([_S, _S], _S),
        ([_S, _S, _P], _P),  # and again
        ([_P, _F], "4: id '.*-sin-sample0' is recorded twice (first on line 2)"),  # a journal no run writes
        ([_F, _S], "4: id '.*-sin-sample0' is recorded twice (first on line 2)"),
        ([_S, _P, _F], "5: id '.*-sin-sample0' is recorded twice (first on line 4)"),  # the record that stood
    ],
)
def test_a_journal_records_an_id_once_but_for_a_skip(tmp_path: Path, outcomes: list[Outcome], read_as: Outcome | str) -> None:
    sample = _failing("sin").to_json()
    records = [dict(sample, outcome=outcomes[0].value), _failing("cos").to_json()]
    _journal_of(tmp_path, records + [dict(sample, outcome=o.value) for o in outcomes[1:]], {"torch": "2.13.0"})
    if not isinstance(read_as, Outcome):
        pattern = re.escape(read_as).replace(re.escape(".*"), ".*")
        with pytest.raises(ResultsError, match=rf"r\.json\.partial:{pattern}$"):
            read(tmp_path / "r.json.partial")
        return
    assert [(r.op, r.outcome) for r in read(tmp_path / "r.json.partial")[1]] == [("sin", read_as), ("cos", _F)]


def test_an_input_that_reports_no_size_is_read_whole(tmp_path: Path) -> None:
    """``read_input`` reads past the size ``fstat`` gave: a file that grew since, or one that
    reports none (procfs), is read whole, never cut short; the limit still holds."""
    from optests import _files

    status = Path("/proc/self/status")
    if not status.exists() or status.stat().st_size != 0:
        pytest.skip("no procfs file that reports size 0 here")
    text = _files.read_input(status)
    assert text.endswith(b"\n") and b"\nPid:\t" in text and len(text) > 100
    with pytest.raises(_files.ReadError, match="holds more than 64 bytes"):
        _files.read_input(status, limit=64)
