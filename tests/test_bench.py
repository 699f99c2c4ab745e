"""bench/transforms.py's report: what each transform adds and finds, against the same run's base."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from optests import Outcome, Stage
from optests._key import Mode, SampleKey
from optests._results import SampleResult, read

ROOT = Path(__file__).resolve().parents[1]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_transforms", ROOT / "bench" / "transforms.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _r(sample: int, transform: str = "", stage: Stage | None = None, duration: float = 1.0, na: bool = False) -> SampleResult:
    key = SampleKey("sin", "", Mode.STATIC, "float32", "cpu", sample, transform=transform)
    outcome = Outcome.NOT_APPLICABLE if na else Outcome.FAILED if stage else Outcome.PASSED
    return SampleResult(key, "op_db", outcome, stage, "", duration)


def test_the_report_counts_each_transform_against_the_base_of_the_same_run() -> None:
    records = [
        _r(0),
        _r(1, stage=Stage.TRACE),
        _r(0, "transposed-0", stage=Stage.METADATA, duration=2.0),  # new: its sample passes
        _r(1, "transposed-0", stage=Stage.TRACE, duration=2.0),  # its sample fails too
        _r(0, "duplicated-0", na=True, duration=0.5),
    ]
    # 2 workers, 4 s: 8 worker-seconds, of which 6.5 are checks; 0.3 s of overhead a sample
    lines = _bench().report(records, wall=4.0, workers=2)
    assert lines[0] == "5 samples in 0.1 min with 2 workers; harness overhead 300 ms a sample"
    assert lines[1] == "base: 2 samples, check time 0.0 min, sweep time 0.0 min (the baseline)"
    table = {line.split()[0]: line.split()[1:] for line in lines[4:]}
    # samples, per base sample, not applicable, check time and x base, sweep time and x base
    # ((4 s + 2 x 0.3 s) / 2 workers against (2 s + 2 x 0.3 s) / 2), passed, failed, new, stages
    expected = "2 1.00 0 0.1m 2.00 0.0m 1.77 0 2 1 metadata 1, trace 1"
    assert table["transposed"] == expected.split()
    assert table["duplicated"][:3] == ["1", "0.50", "1"]


def test_the_report_prices_each_call_pattern_after_the_input_transforms() -> None:
    records = [
        _r(0),
        _r(1),
        _r(0, "transposed-0"),
        _r(0, "tangents-1", stage=Stage.BACKWARD),
        _r(1, "tangents-0"),
        _r(0, "outputs"),
    ]
    lines = _bench().report(records, wall=6.0, workers=1)
    names = [line.split()[0] for line in lines[4:]]
    assert names == ["transposed", "--", "outputs", "tangents"]
    tangents = lines[4:][names.index("tangents")].split()[1:]
    assert tangents[:3] == ["2", "1.00", "0"] and tangents[-3:] == ["1", "backward", "1"]


def _scale() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_scale", ROOT / "bench" / "scale.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_scale_bench_runs_each_command_on_a_synthetic_run(tmp_path: Path) -> None:
    scale = _scale()
    rows = scale.run(200, tmp_path, ROOT)
    assert [name for name, _, _ in rows] == ["json.load", "merge", "diff", "history ingest", "ingest 2nd", "dashboard"]
    assert all(seconds > 0 and mb > 0 for _, seconds, mb in rows)
    env, records = read(tmp_path / "old.json")
    assert len(records) == 200 and env["torch"] == "2.13.0"
    assert read(tmp_path / "merged.json")[1] == records  # the synthetic run is what optests writes
    assert (tmp_path / "merged.json").read_bytes() == (tmp_path / "old.json").read_bytes()
    lines = scale.report(200, rows)
    assert lines[0] == "200 records" and lines[2].split()[1:3] == [f"{rows[0][1]:.1f}", "1.00"]


def test_the_scale_bench_measures_the_checkout_it_is_given(tmp_path: Path) -> None:
    other = tmp_path / "other" / "optests"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("")
    (other / "cli.py").write_text("raise SystemExit(7)\n")  # not this checkout's optests
    seconds, mb = _scale().measure([sys.executable, "-m", "optests.cli"], other.parent, tmp_path, ok=(7,))
    assert seconds > 0 and mb > 0
