"""``--optests-ids``: a run that checks only the samples a file names (another release's
failures, last night's), read strictly, and judged like any narrowed run."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import expecttest
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sweepdir import run_inline
from test_key import _keys

from optests import SampleKey
from optests._case import select_ops
from optests._settings import SettingError, parse, read_ids

FIXTURES = Path(__file__).resolve().parent / "sweep_fixtures"
DB = ["--optests-dbs=nightly_ops:ops", "-p", "no:cacheprovider", "--optests-modes=static,dynamic"]


def _line(key: SampleKey, form: int) -> str:
    """The id as a user's file may hold it: bare, padded, or ending a pytest node id."""
    return [key.id, f"  {key.id}\t", f"opinfo_sweeps/test_aot_autograd.py::test_aot_autograd[{key.id}]"][form]


@given(
    st.lists(st.tuples(_keys, st.integers(0, 2), st.sampled_from(["", "# a comment [x]", "   "])), min_size=1),
    st.booleans(),
    st.booleans(),
)
def test_a_file_of_ids_reads_back_as_the_ids_in_any_form(
    lines: list[tuple[SampleKey, int, str]], packed: bool, marked: bool
) -> None:
    text = ("\ufeff" if marked else "") + "\n".join(f"{extra}\n{_line(key, form)}" for key, form, extra in lines) + "\n"
    content = gzip.compress(text.encode()) if packed else text.encode()
    with tempfile.TemporaryDirectory() as where:
        path = Path(where) / "ids"
        path.write_bytes(content)
        listed = read_ids("--optests-ids", path)
    assert listed.ids == {key.id for key, _, _ in lines}
    assert listed.runs == {key.run for key, _, _ in lines}
    assert listed.op_ids == {key.op_id for key, _, _ in lines}


class TestIdListMessages(expecttest.TestCase):
    def _refused(self, content: bytes | None, name: str = "ids.txt") -> str:
        with tempfile.TemporaryDirectory() as where:
            path = Path(where) / name
            if content is not None:
                path.write_bytes(content)
            with pytest.raises(SettingError) as refused:
                read_ids("--optests-ids", Path(where) if name == "." else path)
        return str(refused.value).replace(where, "DIR")

    def test_what_the_reader_refuses(self) -> None:
        self.assertExpectedInline(self._refused(None), """--optests-ids: DIR/ids.txt: no such file""")
        self.assertExpectedInline(self._refused(None, "."), """--optests-ids: DIR: is a directory, not a file""")
        self.assertExpectedInline(
            self._refused(b"# nothing\n\n"),
            """--optests-ids: DIR/ids.txt lists no sample id (one a line, such as static-float32-cpu-sin-sample3)""",
        )
        self.assertExpectedInline(
            self._refused(b"static-float32-cpu-sin-sample0\nstatic-float32-cpu-sin-sample1  # flaky\n"),
            """--optests-ids: DIR/ids.txt, line 2: 'static-float32-cpu-sin-sample1  # flaky' is not a sample id (such as static-float32-cpu-sin-sample3)""",
        )
        self.assertExpectedInline(
            self._refused(b"static-float32-cpu-sin-sample0\n\xff\n"),
            """--optests-ids: DIR/ids.txt: not UTF-8 text (byte 0xff at offset 31)""",
        )
        self.assertExpectedInline(
            self._refused(gzip.compress(b"static-float32-cpu-sin-sample0\n")[:20], "ids.gz"),
            """--optests-ids: DIR/ids.gz: a truncated or corrupt gzip file""",
        )


def test_only_the_ops_the_ids_name_are_selected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))
    ids = tmp_path / "ids.txt"
    ids.write_text("static-float32-cpu-gamma-sample1\ndynamic-float32-cpu-beta-sample0-transposed-0\n")
    options = {"dbs": "nightly_ops:ops", "ids": str(ids)}
    settings = parse(options.get, lambda name: "")
    assert [ref.id for ref in select_ops(settings)] == ["beta", "gamma"]


def _ids(results: Path) -> list[str]:
    return sorted(r["id"] for r in json.loads(results.read_text())["samples"])


@pytest.mark.slow
def test_a_run_checks_the_listed_failures_alone(nightly_sweep: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Last night's failures, listed in each form the file takes, are all the next run checks; an
    id that names no sample is counted, one deselected is not; an entry of a sample it does not
    check is not stale; where a listed op's samples can no longer be made, that is its record."""
    night = nightly_sweep.path / "night.json"
    run_inline(nightly_sweep, *DB, f"--optests-results={night}")
    failed = sorted(r["id"] for r in json.loads(night.read_text())["samples"] if r["outcome"] == "failed")
    assert len(failed) == 16  # beta's and gamma's 4 samples, in 2 modes
    lines = ["# last night's failures", "", *failed[:8], *(f"test_aot_autograd.py::test_aot_autograd[{i}]" for i in failed[8:])]
    (nightly_sweep.path / "failed.txt.gz").write_bytes(
        gzip.compress("\n".join([*lines, "static-float32-cpu-alpha-sample9"]).encode())
    )
    entry = {
        "op": "alpha", "variant": "", "mode": "static", "dtype": "float32", "device": "cpu",
        "status": "xfail", "stage": "forward", "reason": "planted: no such sample", "samples": "9",
    }  # fmt: skip
    (nightly_sweep.path / "expected_failures.json").write_text(json.dumps({"schema_version": 4, "entries": [entry]}))
    strict = [*DB, "--optests-strict-registry"]
    again = run_inline(nightly_sweep, *strict, "-n", "2", "--optests-ids=failed.txt.gz", "--optests-results=again.json")
    assert again.ret == pytest.ExitCode.TESTS_FAILED  # the 16 are not registered
    assert _ids(nightly_sweep.path / "again.json") == failed
    missing = "--optests-ids: 1 of the 17 ids in failed.txt.gz were not collected (this run's options select no such sample, or there is none), e.g. static-float32-cpu-alpha-sample9"
    again.stdout.fnmatch_lines([missing, "*16 failed*"])
    assert "stale registry entry" not in again.stdout.str()
    # the same entry, in a run of every sample of alpha, is stale
    whole = run_inline(nightly_sweep, *strict, "--optests-ops=alpha")
    whole.stdout.fnmatch_lines(["stale registry entry (matches no collected sample): alpha static float32 cpu forward*"])
    # deselected samples were collected: not counted
    some = run_inline(nightly_sweep, *strict, "-n", "2", "--optests-ids=failed.txt.gz", "-k", "not gamma")
    some.stdout.fnmatch_lines([missing, "*8 failed*"])
    # a list whose samples the options do not select collects nothing, and says so
    none = run_inline(nightly_sweep, *strict, "--optests-ids=failed.txt.gz", "--optests-modes=dynamic", "--optests-ops=alpha")
    assert none.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    none.stdout.fnmatch_lines(["--optests-ids: 17 of the 17 ids in failed.txt.gz were not collected*"])
    # beta's samples can no longer be made: its listed samples give way to that record, per mode
    monkeypatch.setenv("NIGHTLY_BROKEN", "beta=samples")
    broken = run_inline(nightly_sweep, *strict, "--optests-ids=failed.txt.gz", "--optests-ops=beta", "--optests-results=b.json")
    assert _ids(nightly_sweep.path / "b.json") == ["dynamic-float32-cpu-beta-samples", "static-float32-cpu-beta-samples"]
    broken.stdout.fnmatch_lines(["--optests-ids: 17 of the 17 ids in failed.txt.gz were not collected*"])


def test_a_bad_list_stops_the_run_with_one_line(nightly_sweep: pytest.Pytester) -> None:
    (nightly_sweep.path / "bad.txt").write_text("static-float32-cpu-beta-sample0\nbeta sample 1\n")
    bad = run_inline(nightly_sweep, *DB, "--optests-ids=bad.txt")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert bad.stderr.str().strip().splitlines() == [
        "ERROR: --optests-ids: bad.txt, line 2: 'beta sample 1' is not a sample id (such as static-float32-cpu-sin-sample3)"
    ]
    (nightly_sweep.path / "other.txt").write_text("static-float32-cpu-sin-sample0\n")
    other = run_inline(nightly_sweep, *DB, "--optests-ids=other.txt")
    assert other.ret == pytest.ExitCode.USAGE_ERROR
    assert other.stderr.str().strip().splitlines() == [
        "ERROR: --optests-ids: other.txt names no op that --optests-ops and --optests-dbs select (it names 1, e.g. sin)"
    ]


def test_the_ini_key_names_a_file_from_the_rootdir(nightly_sweep: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """As pytest's own ini paths: a run from a subdirectory reads the same file."""
    nightly_sweep.makeini("[pytest]\noptests_ids = lists/ids.txt\n")
    (nightly_sweep.path / "lists").mkdir()
    (nightly_sweep.path / "lists" / "ids.txt").write_text("static-float32-cpu-alpha-sample2\n")
    (nightly_sweep.path / "sub").mkdir()
    monkeypatch.chdir(nightly_sweep.path / "sub")
    result = run_inline(nightly_sweep, *DB, str(nightly_sweep.path), "--optests-results=r.json")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert _ids(nightly_sweep.path / "sub" / "r.json") == ["static-float32-cpu-alpha-sample2"]


def test_the_summary_shows_an_ids_files_control_characters_as_escapes(nightly_sweep: pytest.Pytester) -> None:
    """An id's op name is any text, so an ids file can hold terminal escapes: the summary line
    that echoes an id not collected shows them as escapes."""
    hostile = "static-float32-cpu-al\x1b]0;owned\x07pha\u202e-sample0"
    (nightly_sweep.path / "ids.txt").write_text(f"static-float32-cpu-alpha-sample0\n{hostile}\n")
    run = run_inline(nightly_sweep, *DB, "--optests-ids=ids.txt", "--optests-ops=alpha")
    out = run.stdout.str()
    assert run.ret == pytest.ExitCode.OK, out
    assert "e.g. static-float32-cpu-al\\x1b]0;owned\\x07pha\\u202e-sample0" in out
    assert not {"\x1b", "\x07", "\u202e"} & set(out)
