"""Hostile results files and histories (issue 25, items 4, 6, 7 and 11): a full disk during ingest,
dates and text that cannot be stored, damaged database rows, terminal escapes in messages. Each is
an input error (exit 2, one line naming the file), never an internal error, and nothing a results
file holds reaches the terminal raw."""

from __future__ import annotations

import importlib.util
import json
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from test_history import ENV, NEW, OLD, rec

from optests import cli
from optests._results import write

ROOT = Path(__file__).resolve().parents[1]
DATED = {**ENV, "date": "2026-11-22T03:00:00+00:00"}
#: What a terminal must never be sent from a results file: controls other than the newline.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _one_line(code: int, out: str, err: str, command: str, path: Path, says: str) -> None:
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith(f"optests {command}: error: {path}"), err
    assert says in err, err
    assert "Traceback" not in err and "internal error" not in err


# -- item 4: a full disk during ingest ------------------------------------------------------------

_LIMITED = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as on a full disk
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
from optests import cli
sys.exit(cli.main(sys.argv[2:]))
"""


def test_a_full_disk_during_ingest_reports_the_real_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("bench_scale", ROOT / "bench" / "scale.py")
    assert spec is not None and spec.loader is not None
    scale = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scale)
    db, small, big = tmp_path / "h.db", tmp_path / "small.json", tmp_path / "big.json"
    write(small, OLD, DATED)
    assert _main(capsys, "history", "ingest", str(small), "--db", str(db))[0] == 0
    size = db.stat().st_size
    scale.write_run(big, 30000)  # more than SQLite's page cache holds: pages are written during the inserts
    done = subprocess.run(
        [sys.executable, "-c", _LIMITED, str(size + 16384), "history", "ingest", str(big), "--db", str(db)],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # not ROOT: "python -c" puts the current folder first on sys.path
        env={"PYTHONPATH": str(Path(cli.__file__).parents[1]), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"optests history: error: {db}: "), done.stderr
    assert "cannot rollback" not in done.stderr and "not a usable" not in done.stderr
    assert re.search(r"disk is full|disk I/O error|File too large", done.stderr), done.stderr
    code, out, err = _main(capsys, "history", "list", "--db", str(db))  # the database as it was
    assert (code, out.count("\n"), err) == (0, 1, "")


# -- item 6: dates and text that cannot be stored -------------------------------------------------


@pytest.mark.parametrize("date", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_a_date_out_of_range_in_utc_is_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], date: str) -> None:
    results = tmp_path / "r.json"
    write(results, OLD, {**ENV, "date": date})
    code, out, err = _main(capsys, "history", "ingest", str(results), "--db", str(tmp_path / "h.db"))
    _one_line(code, out, err, "history", results, "out of range")


def _with_surrogate(field: str) -> Callable[[dict[str, object]], None]:
    def change(record: dict[str, object]) -> None:
        record[field] = f"{record[field]}\ud800"

    return change


@pytest.mark.parametrize("field", ["message", "op", "tolerance", "db"])
def test_a_lone_surrogate_is_an_input_error_in_diff_and_ingest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str
) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    write(good, OLD, DATED)
    data = json.loads(good.read_text())
    _with_surrogate(field)(data["samples"][1])
    bad.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")  # "\ud800" spelled out, as JSON allows
    assert "\\ud800" in bad.read_text()
    code, out, err = _main(capsys, "diff", str(good), str(bad))
    _one_line(code, out, err, "diff", bad, "samples[1]")
    code, out, err = _main(capsys, "history", "ingest", str(bad), "--db", str(tmp_path / "h.db"))
    _one_line(code, out, err, "history", bad, "samples[1]")


def test_a_lone_surrogate_in_the_environment_is_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "r.json"
    write(results, OLD, {**DATED, "torch": "2.13\ud800"})
    code, out, err = _main(capsys, "history", "ingest", str(results), "--db", str(tmp_path / "h.db"))
    _one_line(code, out, err, "history", results, '"environment"')


# -- item 7: a damaged history database -----------------------------------------------------------

DAMAGE = {
    "an unknown outcome": "UPDATE outcomes SET outcome = 'exploded' WHERE case_id = 1",
    "an unknown stage": "UPDATE outcomes SET stage = 'compile' WHERE stage IS NOT NULL",
    "a string duration": "UPDATE outcomes SET duration = 'slow'",
    "a key that does not match its fields": "UPDATE cases SET op = 'tan' WHERE op = 'sin'",
    "a sample that is no index": "UPDATE cases SET sample = -4 WHERE sample = 1",
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_history_is_an_input_error_for_export_and_dashboard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    db, results = tmp_path / "h.db", tmp_path / "r.json"
    write(results, NEW, DATED)
    assert _main(capsys, "history", "ingest", str(results), "--db", str(db))[0] == 0
    con = sqlite3.connect(db)
    con.execute(DAMAGE[damage])
    con.commit()
    con.close()
    code, out, err = _main(capsys, "history", "export", "--db", str(db), "--out", str(tmp_path / "x.json"))
    _one_line(code, out, err, "history", db, "the database is damaged")
    code, out, err = _main(capsys, "dashboard", "--db", str(db), "--out", str(tmp_path / "site"))
    _one_line(code, out, err, "dashboard", db, "the database is damaged")


# -- item 11: terminal escapes ----------------------------------------------------------------------

HOSTILE = "\x1b]0;owned\x07\x1b[2J\x00\x9b31m\u202egnp.exe"


def test_diff_shows_control_characters_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    write(old, OLD, DATED)
    write(new, [rec("sin", "static", 0, "failed", "forward", f"out=1{HOSTILE} [sin]"), *NEW[1:]], {**DATED, "torch": HOSTILE})
    for form in ("text", "markdown"):
        code, out, _ = _main(capsys, "diff", str(old), str(new), "--format", form)
        assert code == 1
        assert not RAW.search(out), repr(out)
        assert "\\x1b]0;owned\\x07\\x1b[2J\\x00\\x9b31m\\u202egnp.exe" in out


def test_history_commands_show_control_characters_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db, results = tmp_path / "h.db", tmp_path / f"r{HOSTILE[:4]}.json"
    write(results, OLD, {**DATED, "torch": f"2.13.0{HOSTILE}"})
    for argv in (
        ("history", "ingest", str(results), "--db", str(db)),
        ("history", "ingest", str(results), "--db", str(db)),  # "already run 1"
        ("history", "list", "--db", str(db)),
    ):
        code, out, err = _main(capsys, *argv)
        assert code == 0, err
        assert not RAW.search(out), repr(out)
        assert "\\x1b" in out


def test_a_message_holding_a_lone_surrogate_is_written_so_that_it_reads_back(tmp_path: Path) -> None:
    """An exception may name a file whose name is not UTF-8 (``\\udcff``): optests writes the
    escape, never a file its own reader refuses."""
    from optests._results import read

    record = rec("sin", "static", 0, "failed", "forward", message="cannot open /tmp/\udcff.pt")
    write(tmp_path / "r.json", [record], DATED)
    (back,) = read(tmp_path / "r.json")[1]
    assert back.message == "cannot open /tmp/\\udcff.pt"
