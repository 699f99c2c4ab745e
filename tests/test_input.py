"""Input, as the most suspicious tester would give it: one error hierarchy mapped to exit statuses
in one place, one strict JSON reader behind every file optests reads, ranges checked before they
are expanded, and Ctrl-C as one line and exit 130 with the data as it was."""

from __future__ import annotations

import fcntl
import importlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import expecttest
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_history import ENV, NEW

import optests
from optests import _registry, cli
from optests._errors import InputError, JSONError, OptestsError
from optests._history import History
from optests._json import loads
from optests._key import SAMPLE_LIMIT
from optests._registry import RegistryError, parse, parse_ranges
from optests._results import ResultsError, read, write

ROOT = Path(__file__).resolve().parents[1]
DATED = {**ENV, "date": "2026-11-22T03:00:00+00:00"}
PYTHON_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


# -- one hierarchy --------------------------------------------------------------------------------


def test_the_public_names_are_exactly_these() -> None:
    assert sorted(optests.__all__) == [
        "AuthorError",
        "Backend",
        "BackwardMismatch",
        "CheckResult",
        "EagerFailure",
        "Finding",
        "ForwardMismatch",
        "InputError",
        "MetadataMismatch",
        "Mode",
        "MutationMismatch",
        "OptestsError",
        "Outcome",
        "RandomizedMismatch",
        "SampleCheck",
        "SampleKey",
        "SequenceMismatch",
        "Stage",
        "TraceFailure",
        "Verdict",
        "__version__",
        "aot_autograd_check",
        "assert_raises_regex",
        "check_op",
        "op_test",
        "register_backend",
        "run_check",
    ]
    assert optests.OptestsError is OptestsError and optests.InputError is InputError


#: Every error class optests raises on purpose, where it lives, and its base.
ERRORS = [
    ("optests._author", "AuthorError", InputError),
    ("optests._case", "SelectionError", InputError),
    ("optests._dashboard", "DashboardError", InputError),
    ("optests._durations", "DurationsError", InputError),
    ("optests._files", "WriteError", InputError),
    ("optests._files", "Busy", InputError),
    ("optests._history", "HistoryError", InputError),
    ("optests._opinfo", "DatabaseError", InputError),
    ("optests._registry", "RegistryError", InputError),
    ("optests._results", "ResultsError", InputError),
    ("optests._settings", "SettingError", InputError),
    ("optests.cli", "CommandError", InputError),
    ("optests._errors", "JSONError", InputError),
    ("optests._source", "SourceError", OptestsError),
]


@pytest.mark.parametrize(("module", "name", "base"), ERRORS, ids=[n for _, n, _ in ERRORS])
def test_every_error_derives_from_the_root_keeping_its_name_and_import(module: str, name: str, base: type) -> None:
    if module in ("optests._author", "optests._opinfo", "optests._case"):
        pytest.importorskip("torch")
    cls = getattr(importlib.import_module(module), name)  # still importable where it is raised
    # defined in the public errors module (the root's own, in _errors, re-exported there)
    assert cls.__name__ == name and cls.__module__ in ("optests.errors", "optests._errors")
    assert getattr(importlib.import_module("optests.errors"), name) is cls
    assert issubclass(cls, base) and issubclass(cls, OptestsError)
    assert issubclass(cls, ValueError) or name in ("WriteError", "Busy")  # as before: callers catch ValueError
    assert not issubclass(cls, AssertionError)


def test_a_finding_is_an_assertion_error_outside_the_hierarchy() -> None:
    assert issubclass(optests.Finding, AssertionError) and not issubclass(optests.Finding, OptestsError)
    assert issubclass(InputError, OptestsError) and not issubclass(OptestsError, InputError)


def test_the_errors_module_is_torch_free() -> None:
    code = "import sys, optests._errors, optests._json; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, env=PYTHON_ENV)


def _raiser(e: BaseException) -> Callable[[object], int]:
    def run(args: object) -> int:
        raise e

    return run


@pytest.mark.parametrize(
    ("error", "status", "line"),
    [
        (_registry.RegistryError("reg.json: bad"), 2, "optests diff: error: reg.json: bad\n"),
        (InputError("x.json: bad"), 2, "optests diff: error: x.json: bad\n"),
        (KeyboardInterrupt(), 130, "optests diff: interrupted\n"),
        (BrokenPipeError(), 141, ""),
    ],
    ids=["registry", "input", "ctrl-c", "pipe"],
)
def test_the_command_maps_errors_to_exit_statuses(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, error: BaseException, status: int, line: str
) -> None:
    monkeypatch.setattr(cli, "_diff", _raiser(error))
    monkeypatch.setattr(cli, "_quiet_stdout", lambda: None)  # leave pytest's stdout alone
    assert cli.main(["diff", "a.json", "b.json"]) == status
    assert capsys.readouterr() == ("", line)


@pytest.mark.parametrize(("module", "name", "base"), [e for e in ERRORS if e[2] is InputError], ids=lambda v: str(v))
def test_every_input_error_exits_2_from_any_subcommand(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, module: str, name: str, base: type
) -> None:
    if module in ("optests._author", "optests._opinfo", "optests._case"):
        pytest.importorskip("torch")
    cls = getattr(importlib.import_module(module), name)
    error = cls(Path("f.json"), "what is wrong") if name in ("WriteError", "Busy") else cls("f.json: what is wrong")
    monkeypatch.setattr(cli, "_merge", _raiser(error))
    assert cli.main(["merge", "a.json", "--out", "b.json"]) == 2
    assert capsys.readouterr() == ("", "optests merge: error: f.json: what is wrong\n")


def test_errors_are_mapped_in_one_place() -> None:
    source = (ROOT / "optests" / "cli.py").read_text()
    assert "CommandError(str(e))" not in source  # no re-wrapping per command
    assert source.count("except InputError") == 1


# -- one strict JSON reader -----------------------------------------------------------------------

DEEP = "[" * 50_000 + "]" * 50_000
HOSTILE = {
    # name: JSON text put where a value goes
    "number-past-a-double": "1e400",
    "negative-number-past-a-double": "-1e400",
    "integer-past-a-double": "1" + "0" * 400,
    "integer-of-5000-digits": "9" * 5000,
    "nesting-50000-deep": DEEP,
    "lone-surrogate": '"\\ud800"',
    "lone-low-surrogate-in-text": '"ok \\udfff"',
}


def _results_with(path: Path, field: str, value: str) -> None:
    """A results file whose second record's ``field`` holds the JSON text ``value``."""
    write(path, NEW, DATED)
    data = json.loads(path.read_text())
    data["samples"][1][field] = "__VALUE__"
    path.write_text(json.dumps(data, indent=2).replace('"__VALUE__"', value))


def _field(value: str) -> str:
    return "message" if value.startswith(('"', "[")) else "duration"


def _journal_with(path: Path, field: str, value: str) -> None:
    lines = ['{"kind": "optests-results-journal", "schema_version": 2, "environment": {}}']
    for r in NEW[:3]:
        lines.append(json.dumps({**r.to_json(), field: "__VALUE__"} if r is NEW[1] else r.to_json()))
    path.write_text("\n".join(lines).replace('"__VALUE__"', value) + "\n")


def _registry_with(path: Path, value: str) -> None:
    entry = {"op": "sin", "variant": "", "mode": "static", "dtype": "float32", "device": "cpu", "status": "xfail"}
    entry.update({"stage": "trace", "samples": "0", "reason": "__VALUE__"})
    path.write_text(json.dumps({"schema_version": 4, "entries": [entry]}).replace('"__VALUE__"', value))


def _write(path: Path, text: str) -> None:
    path.write_text(text)


#: Every reader, as a command: BAD is the hostile file, GOOD a good results file.
READERS: dict[str, tuple[list[str], Callable[[Path, str], None]]] = {
    "diff": (["diff", "GOOD", "BAD"], lambda p, v: _results_with(p, _field(v), v)),
    "accept": (["accept", "BAD", "--registry", "REG"], lambda p, v: _results_with(p, _field(v), v)),
    "ingest": (["history", "ingest", "BAD", "--db", "DB"], lambda p, v: _results_with(p, _field(v), v)),
    "merge-journal": (["merge", "BAD", "--out", "OUT"], lambda p, v: _journal_with(p, _field(v), v)),
    "registry": (["accept", "GOOD", "--registry", "BAD"], _registry_with),
    "durations": (["durations", "GOOD", "--out", "BAD"], lambda p, v: _write(p, f'{{"a": {v}}}')),
}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_json_is_an_input_error_in_every_reader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reader: str, hostile: str
) -> None:
    argv, make = READERS[reader]
    bad, good, reg = tmp_path / "bad.json", tmp_path / "good.json", tmp_path / "reg.json"
    make(bad, HOSTILE[hostile])
    write(good, NEW, DATED)
    reg.write_text('{"entries": [], "schema_version": 4}\n')
    paths = {"BAD": bad, "GOOD": good, "REG": reg, "DB": tmp_path / "h.db", "OUT": tmp_path / "out.json"}
    before = {p: p.read_bytes() for p in paths.values() if p.exists()}
    code = cli.main([str(paths.get(a, a)) for a in argv])
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), err
    assert err.startswith(f"optests {argv[0]}: error: {bad}") and err.count("\n") == 1, err
    assert {p: p.read_bytes() for p in before} == before
    assert not paths["DB"].exists() and not paths["OUT"].exists()


class TestJSONMessages(expecttest.TestCase):
    """The exact lines. Rewrite them after an intended change with EXPECTTEST_ACCEPT=1."""

    def test_what_the_reader_refuses(self) -> None:
        texts = [
            *HOSTILE.values(),
            '{"a": 1, "a": 2}',
            '{"a": NaN}',
            "[1, -Infinity]",
            "[1,\n 2,]",
        ]
        lines = []
        for text in texts:
            try:
                loads(text)
                lines.append("no error")
            except JSONError as e:
                lines.append(e.at("R.json"))
        self.assertExpectedInline(
            "\n".join(lines),
            """\
R.json: the number 1e400 is out of range and would read as infinity (optests never writes NaN or Infinity)
R.json: the number -1e400 is out of range and would read as infinity (optests never writes NaN or Infinity)
R.json: the integer 10000000000000000000... (401 characters) is out of range (optests reads numbers up to about 1.8e308)
R.json: the integer 99999999999999999999... (5,000 characters) is out of range (optests reads numbers up to about 1.8e308)
R.json: arrays or objects nested too deeply to read
R.json: the string '\\ud800' holds a lone surrogate (\\ud800), which is not a character
R.json: the string 'ok \\udfff' holds a lone surrogate (\\udfff), which is not a character
R.json: duplicate JSON key 'a'
R.json: NaN is not valid JSON (optests never writes NaN or Infinity)
R.json: -Infinity is not valid JSON (optests never writes NaN or Infinity)
R.json:2:4: not valid JSON: Expecting value""",
        )

    def test_strict_reading(self) -> None:
        good = tempfile_results()
        cases: dict[str, Callable[[str], str]] = {
            "schema-true": lambda t: t.replace('"schema_version": 4', '"schema_version": true'),
            "schema-float": lambda t: t.replace('"schema_version": 4', '"schema_version": 4.0'),
            "duplicate-samples": lambda t: t.replace('"samples": [', '"samples": [], "samples": [', 1),
            "arabic-indic-digit": lambda t: t.replace("sin-sample0", "sin-sample\u0660"),
        }
        lines = []
        for name, change in cases.items():
            path = good.with_name(f"{name}.json")
            path.write_text(change(good.read_text()))
            try:
                read(path)
                lines.append(f"{name}: no error")
            except ResultsError as e:
                lines.append(str(e).replace(str(path.parent) + os.sep, ""))
        self.assertExpectedInline(
            "\n".join(lines),
            """\
schema-true.json: schema_version True is not supported (this optests reads 1, 2, 3, 4)
schema-float.json: schema_version 4.0 is not supported (this optests reads 1, 2, 3, 4)
duplicate-samples.json: duplicate JSON key 'samples'
arabic-indic-digit.json: samples[0]: id='dynamic-float32-cpu-sin-sample\u0660', but expected 'dynamic-float32-cpu-sin-sample0', as its op, variant, mode, dtype, device and sample make it""",
        )

    def test_the_registry_reads_strictly(self) -> None:
        entry = '{"op": "sin", "variant": "", "mode": "static", "dtype": "float32", "device": "cpu", "status": "xfail", "stage": "trace", "reason": "r", "samples": SAMPLES}'
        texts = [
            '{"schema_version": true, "entries": []}',
            '{"schema_version": 4.0, "entries": []}',
            '{"schema_version": 4, "entries": [], "entries": []}',
            '{"schema_version": 4, "entries": [ENTRY]}'.replace("ENTRY", entry).replace("SAMPLES", '"\u0663"'),
            '{"schema_version": 4, "entries": [ENTRY]}'.replace("ENTRY", entry).replace("SAMPLES", '"0-3, 99999-100000"'),
            '{"schema_version": 4, "entries": [ENTRY]}'.replace("ENTRY", entry).replace("SAMPLES", '"0-' + "9" * 5000 + '"'),
            '{"schema_version": 4, "entries": [ENTRY]}'.replace("ENTRY", entry).replace("SAMPLES", "[1, 100000]"),
        ]
        lines = []
        for text in texts:
            try:
                parse(text, "reg.json")
                lines.append("no error")
            except RegistryError as e:
                lines.append(str(e))
        self.assertExpectedInline(
            "\n".join(lines),
            """\
reg.json: schema_version True is not supported (this optests reads 1, 2, 3, 4)
reg.json: schema_version 4.0 is not supported (this optests reads 1, 2, 3, 4)
reg.json: duplicate JSON key 'entries'
reg.json: entries[0] (sin static): samples '\u0663': '\u0663' is not an index or a range such as 3-7
reg.json: entries[0] (sin static): samples '0-3, 99999-100000': '99999-100000' reaches past 99,999, the largest sample index optests reads
reg.json: entries[0] (sin static): samples '0-9999999999999999999999999999'... (5,002 characters): '0-9999999999999999999999999999'... (5,002 characters) reaches past 99,999, the largest sample index optests reads
reg.json: entries[0] (sin static): sample 100000 is past 99,999, the largest sample index optests reads""",
        )


def tempfile_results() -> Path:
    import tempfile

    path = Path(tempfile.mkdtemp()) / "good.json"
    write(path, NEW, DATED)
    return path


# -- ranges checked before they are expanded ------------------------------------------------------


def test_a_huge_range_is_refused_without_taking_memory(tmp_path: Path) -> None:
    """The tester's case: ``"0-100000000"`` grew ``optests accept`` to 20.8 GB. Run in a process
    limited to 1 GiB of address space, so that the old behaviour fails rather than swaps."""
    results, registry = tmp_path / "r.json", tmp_path / "reg.json"
    write(results, NEW, DATED)
    registry.write_text(parse_free_registry('"0-100000000"'))
    before = registry.read_bytes()

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    done = subprocess.run(
        [sys.executable, "-m", "optests.cli", "accept", str(results), "--registry", str(registry)],
        capture_output=True,
        text=True,
        env=PYTHON_ENV,
        preexec_fn=limit,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == (
        f"optests accept: error: {registry}: entries[0] (op0 static): samples '0-100000000': "
        "'0-100000000' reaches past 99,999, the largest sample index optests reads\n"
    )
    assert registry.read_bytes() == before


def parse_free_registry(samples: str, entries: int = 1) -> str:
    return json.dumps(
        {
            "schema_version": 4,
            "entries": [
                {
                    "op": f"op{i}",
                    "variant": "",
                    "mode": "static",
                    "dtype": "float32",
                    "device": "cpu",
                    "status": "xfail",
                    "stage": "trace",
                    "reason": "r",
                    "samples": "__S__",
                }
                for i in range(entries)
            ],
        }
    ).replace('"__S__"', samples)


def test_a_registry_lists_a_bounded_number_of_samples_in_all(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_registry, "LISTED_LIMIT", 25)
    assert len(parse(parse_free_registry('"0-4"', entries=5), "reg.json")) == 5
    with pytest.raises(RegistryError) as e:
        parse(parse_free_registry('"0-4"', entries=6), "reg.json")
    assert str(e.value) == (
        "reg.json: entries[5] (op5 static): samples '0-4': more samples than the 25 a registry lists in all (0 left for this entry)"
    )
    with pytest.raises(RegistryError, match=r"entries\[0\] \(op0 static\): samples: more samples than the 25"):
        parse(parse_free_registry(json.dumps(list(range(26)))), "reg.json")


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**30), st.integers(0, 10**30))
def test_a_range_is_checked_before_it_is_expanded(first: int, last: int) -> None:
    text = f"{first}-{last}"
    if last < SAMPLE_LIMIT and first <= last:
        assert parse_ranges(text) == tuple(range(first, last + 1))
    else:
        with pytest.raises(ValueError, match=r"reaches past 99,999|runs backwards"):
            parse_ranges(text)


@given(st.text(alphabet=st.characters(categories=["Nd"]), min_size=1, max_size=4))
def test_sample_indices_are_ascii_digits(digits: str) -> None:
    if digits.isascii():
        assert parse_ranges(digits) == (int(digits),)
    else:
        with pytest.raises(ValueError, match="is not an index or a range"):
            parse_ranges(digits)


def test_ids_and_transform_suffixes_take_ascii_digits_only() -> None:
    from optests._key import SampleKey, transform_name

    assert SampleKey.parse("static-float32-cpu-sin-sample3", lambda op: (op, "")) is not None
    assert SampleKey.parse("static-float32-cpu-sin-sample\u0663", lambda op: (op, "")) is None
    assert transform_name("grad-subset-1") == "grad-subset"
    assert transform_name("grad-subset-\u0661") == "grad-subset-\u0661"


def test_ids_and_transforms_take_no_trailing_newline() -> None:
    """``$`` matches before a final newline: ``transposed\\n`` would pass for a transform."""
    from optests._key import TRANSFORM, SampleKey

    assert SampleKey.is_id("static-float32-cpu-sin-sample3-transposed")
    assert not SampleKey.is_id("static-float32-cpu-sin-sample3-transposed\n")
    assert TRANSFORM.match("transposed") and not TRANSFORM.match("transposed\n")


# -- Ctrl-C ---------------------------------------------------------------------------------------


def _rchar(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    return 0


def _opened(pid: int, path: Path) -> bool:
    fds = Path(f"/proc/{pid}/fd")
    try:
        return any(os.readlink(fd) == str(path) for fd in fds.iterdir())
    except OSError:
        return False


def _interrupt(argv: list[str], ready: Callable[[int], bool], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``optests ARGV``, send it SIGINT once ``ready(pid)``, and wait for it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "optests.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=PYTHON_ENV,
        # Ctrl-C as a terminal delivers it: a shell's background job would start with it ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while not ready(proc.pid):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the command never got under way"
        time.sleep(0.002)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _large_results(path: Path, n: int) -> None:
    """A synthetic run of ``n`` failing records, written as text (faster than records)."""
    records = []
    for i in range(n):
        op, s = f"op{i // 1000}", i % 1000
        records.append(
            f'{{"db": "op_db", "device": "cpu", "dtype": "float32", "duration": 0.01, "id": "static-float32-cpu-{op}-sample{s}", '
            f'"message": "forward finding out[0]=1.0, but expected 2.0", "mode": "static", "op": "{op}", "outcome": "failed", '
            f'"sample": {s}, "stage": "forward", "variant": "", "verdict": ""}}'
        )
    env, samples = json.dumps(DATED), ",\n".join(records)
    path.write_text(
        f'{{"complete": true, "environment": {env}, "kind": "optests-results", "samples": [\n{samples}\n], "schema_version": 3}}\n'
    )


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux's /proc")
def test_ctrl_c_during_accept_is_one_line_and_exit_130(tmp_path: Path) -> None:
    """SIGINT while accept reads a large run (or waits for the registry's lock, which this test
    holds so that accept cannot finish first): one line, exit 130, the registry as it was."""
    results, registry = tmp_path / "r.json", tmp_path / "reg.json"
    _large_results(results, 60_000)
    size = results.stat().st_size
    registry.write_text(parse_free_registry('"0-2"'))
    before = registry.read_bytes()
    with open(tmp_path / "reg.json.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = _interrupt(["accept", str(results), "--registry", str(registry)], lambda pid: _rchar(pid) >= size, tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "optests accept: interrupted\n")
    assert registry.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "reg.json", "reg.json.lock"]


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux's /proc")
def test_ctrl_c_during_history_ingest_is_one_line_and_exit_130(tmp_path: Path) -> None:
    """SIGINT while ingest waits for the database (another writer holds its lock): one line,
    exit 130, the database as it was."""
    results, db = tmp_path / "r.json", tmp_path / "h.db"
    _large_results(results, 20_000)
    with History(db, create=True) as h:
        h.ingest(DATED, NEW, "good.json")
    before = db.read_bytes()
    lock_path = tmp_path / "h.db.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = _interrupt(["history", "ingest", str(results), "--db", str(db)], lambda pid: _opened(pid, lock_path), tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "optests history: interrupted\n")
    assert db.read_bytes() == before
    with History(db) as h:
        assert [r.samples for r in h.runs()] == [len(NEW)]
