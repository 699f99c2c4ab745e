"""Flaky verdicts: a sample whose verdict would fail the run is checked again in a fresh process
(``--optests-reruns``, ``optests check --reruns``, ``reruns=``); checks that disagree make it
``flaky``, which does not fail the run. The planted ops (``sweep_fixtures/flaky_ops.py``):
``flaky_once`` fails in the first process that checks it and passes in every later one,
``flaky_always`` fails in every process."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sweepdir import FIXTURES, OptestsCli, run_inline

from optests import _pipeline, _registry, cli
from optests._author import AuthorError, check_op
from optests._findings import Outcome, Stage, Verdict
from optests._key import Mode, SampleKey
from optests._results import SampleResult, Try, read, write

ONCE, ALWAYS = "static-float32-cpu-flaky_once-sample0", "static-float32-cpu-flaky_always-sample0"
SWEEP = ["-p", "no:cacheprovider", "--optests-dbs=flaky_ops:ops", "--optests-modes=static", "--optests-results=r.json"]
EMPTY = '{"schema_version": 4, "entries": []}\n'


@pytest.fixture
def flaky_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the planted ops note the first process that checks them (a folder of this test's)."""
    where = tmp_path / "first-process"
    where.mkdir()
    monkeypatch.setenv("OPTESTS_FLAKY_DIR", str(where))
    return where


@pytest.fixture
def flaky_ops(flaky_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(FIXTURES))
    import flaky_ops

    return flaky_ops


def _records(path: Path) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in json.loads(path.read_text())["samples"]}


# -- the sweep -------------------------------------------------------------------------------------


def test_a_failure_that_does_not_reproduce_is_flaky_and_one_that_does_fails(sweep: pytest.Pytester, flaky_dir: Path) -> None:
    (sweep.path / "reg.json").write_text(EMPTY)
    result = run_inline(sweep, *SWEEP, "--optests-registry=reg.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # flaky_always alone
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*It reproduced: checked again in a fresh process, it found metadata.",
            "registry: flaky 1, unexpected_failure 1",
            f"flaky: {ONCE}: its checks found metadata, passed [flaky_once static float32 cpu sample 0]",
        ]
    )
    records = _records(sweep.path / "r.json")
    once, always = records[ONCE], records[ALWAYS]
    assert (once["outcome"], once["stage"], once["verdict"]) == ("failed", "metadata", "flaky")  # the first check's
    assert once["reruns"] == [{"outcome": "passed", "stage": None, "message": ""}]
    assert always["verdict"] == "unexpected_failure"
    assert always["reruns"] == [{"outcome": "failed", "stage": "metadata", "message": always["message"]}]  # agreeing

    # judge and diff: a flaky sample is no unexpected failure, nor a new one
    assert cli.main(["judge", str(sweep.path / "r.json"), "--registry", str(sweep.path / "reg.json")]) == 1
    passed = [dict(r, outcome="passed", stage=None, message="", verdict="passed") for r in records.values()]
    for r in passed:
        r.pop("reruns", None)
    before = sweep.path / "before.json"
    env, _ = read(sweep.path / "r.json")
    write(before, [SampleResult.from_json(r) for r in passed], env)
    from optests import _diff

    d = _diff.diff(read(before)[1], read(sweep.path / "r.json")[1])
    assert [(c.record.id, c.kind.value, c.transition) for c in d.changes] == [
        (ALWAYS, "new_failure", "passed -> metadata"),
        (ONCE, "outcome_change", "passed -> flaky"),
    ]

    # accept: an xfail for the deterministic failure, a flaky entry (no xfail) for the flaky one
    assert cli.main(["accept", str(sweep.path / "r.json"), "--registry", str(sweep.path / "reg.json")]) == 0
    entries = {e["op"]: e for e in json.loads((sweep.path / "reg.json").read_text())["entries"]}
    assert (entries["flaky_always"]["status"], entries["flaky_once"]["status"]) == ("xfail", "flaky")
    assert entries["flaky_once"]["reason"] == (
        "flaky: its checks found metadata, passed; traced out.dtype=float64, but expected float32"
    )
    assert cli.main(["judge", str(sweep.path / "r.json"), "--registry", str(sweep.path / "reg.json")]) == 0


def test_no_reruns_keeps_the_first_verdict(sweep: pytest.Pytester, flaky_dir: Path) -> None:
    result = run_inline(sweep, *SWEEP, "--optests-ops=flaky_once", "--optests-reruns=0")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.no_fnmatch_line("*It reproduced*")
    once = _records(sweep.path / "r.json")[ONCE]
    assert once["verdict"] == "unexpected_failure" and "reruns" not in once


def test_a_flaky_entry_keeps_a_failure_from_failing_the_run(sweep: pytest.Pytester, flaky_dir: Path) -> None:
    entry = {"op": "flaky_always", "variant": "", "mode": "static", "dtype": "float32", "device": "cpu"}
    entry |= {"status": "flaky", "stage": "forward", "reason": "varies on this machine", "samples": "0"}
    (sweep.path / "reg.json").write_text(json.dumps({"schema_version": 4, "entries": [entry]}))
    result = run_inline(sweep, *SWEEP, "--optests-ops=flaky_always", "--optests-registry=reg.json")
    assert result.ret == pytest.ExitCode.OK  # at another stage than the entry's too: flaky failures vary
    always = _records(sweep.path / "r.json")[ALWAYS]
    assert (always["stage"], always["verdict"]) == ("metadata", "flaky")
    assert "reruns" not in always  # a verdict that does not fail the run is not checked again


def test_the_sweep_accept_writes_a_flaky_entry_not_an_xfail(sweep: pytest.Pytester, flaky_dir: Path) -> None:
    (sweep.path / "expected_failures.json").write_text(EMPTY)
    result = run_inline(sweep, *SWEEP, "--optests-ops=flaky_once", "--optests-accept")
    assert result.ret == pytest.ExitCode.OK
    (entry,) = json.loads((sweep.path / "expected_failures.json").read_text())["entries"]
    assert (entry["op"], entry["status"], entry["stage"], entry["samples"]) == ("flaky_once", "flaky", "metadata", "0")


@pytest.mark.parametrize(("value", "said"), [("-1", "'-1'"), ("x", "'x'"), ("101", "'101'")])
def test_a_bad_reruns_value_is_one_line(sweep: pytest.Pytester, value: str, said: str) -> None:
    result = run_inline(sweep, *SWEEP, f"--optests-reruns={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"--optests-reruns: {said} is not a whole number from 0 to 100" in result.stderr.str()


# -- optests check and check_op ----------------------------------------------------------------------


def test_optests_check_says_flaky_and_exits_0(optests_cli: OptestsCli, flaky_dir: Path, tmp_path: Path) -> None:
    args = ["check", "optests_flaky::once", "--import", "flaky_ops", "--samples", "flaky_ops:samples"]
    args += ["--modes", "static", "--transforms", "none", "--reruns", "1", "--json", str(tmp_path / "c.json"), "-v"]
    sys.path.insert(0, str(FIXTURES))  # optests_cli gives the test its own sys.path
    done = optests_cli(args, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  FLAKY static         float32  sample 0 [metadata]" in done.stdout
    assert "flaky: static-float32-cpu-optests_flaky::once-sample0: its checks found metadata, passed" in done.stdout
    assert ", 1 flaky, 0 not expected;" in done.stdout
    (record,) = _records(tmp_path / "c.json").values()
    assert record["verdict"] == "flaky" and record["reruns"] == [{"outcome": "passed", "stage": None, "message": ""}]


def test_optests_check_says_a_failure_reproduced(optests_cli: OptestsCli, flaky_dir: Path, tmp_path: Path) -> None:
    args = ["check", "optests_flaky::always", "--import", "flaky_ops", "--samples", "flaky_ops:samples"]
    sys.path.insert(0, str(FIXTURES))  # optests_cli gives the test its own sys.path
    done = optests_cli([*args, "--modes", "static", "--transforms", "none"], tmp_path)
    assert done.returncode == 1
    assert "    It reproduced: checked again in a fresh process, it found metadata.\n" in done.stdout


@pytest.mark.parametrize("value", ["-1", "x"])
def test_optests_check_refuses_a_bad_reruns_value_in_one_line(optests_cli: OptestsCli, tmp_path: Path, value: str) -> None:
    done = optests_cli(["check", "sin", "--reruns", value], tmp_path)
    assert done.returncode == 2
    assert done.stderr == f"optests check: error: --reruns: {value!r} is not a whole number from 0 to 100\n"


def test_check_op_is_flaky_with_reruns_and_failed_without(flaky_ops: Any) -> None:
    given = flaky_ops.samples()
    options: dict[str, Any] = {"modes": ("static",), "transforms": "none"}
    (first,) = check_op(flaky_ops.once, given, reruns=0, **options)  # the first process: fails
    assert first.verdict is Verdict.UNEXPECTED_FAILURE and first.reruns == ()
    (deterministic,) = check_op(flaky_ops.always, given, **options)
    assert deterministic.verdict is Verdict.UNEXPECTED_FAILURE
    assert deterministic.reruns == (Try(Outcome.FAILED, Stage.METADATA, deterministic.result.message),)
    assert "It reproduced: checked again in a fresh process, it found metadata." in deterministic.judgement


def test_check_op_reruns_in_a_fresh_process(flaky_ops: Any) -> None:
    (checked,) = check_op(flaky_ops.once, flaky_ops.samples(), modes=("static",), transforms="none")
    assert checked.verdict is Verdict.FLAKY and checked.judgement == ""
    assert checked.result.stage is Stage.METADATA  # the first check's finding, for its repro
    assert checked.record().to_json()["reruns"] == [{"outcome": "passed", "stage": None, "message": ""}]


@pytest.mark.parametrize(("reruns", "passed", "verdict"), [(1, 1, "flaky"), (0, 0, "unexpected_failure")])
def test_an_op_test_of_a_flaky_sample_passes(
    pytester: pytest.Pytester, flaky_ops: Any, reruns: int, passed: int, verdict: str
) -> None:
    pytester.makepyfile(
        test_authored="import flaky_ops, optests\n"
        "test_once = optests.op_test(flaky_ops.once, samples=flaky_ops.samples(), modes=('static',), "
        f"transforms='none', reruns={reruns})\n"
    )
    reprec = pytester.inline_run("-p", "no:cacheprovider", "test_authored.py")
    reprec.assertoutcome(passed=passed, failed=1 - passed)
    (record,) = [
        json.loads(str(value))
        for report in reprec.getreports("pytest_runtest_logreport")
        if report.when == "call"
        for name, value in report.user_properties
        if name == "optests"
    ]
    assert record["verdict"] == verdict


@pytest.mark.parametrize("value", [-1, 1.5, True])
def test_check_op_refuses_a_bad_reruns_value(value: object) -> None:
    with pytest.raises(AuthorError, match=rf"^reruns={value!r}, but expected a whole number from 0 to 100$"):
        check_op("sin", reruns=value)  # type: ignore[arg-type]


# -- judging, without a check ------------------------------------------------------------------------

KEY = SampleKey("sin", "", Mode("static"), "float32", "cpu", 0)
FAILED = SampleResult(KEY, "op_db", Outcome.FAILED, Stage.FORWARD, "out[0]=1.0, but expected 2.0 [sin]")
PASSED = SampleResult(KEY, "op_db", Outcome.PASSED)


def _entry(status: str, stage: str = "forward") -> _registry.Entry:
    return _registry.Entry("sin", "", "static", "float32", "cpu", _registry.Status(status), Stage(stage), "known", (0,))


def _judged(record: SampleResult, tries: list[SampleResult], entries: list[_registry.Entry], reruns: int = 1) -> Any:
    left = list(tries)
    return _pipeline.judge_again(record, "report", _registry.Registry(entries, "2.13.0"), "reg.json", reruns, lambda: left.pop(0))


def test_an_unexpected_pass_is_checked_again_and_a_failure_as_expected_makes_it_flaky() -> None:
    judged = _judged(PASSED, [FAILED], [_entry("xfail")])
    assert judged.verdict is Verdict.FLAKY and judged.record.reruns == (Try.of(FAILED),)


def test_reruns_stop_at_the_first_check_that_does_not_fail_the_run() -> None:
    judged = _judged(FAILED, [FAILED, PASSED, FAILED], [], reruns=5)
    assert judged.verdict is Verdict.FLAKY and [t.outcome for t in judged.record.reruns] == [Outcome.FAILED, Outcome.PASSED]


def test_failures_at_other_stages_in_every_check_are_a_failure_not_flaky() -> None:
    backward = dataclasses.replace(FAILED, stage=Stage.BACKWARD)
    judged = _judged(FAILED, [backward], [])
    assert judged.verdict is Verdict.UNEXPECTED_FAILURE
    assert judged.message.endswith("It reproduced: checked again in a fresh process, it found backward.")


def test_a_timeout_is_not_checked_again() -> None:
    timeout = dataclasses.replace(FAILED, stage=Stage.TIMEOUT)
    judged = _judged(timeout, [PASSED], [])
    assert judged.verdict is Verdict.UNEXPECTED_FAILURE and judged.record.reruns == ()


def test_a_cause_three_samples_reproduced_is_not_checked_again_and_a_flaky_cause_always_is() -> None:
    """482 samples of one deterministic bug cost three reruns, not 482; a cause that showed a
    flaky sample keeps being checked again; an unexpected pass always is."""
    reruns, calls = _pipeline.Reruns(1), list[int | None]()
    registry = _registry.Registry([], "2.13.0")

    def noted(sample: int | None, answer: SampleResult) -> Callable[[], SampleResult]:
        """A check again that notes its sample and finds ``answer``."""

        def again() -> SampleResult:
            calls.append(sample)
            return answer

        return again

    def judged(record: SampleResult, answer: SampleResult) -> Any:
        return reruns.judge(record, "report", registry, "reg.json", noted(record.key.sample, answer))

    samples = [dataclasses.replace(FAILED, key=dataclasses.replace(KEY, sample=i)) for i in range(6)]
    verdicts = [judged(r, r).verdict for r in samples]
    assert verdicts == [Verdict.UNEXPECTED_FAILURE] * 6 and calls == [0, 1, 2]
    assert reruns.settled(FAILED.cause) and [bool(judged(r, r).record.reruns) for r in samples[:2]] == [False, False]

    other = SampleResult(KEY, "op_db", Outcome.FAILED, Stage.BACKWARD, "grad=nan, but expected 1.0 [sin]")
    assert judged(other, PASSED).verdict is Verdict.FLAKY  # a cause of its own, flaky once
    calls.clear()
    for _ in range(5):
        judged(other, other)
    assert len(calls) == 5 and not reruns.settled(other.cause)
    calls.clear()
    judged(PASSED, PASSED)
    assert calls == []  # a pass is not due; an unexpected pass is (below)
    xfailing = _pipeline.Reruns(1)
    for _ in range(5):
        xfailing.judge(PASSED, "report", _registry.Registry([_entry("xfail")], "2.13.0"), "reg.json", noted(0, PASSED))
    assert len(calls) == 5


def test_a_flaky_entry_takes_a_pass_as_a_pass_and_a_failure_at_any_stage_as_flaky() -> None:
    registry = _registry.Registry([_entry("flaky", "metadata")], "2.13.0")
    assert registry.judge(PASSED)[0] is Verdict.PASSED
    assert registry.judge(FAILED)[0] is Verdict.FLAKY


def test_accept_drops_a_flaky_samples_xfail_for_this_release_and_keeps_flaky_entries() -> None:
    flaky = dataclasses.replace(PASSED, reruns=(Try.of(FAILED),))
    xfail = dataclasses.replace(_entry("xfail"), torch="")
    two = _registry.accept([xfail], [flaky], "2.15.0", series=["2.13"])  # an xfail on 2.13 alone, flaky on 2.15
    assert [(e.status.value, e.stage.value, e.samples, e.torch) for e in two] == [
        ("xfail", "forward", (0,), "<2.15"),
        ("flaky", "forward", (0,), ">=2.15"),
    ]
    accepted = _registry.accept([xfail], [flaky], "2.13.0")
    assert [(e.status.value, e.stage.value, e.torch) for e in accepted] == [("flaky", "forward", "")]
    assert accepted[0].reason == "flaky: its checks found passed, forward; out[0]=1.0, but expected 2.0"
    assert _registry.accept(accepted, [FAILED], "2.13.0") == accepted  # a flaky entry stays


# -- the history ------------------------------------------------------------------------------------


def test_the_history_counts_each_samples_flaky_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flaky = dataclasses.replace(FAILED, verdict=Verdict.FLAKY, reruns=(Try.of(PASSED),))
    other = dataclasses.replace(PASSED, key=dataclasses.replace(KEY, sample=1), verdict=Verdict.PASSED)
    nights = [[flaky, other], [dataclasses.replace(PASSED, verdict=Verdict.PASSED), other], [flaky, other]]
    db = tmp_path / "h.db"
    for day, records in enumerate(nights, 21):
        write(tmp_path / f"{day}.json", records, {"torch": "2.13.0", "date": f"2026-11-{day}T03:00:00+00:00"})
        assert cli.main(["history", "ingest", str(tmp_path / f"{day}.json"), "--db", str(db)]) == 0
    capsys.readouterr()
    assert cli.main(["history", "flaky", "--db", str(db)]) == 0
    assert capsys.readouterr().out == (
        "static-float32-cpu-sin-sample0: flaky in 2 of 3 runs, last 2026-11-23T03:00:00+00:00\n"
        f"{db}: 1 sample flaky in some run, of 3 runs\n"
    )
    assert cli.main(["history", "list", "--db", str(db)]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert ["(1 of them flaky)" in line for line in listed] == [True, False, True]
    assert cli.main(["history", "export", "--db", str(db), "--run", "1", "--out", str(tmp_path / "e.json")]) == 0
    assert read(tmp_path / "e.json")[1] == sorted([flaky, other], key=lambda r: r.id)
