"""bench/transforms.py's report: what each transform adds and finds, against the same run's base."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from optests import Outcome, Stage
from optests._key import Mode, SampleKey
from optests._results import SampleResult, read

ROOT = Path(__file__).resolve().parents[1]


def _bench(name: str) -> ModuleType:
    """``bench/NAME.py``, imported as a module."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
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
    lines = _bench("transforms").report(records, wall=4.0, workers=2)
    assert lines[0] == "5 samples in 0.1 min with 2 workers; harness overhead 300 ms a sample"
    assert lines[1] == "base: 2 samples, check time 0.0 min, sweep time 0.0 min (the baseline)"
    table = {line.split()[0]: line.split()[1:] for line in lines[4:]}
    # samples, per base sample, not applicable, check time and x base, sweep time and x base
    # ((4 s + 2 x 0.3 s) / 2 workers against (2 s + 2 x 0.3 s) / 2), passed, failed, new, stages
    expected = "2 1.00 0 0.1m 2.00 0.0m 1.77 0 2 1 metadata 1, trace 1"
    assert table["transposed"] == expected.split()
    assert table["duplicated"][:3] == ["1", "0.50", "1"]


def test_a_new_finding_under_another_backend_is_counted_against_its_base_sample() -> None:
    def at(sample: int, transform: str = "", stage: Stage | None = None) -> SampleResult:
        key = SampleKey("sin", "", Mode.STATIC, "float32", "cpu", sample, transform=transform, backend="inductor")
        return SampleResult(key, "op_db", Outcome.FAILED if stage else Outcome.PASSED, stage, "", 1.0)

    records = [at(0), at(1, stage=Stage.TRACE), at(0, "sequence-4", Stage.SEQUENCE), at(1, "sequence-4", Stage.TRACE)]
    lines = _bench("transforms").report(records, wall=4.0, workers=1)
    row = next(line.split() for line in lines if line.startswith("sequence"))
    # passed 0, failed 2, new 1 (sample 0's: its base sample passes), then the stages
    assert row[8:] == ["0", "2", "1", "sequence", "1,", "trace", "1"]


def test_the_report_prices_each_call_pattern_after_the_input_transforms() -> None:
    records = [
        _r(0),
        _r(1),
        _r(0, "transposed-0"),
        _r(0, "tangents-1", stage=Stage.BACKWARD),
        _r(1, "tangents-0"),
        _r(0, "outputs"),
    ]
    lines = _bench("transforms").report(records, wall=6.0, workers=1)
    names = [line.split()[0] for line in lines[4:]]
    assert names == ["transposed", "--", "outputs", "tangents"]
    tangents = lines[4:][names.index("tangents")].split()[1:]
    assert tangents[:3] == ["2", "1.00", "0"] and tangents[-3:] == ["1", "backward", "1"]


def test_the_scale_bench_runs_each_command_on_a_synthetic_run(tmp_path: Path) -> None:
    scale = _bench("scale")
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
    seconds, mb = _bench("scale").measure([sys.executable, "-m", "optests.cli"], other.parent, tmp_path, ok=(7,))
    assert seconds > 0 and mb > 0


def test_the_speed_bench_states_overhead_and_the_cpu_outside_the_checks() -> None:
    speed = _bench("speed")
    # 100 samples, 60 s wall, 100 s of checks on 2 workers (50 s): 1.2x; 110 s of CPU: 10 s outside
    run = speed.SweepRun(100, 60.0, 100.0, 110.0, "100 passed in 59.0s", None)
    assert run.line(2) == (
        "wall 60.0 s vs bare check time / 2 = 50.0 s: 1.200x, overhead 20.0%; process tree CPU 110.0 s, "
        "less the check time: 100.0 ms a sample (100 samples; 100 passed in 59.0s)"
    )


def test_the_speed_bench_prices_the_harness_beyond_an_empty_pytest_run_of_as_many_items() -> None:
    speed = _bench("speed")
    # 100 samples, 60 s wall, 100 s of checks on 2 workers (50 s), 110 s of CPU; the empty run
    # of 100 items: 6 s wall, 7 s CPU. Beyond both: 60 - 6 - 50 = 4 s of the wall, 6.7%; CPU
    # 110 - 7 - 100 = 3 s, 30 ms a sample.
    run = speed.SweepRun(100, 60.0, 100.0, 110.0, "100 passed in 59.0s", None)
    base = speed.Floor(100, 6.0, 7.0)
    percent, per_sample = speed.beyond_floor(run, base, 2)
    assert (round(percent, 3), round(per_sample, 3)) == (6.667, 30.0)
    assert speed.floor_lines(run, base, 2) == [
        "floor: empty pytest run of 100 items, -n 2: wall 6.0 s, process tree CPU 7.0 s",
        "CPU beyond the floor and the check time: 30.0 ms a sample",
        "overhead beyond the floor: 6.7% (wall 60.0 s - floor 6.0 s - check time / 2 50.0 s = 4.0 s)",
    ]


def test_the_speed_bench_times_an_empty_pytest_run_of_as_many_items() -> None:
    base = _bench("speed").floor(3, 0)
    assert base.items == 3 and base.wall > 0 and base.cpu > 0


def test_the_speed_bench_keeps_its_sweeps_results_where_asked(tmp_path: Path) -> None:
    """``--results PATH``: (b)'s sweep of this tree leaves its results file there (the whole
    sweep's, with ``--all``, is the README's main job: ``optests diff`` reads it)."""
    kept = tmp_path / "out" / "results.json"
    run = _bench("speed").sweep(ROOT, "sin", ("static",), 0, kept)
    _, records = read(kept)
    assert run.samples == len(records) > 0
    assert {r.key.op_id for r in records} == {"sin"}


def test_the_speed_bench_sets_the_sweeps_check_beside_the_in_tree_check_per_mode() -> None:
    times = {
        "ours|static": [(1.0, 0.5), (1.0, 0.5)],
        "in-tree|static": [(2.0, 1.0), (3.0, 1.5)],
        "ours|dynamic": [(4.0, 2.0)],
        "in-tree|dynamic": [(2.0, 1.0)],
    }
    assert _bench("speed").side_by_side(times, ("static", "dynamic", "static-nofunc")) == [
        "(a) the sweep's check of each sample (its runner child's share) vs the in-tree check, same samples:",
        "  static: 2 samples; ours 2.0 s wall, 1.0 s CPU; in-tree 5.0 s wall, 2.5 s CPU; ours/in-tree 0.40x wall, 0.40x CPU",
        "  dynamic: 1 samples; ours 4.0 s wall, 2.0 s CPU; in-tree 2.0 s wall, 1.0 s CPU; ours/in-tree 2.00x wall, 2.00x CPU",
        "  static-nofunc: no samples",
    ]


def test_the_speed_bench_refuses_bad_modes_and_counts(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    speed = _bench("speed")
    assert speed._modes("static") == ("static",)
    for argv in (["--modes", "statik"], ["--every", "0"], ["--repeat", "-1"], ["--all", "--every", "3"]):
        monkeypatch.setattr(sys, "argv", ["speed.py", *argv])
        with pytest.raises(SystemExit) as e:
            speed.main()
        assert e.value.code == 2, argv
        assert "Traceback" not in capsys.readouterr().err


def test_the_speed_bench_takes_every_kth_op_and_a_baseline_from_a_worktree() -> None:
    speed = _bench("speed")
    from optests import _opinfo

    assert speed.every_kth(200).split(",") == [r.id for r in _opinfo.all_ops()[::200]]
    assert speed.every_kth(3, "c*,a*").split(",") == [r.id for r in _opinfo.select(_opinfo.all_ops(), ["c*", "a*"])[::3]]
    with speed._worktree("HEAD") as tree:
        assert (tree / "optests" / "__init__.py").is_file() and (tree / "opinfo_sweeps").is_dir()
    assert not tree.exists()  # removed afterwards


def test_the_backends_bench_prices_each_backend_against_aot_eager_on_the_same_samples() -> None:
    def r(sample: int, backend: str, duration: float, stage: Stage | None = None) -> SampleResult:
        key = SampleKey("sin", "", Mode.STATIC, "float32", "cpu", sample, backend=backend)
        return SampleResult(key, "op_db", Outcome.FAILED if stage else Outcome.PASSED, stage, "", duration)

    records = [
        r(0, "aot_eager", 1.0),
        r(1, "aot_eager", 2.0, Stage.TRACE),
        r(2, "aot_eager", 1.0),  # not checked under inductor: not in its ratios
        r(0, "inductor", 4.0, Stage.FORWARD),  # new: aot_eager passes
        r(1, "inductor", 2.0, Stage.TRACE),
    ]
    lines = _bench("backends").report(records)
    assert lines[0] == "3 samples under aot_eager, check time 4.0 s (the baseline)"
    (row,) = [line.split() for line in lines[3:]]
    # samples, median and max of the per-sample ratios (4, 1), check time, its ratio (6 s / 3 s),
    # passed, failed, new, stages
    assert row == ["inductor", "2", "2.50", "4.00", "6.0s", "2.00", "0", "2", "1", "forward", "1,", "trace", "1"]


def test_the_in_tree_lists_comparison_sorts_ops_by_who_lists_their_failures() -> None:
    def r(op: str, sample: int, stage: Stage | None = None, variant: str = "", transform: str = "") -> SampleResult:
        key = SampleKey(op, variant, Mode.STATIC, "float32", "cpu", sample, transform=transform, backend="inductor")
        return SampleResult(key, "op_db", Outcome.FAILED if stage else Outcome.PASSED, stage, f"{op} differs" if stage else "")

    entries = [
        {"device": "cpu", "op": "sin", "variant": "", "kind": "xfail"},
        {"device": "any", "op": "cos", "variant": "", "kind": "skip"},
        {"device": "cpu", "op": "mm", "variant": "", "kind": "skip"},
        {"device": "cuda", "op": "tan", "variant": "", "kind": "xfail"},  # another device
        {"device": "cpu", "op": "exp", "variant": "", "kind": "skip", "condition": "IS_MACOS"},  # a condition
        {"device": "cpu", "op": "exp", "variant": "", "kind": "override"},  # not a failure
    ]
    bench = _bench("in_tree_lists")
    lists = bench.listed(entries, "cpu")
    assert lists == {"sin": {"xfail"}, "cos": {"skip"}, "mm": {"skip"}}
    records = [
        r("sin", 0, Stage.FORWARD),
        r("sin", 1),
        r("cos", 0),
        r("tan", 0, Stage.TRACE),
        r("tan", 1, Stage.METADATA),
        r("pad", 0, variant="reflect"),
        r("pad", 0, Stage.METADATA, variant="reflect", transform="transposed-0"),  # a derived sample: left out
    ]
    assert bench.compare(records, lists) == [
        "4 ops in the results, 2 with failed samples; the lists name 3: ours only 1, both 1, theirs only 1, not run 1",
        "ours only: tan: 2 samples (metadata 1, trace 1): tan differs",
        "both: sin: 1 samples (forward 1); listed: xfail",
        "theirs only: cos: listed skip, passes here",
        "not run: mm: listed skip",
    ]


def test_the_check_seeds_the_cpu_generator_alone_where_no_accelerator_is_in_use() -> None:
    # torch.manual_seed queues a seeding of each accelerator not yet initialized, formatting the
    # stack for each (about 2 ms a call, five calls a check): where none is in use, the check
    # seeds the CPU generator alone, and draws the same numbers in eager and compiled runs
    import torch

    from optests import run_check

    if torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        pytest.skip("CUDA is in use: torch.manual_seed seeds it at once")
    queued = torch.cuda._lazy_seed_tracker.get_calls()
    x = torch.ones(64, requires_grad=True)
    result = run_check(torch.nn.functional.dropout, [x], {"p": 0.5}, False, try_check_data_specialization=True)
    assert result.outcome is Outcome.PASSED, result.message
    assert torch.cuda._lazy_seed_tracker.get_calls() == queued  # nothing queued


def test_the_report_prices_each_index_alone_where_asked() -> None:
    """``--by-index``: ``tangents-3`` (the last two dims transposed) priced beside the other
    layouts, ``special-0`` beside ``special-6``, against the same base."""
    records = [
        _r(0),
        _r(1),
        _r(0, "tangents-0"),
        _r(0, "tangents-3", duration=3.0),
        _r(1, "tangents-3", na=True, duration=0.5),
        _r(0, "special-0", stage=Stage.FORWARD),
        _r(0, "special-6", na=True),
    ]
    lines = _bench("transforms").report(records, wall=9.0, workers=1, by_index=True)
    table = {line.split()[0]: line.split()[1:] for line in lines[4:]}
    assert list(table) == ["special-0", "special-6", "--", "tangents-0", "tangents-3"]
    assert table["tangents-3"][:3] == ["2", "1.00", "1"] and table["tangents-3"][4] == "1.75"  # 3.5 s of check against 2
    assert table["special-0"][-2:] == ["forward", "1"]
    assert [line.split()[0] for line in _bench("transforms").report(records, wall=9.0, workers=1)[4:]] == [
        "special",
        "--",
        "tangents",
    ]
