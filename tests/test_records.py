"""A results record's fields, declared once (``_results.FIELDS``), reach every store and report;
results files are read and written a record at a time, with the bytes and errors of before."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from test_history import ENV, NEW, OLD

from optests import Outcome, cli
from optests._results import FIELDS, ResultsError, SampleResult, read_with_status, write

ROOT = Path(__file__).resolve().parents[1]

#: A value for each field of a record, none of them its default. A field declared in FIELDS and
#: missing here fails the first assertion below, so a new field is tested as soon as it is declared.
EXAMPLE: dict[str, Any] = {
    "id": "dynamic-nofunc-float64-cuda-nn.functional.pad.reflect-sample7-transposed-1@inductor",
    "op": "nn.functional.pad",
    "variant": "reflect",
    "db": "op_db",
    "mode": "dynamic-nofunc",
    "dtype": "float64",
    "device": "cuda",
    "sample": 7,
    "transform": "transposed-1",
    "outcome": "failed",
    "stage": "metadata",
    "message": "out.stride()=(1, 3), but expected (3, 1) [nn.functional.pad.reflect dynamic-nofunc float64 cuda sample 7]",
    "duration": 1.2345,
    "verdict": "unexpected_failure",
    "tolerance": "OpInfo toleranceOverride(atol=0.005, rtol=0.0001)",
    "backend": "inductor",
    "cause": "metadata/transposed/inductor: out.stride()=(N...), but expected (N...)",
}


def _page_data(page: str) -> Any:
    tag = '<script type="application/json" id="failing-data">'
    start = page.index(tag) + len(tag)
    return json.loads(page[start : page.index("</script>", start)])


def test_every_field_survives_results_history_export_diff_and_the_dashboard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert list(EXAMPLE) == [f.name for f in FIELDS]
    assert all(EXAMPLE[f.name] != f.default for f in FIELDS)
    record = SampleResult.from_json(EXAMPLE)
    assert record.to_json() == EXAMPLE
    before = SampleResult(record.key, record.db, Outcome.PASSED)  # so that the record is a change
    old, new, db = tmp_path / "old.json", tmp_path / "new.json", tmp_path / "h.db"
    write(old, [before], {**ENV, "date": "2026-11-21T03:00:00+00:00"})
    write(new, [record], {**ENV, "date": "2026-11-22T03:00:00+00:00"})
    assert json.loads(new.read_text())["samples"] == [EXAMPLE]

    exported = tmp_path / "exported.json"
    assert cli.main(["history", "ingest", str(old), str(new), "--db", str(db)]) == 0
    assert cli.main(["history", "export", "--db", str(db), "--out", str(exported)]) == 0
    assert json.loads(exported.read_text())["samples"] == [EXAMPLE]

    capsys.readouterr()
    assert cli.main(["diff", str(old), str(exported), "--format", "json"]) == 1
    (change,) = json.loads(capsys.readouterr().out)["changes"]
    assert change["new"] == EXAMPLE

    site = tmp_path / "site"
    assert cli.main(["dashboard", "--db", str(db), "--out", str(site)]) == 0
    (configuration,) = json.loads((site / "changes.json").read_text())["configurations"]
    assert configuration["configuration"] == "torch 2.13, cuda, float64, transforms transposed, backends inductor"
    assert [c["new"] for c in configuration["changes"]] == [EXAMPLE]
    data = _page_data((site / "index.html").read_text())
    ((*_, (sample,)),) = data["cells"]
    assert {name: data["values"][i] for name, i in zip(data["fields"], sample)} == EXAMPLE


# -- reading and writing a record at a time ------------------------------------------------------

COMMITTED = [
    ROOT / "sweep-results" / "transforms" / "2026-11-23-torch-2.13.0-cpu-float32-static-dynamic-duplicated-only.json.gz",
    ROOT
    / "sweep-results"
    / "transforms"
    / "2026-11-25-torch-2.15.0-cu132-cpu-float32-static-dynamic-all-transforms-entry-ops.json.gz",
]


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_committed_results_are_rewritten_as_the_whole_file_writer_wrote_them(tmp_path: Path, path: Path) -> None:
    env, records, complete = read_with_status(path)
    whole = {
        "complete": complete,
        "environment": env,
        "kind": "optests-results",
        "samples": [r.to_json() for r in sorted(records, key=lambda r: r.id)],
        "schema_version": 4,
    }
    text = json.dumps(whole, indent=2, sort_keys=True, allow_nan=False) + "\n"  # write_json_atomic's way
    for name, expected in (("r.json", text.encode()), ("r.json.gz", gzip.compress(text.encode(), mtime=0))):
        write(tmp_path / name, records, env, complete)
        assert (tmp_path / name).read_bytes() == expected
    assert read_with_status(tmp_path / "r.json") == (env, records, complete)


def test_an_empty_run_is_written_as_before(tmp_path: Path) -> None:
    write(tmp_path / "r.json", [], ENV)
    whole = {"complete": True, "environment": ENV, "kind": "optests-results", "samples": [], "schema_version": 4}
    assert (tmp_path / "r.json").read_text() == json.dumps(whole, indent=2, sort_keys=True) + "\n"


BROKEN = [
    lambda t: t.replace('"outcome": "passed"', '"outcome": passed', 1),
    lambda t: t.replace("},\n    {", "}\n    {", 3),
    lambda t: t[: len(t) // 2],
    lambda t: t + "x",
    lambda t: t.replace('"samples": [', '"samples" [', 1),
]


@pytest.mark.parametrize("chunk", [5, 64, 1 << 20])
@pytest.mark.parametrize("breaks", range(len(BROKEN)))
def test_the_streaming_reader_gives_json_errors_where_json_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, breaks: int
) -> None:
    monkeypatch.setattr("optests._results._CHUNK", chunk)
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    write(good, [*OLD, *NEW[-2:]], ENV)
    assert read_with_status(good)[1] == sorted([*OLD, *NEW[-2:]], key=lambda r: r.id)
    text = BROKEN[breaks](good.read_text())
    bad.write_text(text)
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    e = expected.value
    with pytest.raises(ResultsError, match=rf"^{bad}:{e.lineno}:{e.colno}: not valid JSON: "):
        read_with_status(bad)


def test_a_bad_record_is_reported_after_what_is_wrong_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write(path, OLD, ENV)
    data = json.loads(path.read_text())
    data["samples"][2]["future_field"] = 1
    data["schema_version"] = 99  # written by a newer optests: that is what to say
    path.write_text(json.dumps(data, indent=2, sort_keys=True))
    with pytest.raises(ResultsError, match="schema_version 99 is not supported"):
        read_with_status(path)
    data["schema_version"] = 3
    data["samples"].append(data["samples"][0])
    path.write_text(json.dumps(data, indent=2, sort_keys=True))
    with pytest.raises(ResultsError, match=r"samples\[2\]: unknown fields \['future_field'\]"):
        read_with_status(path)
    del data["samples"][2]["future_field"]
    path.write_text(json.dumps(data, indent=2, sort_keys=True))
    with pytest.raises(ResultsError, match=r"samples\[8\]: id .* is recorded twice \(first at samples\[0\]\)"):
        read_with_status(path)
