"""One error discipline for the ``optests`` command: exit 2 and one line naming the file for bad
input, exit 3 and a saved traceback for a bug in optests, 1 only for findings and new failures;
and results files checked record by record as they are read."""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import expecttest
import pytest
from test_history import ENV, NEW, rec

from optests import _durations, _history, _results, cli
from optests._history import History
from optests._results import ResultsError, read, write

ROOT = Path(__file__).resolve().parents[1]
DATED = {**ENV, "date": "2026-11-22T03:00:00+00:00"}


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_error(code: int, out: str, err: str, command: str, path: Path | str) -> None:
    assert code == 2, err
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith(f"optests {command}: error: {path}"), err
    assert "Traceback" not in err


# -- every subcommand x bad file -----------------------------------------------------------------


def _directory(p: Path) -> None:
    p.mkdir()


def _non_utf8(p: Path) -> None:
    p.write_bytes(b"\xff\xfe\x00")


def _under_a_file(p: Path) -> None:
    p.parent.write_text("a regular file\n")  # so p = FILE/out.json can be neither read nor written


def _unreadable(p: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads a file whatever its mode")
    write(p, NEW, DATED)
    p.chmod(0)


def _regular_file(p: Path) -> None:
    p.write_text("a regular file\n")


def _fifo(p: Path) -> None:
    os.mkfifo(p)  # no writer: opening it to read blocks until one comes, reading it never ends


def _device(p: Path) -> None:
    p.symlink_to("/dev/zero")  # endless: read whole, it fills the memory


KINDS: dict[str, tuple[str, Callable[[Path], None]]] = {
    # kind: (the bad path, relative to the test's folder; how to make it)
    "directory": ("bad", _directory),
    "non-utf8": ("bad.json", _non_utf8),
    "missing": ("missing.json", lambda p: None),
    "under-a-file": ("somefile/out.json", _under_a_file),
    "unreadable": ("unreadable.json", _unreadable),
    "file": ("somefile", _regular_file),
    "fifo": ("fifo.json", _fifo),
    "device": ("zero.json", _device),
}
READ = ("directory", "non-utf8", "missing", "under-a-file", "unreadable", "fifo", "device")
WRITE = ("directory", "under-a-file")
READ_WRITE = ("directory", "non-utf8", "under-a-file", "unreadable", "fifo", "device")  # a missing one is created


@contextlib.contextmanager
def _no_hang(seconds: float = 30.0) -> Iterator[None]:
    """Fail, rather than hang, a test whose command blocks (on a FIFO with no writer)."""

    def hung(signum: int, frame: object) -> None:
        pytest.fail(f"still running after {seconds} s: blocked on an input?")

    old = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


#: Every argument of every subcommand that names a file: the command, with BAD where the bad path
#: goes, and the kinds of bad path that are errors there.
ROLES: list[tuple[str, list[str], tuple[str, ...]]] = [
    ("diff-old", ["diff", "BAD", "GOOD"], READ),
    ("diff-new", ["diff", "GOOD", "BAD"], READ),
    ("merge-in", ["merge", "GOOD", "BAD", "--out", "OUT"], READ),
    ("merge-out", ["merge", "GOOD", "--out", "BAD"], WRITE),
    ("merge-rerun", ["merge", "GOOD", "--rerun", "BAD", "--out", "OUT"], READ),
    ("accept-in", ["accept", "BAD", "--registry", "REG"], READ),
    ("judge-in", ["judge", "BAD", "--registry", "REG"], READ),
    ("judge-registry", ["judge", "GOOD", "--registry", "BAD"], READ),
    ("accept-registry", ["accept", "GOOD", "--registry", "BAD"], READ_WRITE),
    ("ingest-in", ["history", "ingest", "BAD", "--db", "NEWDB"], READ),
    ("ingest-db", ["history", "ingest", "GOOD", "--db", "BAD"], READ_WRITE),
    ("list-db", ["history", "list", "--db", "BAD"], READ),
    ("export-db", ["history", "export", "--db", "BAD", "--out", "OUT"], READ),
    ("export-out", ["history", "export", "--db", "DB", "--out", "BAD"], WRITE),
    ("durations-in", ["durations", "BAD", "--out", "OUT"], READ),
    ("durations-out", ["durations", "GOOD", "--out", "BAD"], READ_WRITE),
    ("dashboard-db", ["dashboard", "--db", "BAD", "--out", "OUT"], READ),
    ("dashboard-out", ["dashboard", "--db", "DB", "--out", "BAD"], ("file", "under-a-file")),
    ("dashboard-registry", ["dashboard", "--db", "DB", "--out", "OUT", "--registry", "BAD"], READ),
    ("check-json", ["check", "sin", "--json", "BAD"], WRITE),
    ("check-registry", ["check", "sin", "--registry", "BAD"], READ_WRITE),
]
CASES = [pytest.param(argv, kind, id=f"{role}-{kind}") for role, argv, kinds in ROLES for kind in kinds]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """A good results file, a registry, a history database with one run, and output paths."""
    good, reg, db = tmp_path / "good.json", tmp_path / "reg.json", tmp_path / "h.db"
    write(good, NEW, DATED)
    reg.write_text('{"entries": [], "schema_version": 1}\n')
    with History(db, create=True) as h:
        h.ingest(DATED, NEW, "good.json")
    return {"GOOD": good, "REG": reg, "DB": db, "NEWDB": tmp_path / "new.db", "OUT": tmp_path / "out"}


@pytest.mark.parametrize(("argv", "kind"), CASES)
def test_bad_files_are_one_line_and_exit_2(
    tmp_path: Path, files: dict[str, Path], capsys: pytest.CaptureFixture[str], argv: list[str], kind: str
) -> None:
    name, make = KINDS[kind]
    bad = tmp_path / name
    make(bad)
    before = {p: p.read_bytes() for p in files.values() if p.is_file()}
    with _no_hang():
        code, out, err = _main(capsys, *(str(bad) if a == "BAD" else str(files.get(a, a)) for a in argv))
    _one_line_error(code, out, err, argv[0], bad)
    assert {p: p.read_bytes() for p in before} == before  # nothing written: not the registry, not the database
    assert not files["NEWDB"].exists() and not files["OUT"].exists()


def test_a_real_process_exits_2_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe\x00")
    done = subprocess.run(
        [sys.executable, "-m", "optests.cli", "diff", str(bad), str(bad)], capture_output=True, text=True, cwd=tmp_path
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"optests diff: error: {bad}: not UTF-8 text (byte 0xff at offset 0)\n"


# -- internal errors ------------------------------------------------------------------------------


def _boom(args: object) -> int:
    raise RuntimeError("boom\nsecond line")


def test_an_internal_error_exits_3_and_saves_its_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(cli, "_diff", _boom)
    code, out, err = _main(capsys, "diff", "a.json", "b.json")
    m = re.fullmatch(r"optests diff: internal error: RuntimeError: boom \(full traceback in (\S+)\)\n", err)
    assert (code, out) == (3, "") and m is not None, err
    report = Path(m.group(1))
    assert report.parent == tmp_path and re.fullmatch(rf"optests-crash-{os.getpid()}-\d{{8}}-\d{{6}}-\w+\.txt", report.name)
    text = report.read_text()
    assert "command: optests diff a.json b.json" in text
    assert "Traceback (most recent call last):" in text and 'raise RuntimeError("boom' in text
    assert text.rstrip().endswith("RuntimeError: boom\nsecond line")


def test_an_internal_error_in_a_real_process_exits_3(tmp_path: Path) -> None:
    script = (
        "import sys\nfrom optests import cli\n"
        "def boom(args):\n    raise KeyError('no such thing')\n"
        "cli._merge = boom\nsys.exit(cli.main(sys.argv[1:]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "merge", "x.json", "--out", "y.json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert done.returncode == 3, done.stderr
    m = re.fullmatch(r"optests merge: internal error: KeyError: 'no such thing' \(full traceback in (\S+)\)\n", done.stderr)
    assert m is not None, done.stderr
    assert "KeyError: 'no such thing'" in Path(m.group(1)).read_text()


def test_help_and_readme_document_the_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["check", "--help"], ["diff", "--help"], ["--help"]):
        with pytest.raises(SystemExit):
            cli.main(argv)
        text = " ".join(capsys.readouterr().out.split())
        assert "2 usage or input error, 3 internal error (a bug in optests" in text, argv
        assert "130 interrupted, 141 the reader of its output went away" in text, argv  # as main maps them
    rows = re.findall(r"^\| ([0-3]) \| (.+) \|$", (ROOT / "README.md").read_text(), re.M)
    assert [n for n, _ in rows] == ["0", "1", "2", "3"]
    assert "internal error" in rows[3][1] and "usage or input error" in rows[2][1]


# -- records checked as they are read ------------------------------------------------------------

_MISSING = object()
BAD_RECORDS: dict[str, tuple[str, Any]] = {
    "sample-negative": ("sample", -1),
    "sample-float": ("sample", 1.5),
    "sample-string": ("sample", "3"),
    "sample-bool": ("sample", True),
    "sample-past-the-limit": ("sample", 100_000),  # the registry could not hold its entry
    "mode-unknown": ("mode", "statc"),
    "dtype-unknown": ("dtype", "float33"),
    "device-unknown": ("device", "tpu"),
    "id-not-a-string": ("id", 3),
    "message-null": ("message", None),
    "duration-nan": ("duration", math.nan),
    "duration-infinity": ("duration", math.inf),
    "duration-huge": ("duration", "1e999"),  # a literal that Python's json reads as inf
    "duration-negative": ("duration", -1),
    "duration-string": ("duration", "0.5"),
    "outcome-unknown": ("outcome", "fail"),
    "stage-unknown": ("stage", "nope"),
    "op-empty": ("op", ""),  # not an id mismatch: the op has no name
    "op-missing": ("op", _MISSING),
    "outcome-missing": ("outcome", _MISSING),
}


def _bad_results(path: Path, field: str, value: Any) -> None:
    write(path, NEW, DATED)
    data = json.loads(path.read_text())
    if value is _MISSING:
        del data["samples"][1][field]
    else:
        data["samples"][1][field] = value
    text = json.dumps(data, indent=2, sort_keys=True)  # NaN and Infinity as Python writes them
    path.write_text(text.replace('"1e999"', "1e999"))


@pytest.mark.parametrize(("field", "value"), BAD_RECORDS.values(), ids=BAD_RECORDS.keys())
def test_accept_refuses_a_bad_record_and_leaves_the_registry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: Any
) -> None:
    results, registry = tmp_path / "r.json", tmp_path / "reg.json"
    _bad_results(results, field, value)
    registry.write_text('{"entries": [], "schema_version": 1}\n')
    before = registry.read_bytes()
    code, out, err = _main(capsys, "accept", str(results), "--registry", str(registry))
    _one_line_error(code, out, err, "accept", results)
    assert registry.read_bytes() == before
    with pytest.raises(ResultsError) as e:
        read(results)
    assert f"optests accept: error: {e.value}\n" == err
    assert re.search(rf"samples\[1\]: .*\b{field}\b|NaN|Infinity", str(e.value))


def test_from_json_checks_values_python_gives_it() -> None:
    good = NEW[0].to_json()
    assert _results.SampleResult.from_json(good) == NEW[0]
    for field, value in [("duration", math.nan), ("duration", math.inf), ("sample", -2), ("mode", "static ")]:
        with pytest.raises(ValueError, match=f"^{field}="):
            _results.SampleResult.from_json({**good, field: value})
    internal = {**good, "outcome": "failed", "stage": None, "message": "optests internal error: x"}
    assert _results.SampleResult.from_json(internal).stage is None  # an internal error has no stage


def test_a_duplicate_id_in_one_file_is_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dup, good, db = tmp_path / "dup.json", tmp_path / "good.json", tmp_path / "h.db"
    write(good, NEW, DATED)
    data = json.loads(good.read_text())
    data["samples"].append({**data["samples"][0], "outcome": "failed", "stage": "trace"})
    dup.write_text(json.dumps(data))
    _one_line_error(*_main(capsys, "diff", str(good), str(dup)), "diff", dup)
    code, out, err = _main(capsys, "history", "ingest", str(good), str(dup), "--db", str(db))
    _one_line_error(code, out, err, "history", dup)
    assert "is recorded twice (first at samples[0])" in err
    assert not db.exists()  # every file is read before the database is touched
    with History(db, create=True) as h, pytest.raises(_history.HistoryError, match="recorded twice"):
        h.ingest(DATED, [*NEW, NEW[0]], "api")  # from the API too, before SQLite says "UNIQUE constraint failed"


class TestMessages(expecttest.TestCase):
    """The exact lines. Rewrite them after an intended change with EXPECTTEST_ACCEPT=1."""

    def _errors(self, make: Callable[[Path], None]) -> str:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "R.json"
            make(path)
            try:
                read(path)
            except ResultsError as e:
                return str(e).replace(tmp + os.sep, "")
            return "no error"

    def test_bad_records(self) -> None:
        lines = [self._errors(lambda p, f=f, v=v: _bad_results(p, f, v)) for f, v in BAD_RECORDS.values()]  # type: ignore[misc]
        self.assertExpectedInline(
            "\n".join(lines),
            """\
R.json: samples[1]: sample=-1, but expected null or an integer from 0 to 99,999
R.json: samples[1]: sample=1.5, but expected null or an integer from 0 to 99,999
R.json: samples[1]: sample='3', but expected null or an integer from 0 to 99,999
R.json: samples[1]: sample=True, but expected null or an integer from 0 to 99,999
R.json: samples[1]: sample=100000, but expected null or an integer from 0 to 99,999
R.json: samples[1]: mode='statc', but expected one of static, dynamic, static-nofunc, dynamic-nofunc
R.json: samples[1]: dtype='float33', but expected one of float32, float64, float16, bfloat16, complex64, complex128, int8, int16, int32, int64, uint8, bool
R.json: samples[1]: device='tpu', but expected one of cpu, cuda
R.json: samples[1]: id=3, but expected a string
R.json: samples[1]: message=None, but expected a string
R.json: NaN is not valid JSON (optests never writes NaN or Infinity)
R.json: Infinity is not valid JSON (optests never writes NaN or Infinity)
R.json: the number 1e999 is out of range and would read as infinity (optests never writes NaN or Infinity)
R.json: samples[1]: duration=-1, but expected a finite number of seconds >= 0
R.json: samples[1]: duration='0.5', but expected a finite number of seconds >= 0
R.json: samples[1]: outcome='fail', but expected one of passed, failed, skipped, not_applicable
R.json: samples[1]: stage='nope', but expected null or one of eager, trace, forward, backward, metadata, mutation, randomized, sequence, crash, timeout
R.json: samples[1]: op='', but expected a non-empty string
R.json: samples[1]: missing field 'op'
R.json: samples[1]: missing field 'outcome'""",
        )

    def test_bad_files(self) -> None:
        def dup(p: Path) -> None:
            write(p, [*NEW, NEW[0]], DATED)

        def journal(p: Path) -> None:
            p.write_text(
                '{"kind": "optests-results-journal", "schema_version": 2, "environment": {}}\n'
                + "".join(json.dumps(r.to_json()) + "\n" for r in (NEW[0], NEW[1], NEW[0]))
            )

        def journal_nan(p: Path) -> None:
            p.write_text(
                '{"kind": "optests-results-journal", "schema_version": 2, "environment": {}}\n'
                + json.dumps({**NEW[0].to_json(), "duration": math.nan})
                + "\n"
            )

        def samples_not_a_list(p: Path) -> None:
            p.write_text('{"kind": "optests-results", "schema_version": 2, "samples": {"a": 1}}')

        def environment_not_strings(p: Path) -> None:
            p.write_text('{"kind": "optests-results", "schema_version": 2, "samples": [], "environment": {"torch": 2.13}}')

        def record_not_an_object(p: Path) -> None:
            p.write_text('{"kind": "optests-results", "schema_version": 2, "samples": [[1, 2]]}')

        makers = (
            _directory,
            _non_utf8,
            dup,
            journal,
            journal_nan,
            samples_not_a_list,
            environment_not_strings,
            record_not_an_object,
        )
        lines = [self._errors(make) for make in makers]
        self.assertExpectedInline(
            "\n".join(lines),
            """\
R.json: is a directory, not a file
R.json: not UTF-8 text (byte 0xff at offset 0)
R.json: samples[6]: id 'static-float32-cpu-sin-sample0' is recorded twice (first at samples[5])
R.json:4: id 'static-float32-cpu-sin-sample0' is recorded twice (first on line 2)
R.json:2: NaN is not valid JSON (optests never writes NaN or Infinity)
R.json: "samples" must be a list, got dict
R.json: "environment" must be an object of strings, got {'torch': 2.13}
R.json: samples[0]: a record must be a JSON object, got list""",
        )


# -- NaN and Infinity are never written ----------------------------------------------------------


def test_nan_is_never_written(tmp_path: Path) -> None:
    nan = rec("sin", "static", 0)
    object.__setattr__(nan, "duration", math.nan)
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        write(tmp_path / "r.json", [nan], DATED)
    assert not (tmp_path / "r.json").exists()
    journal = _results.Journal(tmp_path / "j.json", DATED)
    with pytest.raises(ValueError, match="not JSON compliant"):
        journal.add(nan)
    journal.finish()
    inf = rec("cos", "static", 0)
    object.__setattr__(inf, "duration", math.inf)
    good = rec("tan", "static", 0)
    assert list(_durations.of([nan, inf, good])) == [f"{_durations.SWEEP_TEST}[{good.id}]"]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{"a": NaN}', "not a durations file (NaN is not valid JSON (optests never writes NaN or Infinity))"),
        (
            '{"a": 1e999}',
            "not a durations file (the number 1e999 is out of range and would read as infinity (optests never writes NaN or Infinity))",
        ),
        ('{"a": -1}', "not a durations file ('a': -1 is not a number of seconds >= 0)"),
        ('{"a": true}', "not a durations file ('a': True is not a number of seconds >= 0)"),
        ("[1, 2]", "not a durations file (expected an object of test id -> seconds)"),
    ],
)
def test_durations_file_errors_name_the_file_not_a_pytest_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, error: str
) -> None:
    results, durations = tmp_path / "r.json", tmp_path / ".test_durations"
    write(results, NEW, DATED)
    durations.write_text(text)
    code, out, err = _main(capsys, "durations", str(results), "--out", str(durations))
    assert (code, out, err) == (2, "", f"optests durations: error: {durations}: {error}\n")
    assert durations.read_text() == text
    with pytest.raises(_durations.DurationsError, match="^" + re.escape(f"{durations}: {error}") + "$"):
        _durations.load(durations)


# -- the registry in the sweep: pytest's usage error -----------------------------------------------


@pytest.mark.parametrize("kind", ["non-utf8", "directory", "fifo"])
def test_a_bad_registry_stops_the_sweep_with_a_usage_error(pytester: pytest.Pytester, kind: str) -> None:
    name, make = KINDS[kind]
    bad = pytester.path / name
    make(bad)
    with _no_hang():
        result = pytester.runpytest("--optests-registry", str(bad), "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    problem = {
        "non-utf8": "not UTF-8 text (byte 0xff at offset 0)",
        "directory": "is a directory, not a file",
        "fifo": "is a FIFO (named pipe), not a regular file",
    }[kind]
    assert f"ERROR: {bad}: {problem}" in result.errlines


def test_the_sweep_s_usage_errors_show_a_file_s_control_characters_as_escapes(pytester: pytest.Pytester) -> None:
    """A registry's entry is quoted in the error that stops the sweep: its control characters
    are shown as escapes, as the optests command shows them."""
    entry = {"op": "si\x1b]0;owned\x07n", "variant": "", "mode": "static", "dtype": "float32", "device": "cpu",
             "status": "xfail", "stage": "nowhere", "reason": "r", "samples": "all"}  # fmt: skip
    (pytester.path / "reg.json").write_text(json.dumps({"schema_version": 4, "entries": [entry]}))
    result = pytester.runpytest("--optests-registry=reg.json", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "si\\x1b]0;owned\\x07n" in err and not {"\x1b", "\x07"} & set(err), err


# -- check --device cuda without a GPU -----------------------------------------------------------


def test_check_on_cuda_without_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    code, out, err = _main(capsys, "check", "sin", "--device", "cuda")
    assert (code, out, err) == (2, "", "optests check: error: --device cuda: CUDA is not available on this machine\n")


# -- the history database: busy, and concurrent ingests --------------------------------------------


def test_a_busy_database_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    good, db = tmp_path / "good.json", tmp_path / "h.db"
    write(good, NEW, DATED)
    monkeypatch.setattr(_history, "BUSY_TIMEOUT", 0.2)
    busy = f"{db}: the database is busy (another optests is writing it); try again"
    with open(f"{db}.lock", "w") as lock:  # another ingest holds the writers' lock
        fcntl.flock(lock, fcntl.LOCK_EX)
        code, out, err = _main(capsys, "history", "ingest", str(good), "--db", str(db))
    assert (code, out, err) == (2, "", f"optests history: error: {busy}\n")
    assert _main(capsys, "history", "ingest", str(good), "--db", str(db))[0] == 0
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("BEGIN EXCLUSIVE")  # another program writes the database itself
    try:
        code, out, err = _main(capsys, "history", "list", "--db", str(db))
    finally:
        con.execute("ROLLBACK")
        con.close()
    assert (code, out, err) == (2, "", f"optests history: error: {busy}\n")


def test_writers_take_turns(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    first = History(db, create=True)
    opened = threading.Event()

    def second() -> None:
        with History(db, create=True):
            opened.set()

    thread = threading.Thread(target=second)
    thread.start()
    try:
        assert not opened.wait(0.5)  # the second writer waits for the first to close
    finally:
        first.close()
    assert opened.wait(30)
    thread.join()
    assert (tmp_path / "h.db.lock").exists()


#: ``optests ARGS...`` that starts its work at a given time, so that imports do not spread out the
#: processes and the ingests really do race.
_AT = "import sys, time; from optests import cli; time.sleep(max(0, float(sys.argv[1]) - time.time())); sys.exit(cli.main(sys.argv[2:]))"


def test_concurrent_ingests_into_a_new_database_all_succeed(tmp_path: Path) -> None:
    n = 6
    for i in range(n):
        write(tmp_path / f"r{i}.json", [rec(f"op{i}", "static", s) for s in range(3)], {**DATED, "date": f"2026-11-0{i + 1}"})
    for attempt in range(4):  # without the lock, about one ingest in eight failed ("table meta already exists")
        db = tmp_path / f"h{attempt}.db"
        start = time.time() + 1.5
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _AT, str(start), "history", "ingest", f"r{i}.json", "--db", str(db)],
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(n)
        ]
        done = [(p.wait(timeout=120), *p.communicate()) for p in procs]
        assert [rc for rc, _, _ in done] == [0] * n, [err for _, _, err in done]
        with History(db) as h:
            assert sorted(r.source for r in h.runs()) == [f"r{i}.json" for i in range(n)]


# -- ops that clash: two ops of one id --------------------------------------------------------------

_TWINS = """
import torch
from torch.testing._internal.common_modules import FunctionInput, ModuleInfo, ModuleInput


class Twin(torch.nn.Module):
    def forward(self, x):
        return x.sin()


def _inputs(module_info, device, dtype, requires_grad, training, **kwargs):
    x = torch.randn(2, device=device, dtype=dtype, requires_grad=requires_grad)
    return [ModuleInput(constructor_input=FunctionInput(), forward_input=FunctionInput(x))]


FIRST = ModuleInfo(Twin, module_inputs_func=_inputs)
SECOND = ModuleInfo(Twin, module_inputs_func=_inputs)
"""


def test_check_refuses_two_ops_of_one_id_and_checks_an_op_named_twice_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "twin_modules.py").write_text(_TWINS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    from optests import _author

    code, out, err = _main(capsys, "check", "twin_modules:FIRST", "twin_modules:SECOND")
    name = _author.resolve(["twin_modules:FIRST"])[0].name
    assert (code, out) == (2, "")
    assert err == (
        f"optests check: error: two ops have the id {name!r}: twin_modules:FIRST and twin_modules:SECOND; "
        "their results would clash, name one\n"
    )
    assert [t.name for t in _author.resolve(["twin_modules:FIRST", "twin_modules:FIRST"])] == [name]
    assert [t.name for t in _author.resolve(["sin", "si?"])] == ["sin"]


def test_an_input_past_the_size_limit_is_refused_unread(
    tmp_path: Path, files: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file read whole holds at most ``INPUT_LIMIT`` bytes, and a gzip-compressed one expands
    to at most that: more is one line and exit 2 (the sweep: a usage error), not a MemoryError."""
    import gzip

    from optests import _files
    from optests._settings import SettingError, read_ids

    monkeypatch.setattr(_files, "INPUT_LIMIT", 4096)
    big = tmp_path / "big.json"
    big.write_text('{"entries": [], "schema_version": 1, "comment": "' + "x" * 4096 + '"}\n')
    code, out, err = _main(capsys, "judge", str(files["GOOD"]), "--registry", str(big))
    _one_line_error(code, out, err, "judge", big)
    assert err.endswith(f"{big}: holds more than 4,096 bytes, the most optests reads from one input file\n")
    bomb = tmp_path / "ids.gz"
    bomb.write_bytes(gzip.compress(b"static-float32-cpu-sin-sample0\n" * 1000))  # 31 KB, in 200 bytes
    with pytest.raises(SettingError, match=r"^--optests-ids: .*ids.gz: expands to more than 4,096 bytes, "):
        read_ids("--optests-ids", bomb)


@pytest.mark.parametrize("resume", [False, True])
def test_a_journal_that_is_not_a_regular_file_is_refused_unopened(tmp_path: Path, resume: bool) -> None:
    """A FIFO where a run's journal goes (``RESULTS.partial``) is refused in one line, with or
    without ``--optests-resume``, rather than read forever."""
    from optests._files import WriteError

    os.mkfifo(tmp_path / "r.json.partial")
    with _no_hang(), pytest.raises(WriteError, match=r"r\.json\.partial: is a FIFO \(named pipe\), not a regular file$"):
        _results.Journal(tmp_path / "r.json", DATED, resume=resume)
