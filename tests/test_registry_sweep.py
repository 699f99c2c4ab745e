"""The registry enforced by the sweep and rewritten by accept, through pytest itself (pytester)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from filelock import FileLock
from sweepdir import run_cli, run_inline

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "sweep_fixtures"
DB = ["--optests-dbs=buggy_ops:ops", "-p", "no:cacheprovider"]


@pytest.fixture(scope="session")
def accepted_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the session keeps the registry :func:`accepted` gives: the xdist workers of one run
    share it (their temporary folders' parent is that run's), a run without workers keeps its own."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "buggy_ops-accepted.json"


@pytest.fixture
def accepted(sweep: pytest.Pytester, accepted_once: Path) -> Path:
    """A registry accepted from a serial run over the buggy ops, in this test's directory. The run
    is made once a session (by the first test that asks, in its own directory); every other test
    gets a copy of what it accepted, and changes its copy alone."""
    registry = sweep.path / "expected_failures.json"
    with FileLock(f"{accepted_once}.lock"):
        if not accepted_once.exists():
            result = run_inline(sweep, *DB, "--optests-accept")
            assert result.ret == pytest.ExitCode.OK, result.stdout.str()
            accepted_once.write_bytes(registry.read_bytes())
        registry.write_bytes(accepted_once.read_bytes())
    return registry


def test_accept_records_every_failure_and_the_run_is_then_green(sweep: pytest.Pytester, accepted: Path) -> None:
    entries = json.loads(accepted.read_text())["entries"]
    assert {(e["op"], e["mode"], e["stage"], e["samples"]) for e in entries} == {
        ("buggy_fake", "static", "metadata", "0-3"),
        ("buggy_fake", "dynamic", "metadata", "0-3"),
        ("buggy_long", "static", "forward", "2-3"),
        ("buggy_long", "dynamic", "forward", "2-3"),
    }
    result = run_inline(sweep, *DB, "--optests-strict-registry")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*registry: passed 12, xfailed 12*", "*12 passed, 12 xfailed*"])


def test_deleting_an_entry_is_red_with_sample_stage_and_accept_command(sweep: pytest.Pytester, accepted: Path) -> None:
    full = accepted.read_text()
    data = json.loads(full)
    data["entries"] = [e for e in data["entries"] if not (e["op"] == "buggy_long" and e["mode"] == "dynamic")]
    accepted.write_text(json.dumps(data))
    result = run_inline(sweep, *DB)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=12, xfailed=10, failed=2)
    result.stdout.fnmatch_lines(
        [
            "[[]forward[]] out=max abs diff *, but expected equal to eager within tolerance [[]buggy_long dynamic float32 cpu sample 2[]]",
            "Not in the expected-failures registry (expected_failures.json). If this failure is expected, record it:",
            "  pytest test_aot_autograd.py --optests-ops='buggy_long' --optests-modes=dynamic --optests-dtypes=float32 --optests-devices=cpu --optests-dbs='buggy_ops:ops' --optests-accept",
        ]
    )
    accepted.write_text(full)
    assert run_inline(sweep, *DB).ret == pytest.ExitCode.OK


def test_an_entry_that_now_passes_or_fails_elsewhere_is_red(sweep: pytest.Pytester, accepted: Path) -> None:
    data = json.loads(accepted.read_text())
    for e in data["entries"]:
        if e["op"] == "buggy_long" and e["mode"] == "static":
            e["samples"] = [1, 2, 3]  # sample 1 passes: strict
        if e["op"] == "buggy_fake" and e["mode"] == "static":
            e["stage"] = "trace"  # it fails at metadata
    accepted.write_text(json.dumps(data))
    result = run_inline(sweep, *DB)
    result.assert_outcomes(passed=11, xfailed=8, failed=5)
    result.stdout.fnmatch_lines(
        [
            "stage=metadata, but expected trace [[]buggy_fake static float32 cpu sample 0[]]",
            "outcome=passed, but expected a failure at stage forward [[]buggy_long static float32 cpu sample 1[]]",
        ]
    )


@pytest.mark.parametrize("strict", [False, True])
def test_a_bogus_entry_is_reported_stale(sweep: pytest.Pytester, accepted: Path, strict: bool) -> None:
    data = json.loads(accepted.read_text())
    data["entries"].append(
        {
            "op": "no_such_op",
            "variant": "",
            "mode": "static",
            "dtype": "float32",
            "device": "cpu",
            "status": "xfail",
            "stage": "trace",
            "reason": "bogus",
            "samples": [0],
        }
    )
    accepted.write_text(json.dumps(data))
    result = run_inline(sweep, *DB, *(["--optests-strict-registry"] if strict else []))
    result.stdout.fnmatch_lines(
        ["stale registry entry (matches no collected sample): no_such_op static float32 cpu trace samples=[[]0[]]"]
    )
    assert result.ret == (pytest.ExitCode.TESTS_FAILED if strict else pytest.ExitCode.OK)


def test_entries_of_a_database_the_run_left_out_are_neither_stale_nor_dropped(sweep: pytest.Pytester, accepted: Path) -> None:
    """A sweep of one database says nothing of another's entries: op_db's ``sin`` and
    module_db's ``nn.Linear`` here, in a sweep of the buggy ops (as module_db's are in a sweep of
    the defaults, and the defaults' in a sweep of module_db). Judged by op name alone they would
    be stale, failing every strict run, and a whole-selection accept would delete them."""
    data = json.loads(accepted.read_text())
    others = [
        dict(data["entries"][0], op="sin", variant="", samples=[0]),
        dict(data["entries"][0], op="nn.Linear", variant="train", samples=[0]),
    ]
    data["entries"] += others
    accepted.write_text(json.dumps(data))
    result = run_inline(sweep, *DB, "--optests-strict-registry")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert "stale registry entry" not in result.stdout.str()
    # a variant that no database has is stale, though its op's name is op_db's
    data["entries"].append(dict(data["entries"][0], op="sin", variant="no_such_variant", samples=[0]))
    accepted.write_text(json.dumps(data))
    result = run_inline(sweep, *DB)
    result.stdout.fnmatch_lines(["stale registry entry (matches no collected sample): sin.no_such_variant *"])
    data["entries"].pop()
    accepted.write_text(json.dumps(data))
    assert run_inline(sweep, *DB, "--optests-accept").ret == pytest.ExitCode.OK
    kept = [(e["op"], e["variant"]) for e in json.loads(accepted.read_text())["entries"]]
    assert ("sin", "") in kept and ("nn.Linear", "train") in kept


def test_a_malformed_registry_stops_the_run_before_any_test(sweep: pytest.Pytester) -> None:
    (sweep.path / "expected_failures.json").write_text('{"schema_version": 1, "entries": [{"op": "sin"}]}')
    result = run_inline(sweep, *DB)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: */expected_failures.json: entries[[]0[]] (sin [?]): missing field 'variant'"])
    assert "Traceback" not in result.stderr.str() and "passed" not in result.stdout.str()


@pytest.mark.slow
def test_accept_after_xdist_and_after_two_shards_give_the_same_bytes(
    sweep: pytest.Pytester, accepted: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    serial = accepted.read_bytes()
    accepted.unlink()
    assert run_inline(sweep, *DB, "-n", "2", "--optests-accept").ret == pytest.ExitCode.OK
    assert accepted.read_bytes() == serial
    accepted.unlink()
    for i, k in enumerate(["buggy_fake", "not buggy_fake"]):
        run_inline(sweep, *DB, "-k", k, f"--optests-results=shard{i}.json")
    done = run_cli(capsys, "accept", "shard0.json", "shard1.json")  # pytester's directory is the working one
    assert done.returncode == 0, done.stderr
    assert accepted.read_bytes() == serial


@pytest.mark.parametrize(
    ("files", "error"),
    [
        (["missing.json"], "optests accept: error: missing.json: no such file"),
        (["bad.json"], "optests accept: error: bad.json:1:2: not valid JSON: *"),
        (["other.json"], 'optests accept: error: other.json: not an optests results file (no "kind": "optests-results")'),
    ],
)
def test_accept_command_errors_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], files: list[str], error: str
) -> None:
    (tmp_path / "bad.json").write_text("{,}")
    (tmp_path / "other.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    done = run_cli(capsys, "accept", *files)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and (lines[0] == error or lines[0].startswith(error.rstrip("*"))), done.stderr


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            ["--optests-results=blocker/results.json"],
            "ERROR: --optests-results: blocker/results.json: cannot be written: Not a directory",
        ),
        (["--optests-accept", "--optests-registry=ro.json"], "ERROR: --optests-accept: */ro.json: is read-only (mode 444)*"),
        (["--optests-results=a-dir"], "ERROR: --optests-results: a-dir: is a directory, not a file"),
    ],
    ids=["results-under-a-file", "read-only-registry", "results-is-a-directory"],
)
def test_outputs_are_checked_before_any_test_runs(sweep: pytest.Pytester, args: list[str], error: str) -> None:
    (sweep.path / "blocker").write_text("a file, not a directory")
    (sweep.path / "a-dir").mkdir()
    (sweep.path / "ro.json").write_text('{"entries": [], "schema_version": 1}\n')
    (sweep.path / "ro.json").chmod(0o444)
    result = run_inline(sweep, "--optests-dbs=buggy_ops:ops", "--optests-modes=static", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([error])
    assert "passed" not in result.stdout.str() and "INTERNALERROR" not in result.stderr.str()


_NARROWINGS = {
    "k": ["-k", "good"],
    "deselect": ["--deselect", "test_aot_autograd.py::test_aot_autograd[static-float32-cpu-buggy_fake-sample0]"],
    "pytest-split": ["--splits", "2", "--group", "1"],
    "node-id": ["test_aot_autograd.py::test_aot_autograd[static-float32-cpu-good-sample0]"],
}


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.parametrize("narrowing", sorted(_NARROWINGS))
def test_a_narrowed_run_reports_no_entry_of_what_it_left_out_as_stale(
    sweep: pytest.Pytester, accepted: Path, narrowing: str, xdist: list[str]
) -> None:
    """Deselected samples are known through pytest_deselected (on xdist, sent by the workers),
    so their entries are not stale: --optests-strict-registry holds in a narrowed run."""
    result = run_inline(sweep, *DB, "--optests-strict-registry", *_NARROWINGS[narrowing], *xdist)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert "stale registry entry" not in result.stdout.str()


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_narrowed_run_still_reports_an_entry_nothing_could_match(
    sweep: pytest.Pytester, accepted: Path, xdist: list[str]
) -> None:
    data = json.loads(accepted.read_text())
    bogus = dict(data["entries"][0], op="buggy_gone", samples=[0])
    data["entries"].append(bogus)
    accepted.write_text(json.dumps(data))
    result = run_inline(sweep, *DB, "--optests-strict-registry", "-k", "buggy", *xdist)
    result.stdout.fnmatch_lines(["stale registry entry (matches no collected sample): buggy_gone *"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize("flag", ["--lf", "--sw"])
def test_last_failed_and_stepwise_runs_report_no_stale_entries(sweep: pytest.Pytester, accepted: Path, flag: str) -> None:
    """--sw deselects what passed before the last failure (reported through pytest_deselected);
    --lf does not even collect a module's passing tests. Both need pytest's cache, kept on."""
    registry = accepted.read_text()
    data = json.loads(registry)
    data["entries"] = [e for e in data["entries"] if not (e["op"] == "buggy_long" and e["mode"] == "static")]
    accepted.write_text(json.dumps(data))
    args = ["--optests-dbs=buggy_ops:ops", "--optests-strict-registry"]
    assert run_inline(sweep, *args, flag).ret != pytest.ExitCode.OK  # buggy_long static fails (--sw stops there)
    accepted.write_text(registry)
    result = run_inline(sweep, *args, flag)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert "stale registry entry" not in result.stdout.str()
    assert "deselected" in result.stdout.str() if flag == "--sw" else "rerun previous 2 failures" in result.stdout.str()


def test_entries_that_can_never_match_are_stale_whatever_the_run_selects(sweep: pytest.Pytester) -> None:
    """A misspelt backend (``inductr``) is a name a module might register, so it loads; a derived
    sample's suffix that no transform makes (``noncontiguous-0``: it has no index; ``tangents-4``:
    tangents has four) is known only from the transforms' rows, which import torch. The run knows
    both: they are reported stale whatever it selects (this run checks aot_eager, no transform),
    and a strict run fails on them."""
    entry = {
        "op": "good", "variant": "", "mode": "static", "dtype": "float32", "device": "cpu", "status": "xfail",
        "stage": "forward", "reason": "never", "samples": "0",
    }  # fmt: skip
    entries = [{**entry, "backend": "inductr"}, {**entry, "transform": "noncontiguous-0"}, {**entry, "transform": "tangents-4"}]
    entries.append({**entry, "transform": "tangents-3"})  # one that a run with tangents makes: not stale here
    (sweep.path / "expected_failures.json").write_text(json.dumps({"schema_version": 4, "entries": entries}))
    args = [*DB, "--optests-ops=good", "--optests-modes=static"]
    result = run_inline(sweep, *args, "--optests-strict-registry")
    stale = [line for line in result.stdout.lines if line.startswith("stale registry entry")]
    assert stale == [
        "stale registry entry (matches no collected sample): good static float32 cpu @inductr forward samples=[0]",
        "stale registry entry (matches no collected sample): good static float32 cpu noncontiguous-0 forward samples=[0]",
        "stale registry entry (matches no collected sample): good static float32 cpu tangents-4 forward samples=[0]",
    ], result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert run_inline(sweep, *args).ret == pytest.ExitCode.OK  # reported, not failed, unless strict


def test_the_suggested_accept_command_quotes_what_a_shell_would_read(sweep: pytest.Pytester) -> None:
    """An op's name from a user's database (a quote, a command after it) and the database's
    spec reach the suggested command quoted: a shell reads back exactly the words meant, and
    runs nothing else."""
    name = "it's'; touch pwned; echo '"
    sweep.makepyfile(
        quoted_ops=f"""
        import copy
        from buggy_ops import ops as buggy

        ops = [copy.copy(o) for o in buggy if o.name == "buggy_long"]
        ops[0].name = {name!r}
        """
    )
    result = run_inline(sweep, "--optests-dbs=quoted_ops:ops", "-p", "no:cacheprovider", "--optests-modes=static")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    command = next(
        line.strip() for line in result.stdout.lines if line.strip().startswith("pytest ") and "--optests-accept" in line
    )
    words = subprocess.run(
        ["bash", "-c", f"printf '%s\\n' {command}"], cwd=sweep.path, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert words == [
        "pytest", "test_aot_autograd.py", f"--optests-ops={name}", "--optests-modes=static", "--optests-dtypes=float32",
        "--optests-devices=cpu", "--optests-dbs=quoted_ops:ops", "--optests-accept",
    ]  # fmt: skip
    assert not (sweep.path / "pwned").exists()
