"""One pipeline, plan -> run -> judge, for every entry point: the sweep, ``optests check``,
``check_op`` and ``op_test`` give a sample the same record, and each place where they once
disagreed has a test of its own here."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

# optests._author (and with it the check and torch._dynamo) and torch's test decorators are
# imported here, before pytester snapshots sys.modules: the snapshot would drop what the checks
# import inside a pytester test (torch cannot import its test ops twice in one process, and a
# tolerance override imported again is of another class)
import torch.testing._internal.common_device_type
from sweepdir import install_sweep

import optests._author
from optests import _opinfo, _pipeline, _transforms, cli
from optests._author import AuthorError, StaleEntryWarning, check_op, op_test
from optests._findings import Verdict
from optests._key import Mode, SampleKey, transform_name

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "sweep_fixtures"


@pytest.fixture(scope="module")
def pipeline_ops() -> Any:
    import sys

    sys.path.insert(0, str(FIXTURES))
    try:
        return importlib.import_module("pipeline_ops")
    finally:
        sys.path.remove(str(FIXTURES))


def _op(module: Any, name: str) -> Any:
    return next(op for op in module.ops if op.name == name)


def _registry(path: Path, *entries: dict[str, str]) -> Path:
    scope = {"variant": "", "mode": "static", "dtype": "float32", "device": "cpu"}
    path.write_text(json.dumps({"schema_version": 4, "entries": [{**scope, **e} for e in entries]}))
    return path


def _without_duration(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {str(r["id"]): {k: v for k, v in r.items() if k != "duration"} for r in records}


def _op_test_records(pytester: pytest.Pytester, source: str) -> dict[str, dict[str, Any]]:
    """The records the tests of a module of ``op_test`` calls carry (their ``optests`` property)."""
    pytester.makepyfile(test_authored=source)
    reprec = pytester.inline_run("-p", "no:cacheprovider", "test_authored.py")
    records = [
        json.loads(str(value))
        for report in reprec.getreports("pytest_runtest_logreport")
        if report.when == "call"
        for name, value in report.user_properties
        if name == optests._author.RECORD_PROPERTY
    ]
    return _without_duration(records)


# -- every entry point, one record -----------------------------------------------------------------

#: erfinv: one sample, the OpInfo's tolerance override (at float32, and at bfloat16, the dtype
#: ``autocast`` and ``dtypes-2`` are judged at), an in-place and an out variant: every transform
#: and pattern but the two that need two inputs of one shape, which logaddexp2's one sample has.
CASES = [
    ("erfinv", "all", set(_transforms.TRANSFORMS) - {"duplicated", "aliased"}),
    ("logaddexp2", "duplicated,aliased", {"duplicated", "aliased"}),
]
#: An expected failure (erfinv's ``out=`` to be resized: its traced shape is the empty one) and a
#: skip entry (of a derived sample, and of a base sample: its derived samples go with it).
ENTRIES = (
    {"op": "erfinv", "status": "xfail", "stage": "metadata", "reason": "out= resized", "samples": "0", "transform": "out-1"},
    {"op": "erfinv", "status": "skip", "stage": "forward", "reason": "hangs here", "samples": "0", "transform": "subclass"},
    {"op": "logaddexp2", "status": "skip", "stage": "crash", "reason": "crashes here", "samples": "0", "transform": "aliased-0"},
)


@pytest.mark.parametrize(("op", "transforms", "families"), CASES, ids=[c[0] for c in CASES])
def test_every_entry_point_gives_a_sample_the_same_record(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, op: str, transforms: str, families: set[str]
) -> None:
    """The sweep, ``optests check --json``, ``check_op`` and ``op_test``: every field but the
    duration, verdicts and databases included."""
    install_sweep(pytester.path)
    monkeypatch.chdir(pytester.path)
    registry = _registry(pytester.path / "reg.json", *ENTRIES)
    swept = pytester.runpytest(
        "-p", "no:cacheprovider", f"--optests-ops={op}", "--optests-modes=static", f"--optests-transforms={transforms}",
        "--optests-select=first:1", "--optests-registry=reg.json", "--optests-results=sweep.json",
    )  # fmt: skip
    assert swept.ret == pytest.ExitCode.OK, swept.stdout.str()
    sweep = _without_duration(json.loads((pytester.path / "sweep.json").read_text())["samples"])

    command = ["check", op, "--modes", "static", "--transforms", transforms, "--select", "first:1"]
    assert cli.main([*command, "--registry", "reg.json", "--json", "check.json"]) == 0
    checked = _without_duration(json.loads((pytester.path / "check.json").read_text())["samples"])

    api = _without_duration(
        [
            c.record().to_json()
            for c in check_op(op, modes=("static",), transforms=transforms, select="first:1", registry=registry)
        ]
    )
    authored = _op_test_records(
        pytester,
        f"import optests\ntest_op = optests.op_test({op!r}, modes=('static',), transforms={transforms!r}, registry='reg.json')\n",
    )

    assert {transform_name(str(r["transform"])) for r in sweep.values() if r.get("transform")} >= families
    verdicts = {r["verdict"] for r in sweep.values()}
    assert "skipped" in verdicts
    if op == "erfinv":
        assert "xfailed" in verdicts
        assert any(r["tolerance"].startswith("OpInfo tolerance override") for r in sweep.values())
        assert {r["tolerance"] for r in sweep.values() if r.get("transform") == "autocast"} == {
            "OpInfo tolerance override(atol=0.01, rtol=0)"
        }
    assert _differences(checked, sweep) == []
    assert _differences(api, sweep) == []
    assert _differences(authored, sweep) == []


def _differences(got: dict[str, dict[str, Any]], swept: dict[str, dict[str, Any]]) -> list[tuple[str, str, object, object]]:
    """``(id, field, got, swept)`` for each field where two sets of records differ."""
    return [
        (i, f, got.get(i, {}).get(f), swept.get(i, {}).get(f))
        for i in sorted(got.keys() | swept.keys())
        for f in sorted(got.get(i, {}).keys() | swept.get(i, {}).keys())
        if got.get(i, {}).get(f) != swept.get(i, {}).get(f)
    ]


# -- each divergence, a test ---------------------------------------------------------------------


def test_decorations_are_read_at_the_judged_dtype_in_the_sweep_too(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, pipeline_ops: Any
) -> None:
    """An OpInfo that skips its float32 test: the sample ``dtypes`` casts to float64 is checked,
    by the sweep as by ``check_op``."""
    install_sweep(pytester.path)
    monkeypatch.setenv("PYTHONPATH", str(FIXTURES))
    monkeypatch.syspath_prepend(str(FIXTURES))
    swept = pytester.runpytest(
        "-p", "no:cacheprovider", "--optests-dbs=pipeline_ops:ops", "--optests-ops=skipped_at_float32",
        "--optests-modes=static", "--optests-transforms=dtypes", "--optests-results=sweep.json",
    )  # fmt: skip
    assert swept.ret == pytest.ExitCode.OK, swept.stdout.str()
    assert swept.parseoutcomes().get("skipped") == 1  # the skipped sample's test is skipped too, not passed
    sweep = {r["id"]: r["outcome"] for r in json.loads((pytester.path / "sweep.json").read_text())["samples"]}
    api = {
        c.id: c.result.outcome.value
        for c in check_op(_op(pipeline_ops, "skipped_at_float32"), modes=("static",), transforms="dtypes")
    }
    base = "static-float32-cpu-skipped_at_float32-sample0"
    assert sweep[base] == "skipped"
    assert sweep[f"{base}-dtypes-0"] == "passed"  # float64: the decorations skip nothing there
    assert sweep == api


def test_a_dtype_the_op_does_not_support_is_not_applicable_in_optests_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], pipeline_ops: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "erfinv", "--dtypes", "complex64", "--modes", "static", "--json", "c.json"]) == 0
    (record,) = json.loads((tmp_path / "c.json").read_text())["samples"]
    assert (record["id"], record["outcome"], record["verdict"]) == (
        "static-complex64-cpu-erfinv-not_applicable",
        "not_applicable",
        "not_applicable",
    )
    assert record["message"] == "erfinv does not support complex64 on cpu"
    assert "N/A  1 check: erfinv does not support complex64 on cpu" in capsys.readouterr().out.splitlines()
    (checked,) = check_op(_op(pipeline_ops, "float64_only"), modes=("static",))
    assert (checked.id, checked.sample, checked.verdict) == (
        "static-float32-cpu-float64_only-not_applicable",
        None,
        "not_applicable",
    )


def test_optests_check_says_why_checks_were_not_applicable_one_line_a_reason(capsys: pytest.CaptureFixture[str]) -> None:
    """Without ``-v``: messages that differ only in their values are one reason, the most
    frequent first, at most three, then how many more."""

    def na(message: str) -> Any:
        return SimpleNamespace(verdict=Verdict.NOT_APPLICABLE, result=SimpleNamespace(message=message))

    checks = [
        *(na(f"eager fails: size {n} too small [op static float32 cpu sample {n}]") for n in range(3)),
        *(na(f"reason {w}") for w in ("b", "c", "d", "e")),
        SimpleNamespace(verdict=Verdict.PASSED, result=SimpleNamespace(message="")),
    ]
    cli._print_not_applicable(checks)
    assert capsys.readouterr().out.splitlines() == [
        "",
        "N/A  3 checks: eager fails: size 0 too small",
        "N/A  1 check: reason b",
        "N/A  1 check: reason c",
        "N/A  and 2 more reasons: -v lists each check",
    ]


def test_a_sample_generator_that_raises_is_an_eager_failure_in_every_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], pipeline_ops: Any
) -> None:
    (checked,) = check_op(_op(pipeline_ops, "broken_samples"), modes=("static",))
    expected = ("failed", "eager", "unexpected_failure")
    record = checked.record()
    assert (record.outcome.value, str(record.stage), str(record.verdict)) == expected
    assert record.id == "static-float32-cpu-broken_samples-samples"
    assert record.message == "sample_inputs raised ValueError: no samples today [broken_samples float32 cpu]"

    def broken(*args: Any, **kwargs: Any) -> Iterator[Any]:
        raise ValueError("no samples today")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_opinfo, "samples_of", broken)
    assert cli.main(["check", "erfinv", "--modes", "static", "--json", "c.json"]) == 1  # a finding, not an internal error
    (written,) = json.loads((tmp_path / "c.json").read_text())["samples"]
    assert (written["outcome"], written["stage"], written["verdict"]) == expected
    assert (
        "[eager] the OpInfo's samples cannot be made: sample_inputs raised ValueError: no samples today"
        in capsys.readouterr().out
    )


def test_a_skip_entry_keeps_check_op_and_op_test_from_running_a_sample(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, pipeline_ops: Any
) -> None:
    """A sample that hangs or crashes is listed as ``skip``: no entry point starts it."""
    marker = pytester.path / "calls"
    monkeypatch.setenv(pipeline_ops.MARKER, str(marker))
    registry = _registry(pytester.path / "reg.json", {"op": "marking", "status": "skip", "stage": "timeout", "reason": "hangs"})
    (checked,) = check_op(_op(pipeline_ops, "marking"), modes=("static",), transforms="none", registry=registry)
    assert (checked.result.outcome.value, checked.result.message, checked.verdict) == ("skipped", "hangs", "skipped")
    assert not marker.exists()

    monkeypatch.syspath_prepend(str(FIXTURES))
    source = "import optests, pipeline_ops\n"
    source += "test_marking = optests.op_test(pipeline_ops.ops[3], modes=('static',), transforms='none', registry='reg.json')\n"
    monkeypatch.chdir(pytester.path)
    records = _op_test_records(pytester, source)
    assert [(r["outcome"], r["verdict"]) for r in records.values()] == [("skipped", "skipped")]
    assert not marker.exists()


def test_check_json_records_carry_the_verdict_and_the_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    command = ["check", "erfinv", "--modes", "static", "--transforms", "none", "--json", "c.json"]
    assert cli.main(command) == 0
    (record,) = json.loads((tmp_path / "c.json").read_text())["samples"]
    assert (record["db"], record["verdict"]) == ("op_db", "passed")


def test_nothing_that_calls_the_op_runs_in_the_calling_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``out`` calls the op to size its ``out=`` tensors: only the isolated child derives."""
    import torch

    calls = tmp_path / "calls"

    def op(x: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor:
        with open(calls, "a") as f:
            f.write(f"{os.getpid()}\n")
        return torch.sin(x, out=out) if out is not None else torch.sin(x)

    checks = check_op(op, [((torch.ones(3),), {})], modes=("static",), transforms="out")
    assert {c.key.transform for c in checks} == {"", "out-0", "out-1", "out-2", "out-3"}
    pids = set(calls.read_text().split())
    assert pids and str(os.getpid()) not in pids
    out0 = next(c for c in checks if c.key.transform == "out-0")
    assert out0.inputs[1]["out"].shape == (3,)  # the derived inputs, as the child checked them


def test_a_transform_that_raises_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    def sine(x: torch.Tensor) -> torch.Tensor:  # no in-place twin, no out=
        return torch.sin(x)

    one = _pipeline.Base(sine, [torch.tensor(1.0)], {}, True)
    # a sample a transform cannot take apart derives nothing from it, without raising
    assert _pipeline.suffixes(one, ["transposed", "duplicated", "aliased", "inplace", "out"]) == []

    def buggy(sample: Any, draws: int, seed: int) -> Any:
        raise KeyError("a bug")

    original = _transforms.transform_of
    row = dataclasses.replace(original("transposed"), derive=buggy)
    monkeypatch.setattr(_transforms, "transform_of", lambda name: row if name == "transposed" else original(name))
    two = _pipeline.Base(torch.add, [torch.ones(2, 3), torch.ones(2, 3)], {}, True)
    with pytest.raises(
        _pipeline.DerivationError, match=r"^the transposed transform raised KeyError deriving from a sample: 'a bug'$"
    ):
        _pipeline.suffixes(two, ["transposed"])
    key = SampleKey("add", "", Mode("static"), "float32", "cpu", 0, transform="transposed-0")
    with pytest.raises(
        _pipeline.DerivationError,
        match=r"the transposed transform raised KeyError deriving from static-float32-cpu-add-sample0-transposed-0",
    ):
        _pipeline.derive(key, two)


def test_a_registry_that_is_not_there_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AuthorError, match=r"^missing\.json: no registry there$"):
        op_test("erfinv", registry="missing.json")
    with pytest.raises(AuthorError, match=r"^missing\.json: no registry there$"):
        check_op("erfinv", registry="missing.json")
    assert cli.main(["check", "erfinv", "--registry", "missing.json"]) == cli.EXIT_USAGE
    assert capsys.readouterr().err == "optests check: error: missing.json: no registry there\n"


def test_stale_entries_are_reported_by_optests_check_and_op_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _registry(
        tmp_path / "reg.json",
        {"op": "erfinv", "status": "xfail", "stage": "forward", "reason": "gone", "samples": "7"},  # erfinv has one sample
        {"op": "erfinv", "mode": "dynamic", "status": "xfail", "stage": "forward", "reason": "not run", "samples": "7"},
    )
    stale = "reg.json: stale registry entry (matches no collected sample): erfinv static float32 cpu forward samples=[7]"
    with pytest.warns(StaleEntryWarning) as warned:
        op_test("erfinv", modes=("static",), transforms="none", registry="reg.json")
    assert [str(w.message) for w in warned] == [stale]
    command = ["check", "erfinv", "--modes", "static", "--transforms", "none", "--registry", "reg.json"]
    assert cli.main(command) == 0
    out = capsys.readouterr().out
    assert stale in out.splitlines()
    assert "not run" not in out  # the dynamic entry lies outside what the run selects


def test_inputs_cross_from_the_child_as_checked_a_view_of_a_non_leaf_a_view_of_a_non_leaf() -> None:
    """A repro rebuilds an input as it was checked: a view of a non-leaf (an in-place variant's
    input) must reach the entry point's process as one, not as a leaf (on which eager refuses the
    in-place op). Two views of one base stay views of one base; a leaf stays a leaf."""
    import pickle

    import torch

    leaf = torch.randn(4, 3, requires_grad=True)
    non_leaf = leaf * 2
    a, b = non_leaf[1:], non_leaf[:, 1]
    plain = torch.randn(2)
    crossed = pickle.loads(pickle.dumps(_pipeline.portable_value(([a, b, non_leaf * 1, leaf, plain], {}))))
    (ra, rb, rn, rl, rp), _ = _pipeline.rebuilt(crossed)
    for got, was in ((ra, a), (rb, b), (rn, non_leaf)):
        assert got.grad_fn is not None and torch.equal(got, was.detach())
    assert ra._base is rb._base and ra._base.grad_fn is not None  # one rebuilt base, a non-leaf
    assert (ra.stride(), ra.storage_offset(), rb.stride(), rb.storage_offset()) == (
        a.stride(), a.storage_offset(), b.stride(), b.storage_offset(),
    )  # fmt: skip
    ra.mul_(2)  # eager accepts the in-place op on a view of a non-leaf
    assert rl.is_leaf and rl.requires_grad and not rp.requires_grad
