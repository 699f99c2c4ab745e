"""Operator authors: `optests check`, `optests.check_op`, `optests.op_test`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from corpus import BUGS, CORRECT

import optests

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A command of the docs, with .venv/bin/ meaning this interpreter's bin directory."""
    argv = command.split()
    argv[0] = str(BIN / Path(argv[0]).name)
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)


def test_the_author_guide_walkthrough_works_as_written(tmp_path: Path) -> None:
    guide = (ROOT / "docs" / "author.md").read_text()
    section = guide.split("# Checking your own op", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n# file: mylib.py\n(.*?)```", section, re.S)
    assert code is not None
    (tmp_path / "mylib.py").write_text(code.group(1))
    check, repro = re.findall(r"```sh\n(.+?)\n```", section)

    done = _run(check, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    expected_out = re.findall(r"```text\n(.*?)```", section, re.S)
    for line in expected_out[0].splitlines():
        if line != "..." and "s" not in line.split("]")[-1].strip().split()[-1:]:  # timings vary
            assert line.rsplit("  ", 1)[0] in done.stdout, line
    assert "[metadata] traced out.dtype=float64, but expected float32 [mylib::twice static float32 cpu sample 0]" in done.stdout

    shown = _run(repro, tmp_path)
    assert shown.returncode == 1, shown.stdout + shown.stderr
    assert shown.stdout == expected_out[1]

    fixed = (tmp_path / "mylib.py").read_text().replace("torch.empty_like(x, dtype=torch.float64)", "torch.empty_like(x)")
    (tmp_path / "mylib.py").write_text(fixed)
    assert _run(repro, tmp_path).returncode == 0
    again = _run(check, tmp_path)
    assert again.returncode == 0, again.stdout
    # 2 samples and 42 derived by the transforms (resized: one draw; special: 6 kinds of floating
    # values each) and the call patterns that apply
    assert "44 checks: 44 passed, 0 failed, 0 not expected" in again.stdout


def test_check_of_a_builtin_op_by_name_and_glob(tmp_path: Path) -> None:
    # every transform and call pattern, judged against the committed registry (sin's out= that must
    # be resized and relu's double backward are expected failures of aot_eager)
    registry = ROOT / "expected_failures.json"
    done = _run(f".venv/bin/optests check sin nn.functional.relu --modes static --registry {registry} --json out.json", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sin: " in done.stdout and "nn.functional.relu: " in done.stdout
    assert '"kind": "optests-results"' in (tmp_path / "out.json").read_text()


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            "check sinn",
            "optests check: error: unknown op 'sinn': no OpInfo or ModuleInfo in op_db, hop_db, custom_op_db, module_db matches; "
            "did you mean sin, sinh, sinc?",
        ),
        ("check mylib::nope --import mylib", "optests check: error: unknown custom op 'mylib::nope'; did you mean mylib::twice?"),
        (
            "check other::op",
            "optests check: error: unknown custom op 'other::op'; is the module that registers it imported (--import MODULE)?",
        ),
        (
            "check mylib::twice --import nomodule",
            "optests check: error: --import nomodule: importing it failed: ModuleNotFoundError: No module named 'nomodule'",
        ),
        (
            "check mylib::twice --import mylib",
            "optests check: error: mylib::twice has no OpInfo: give its samples (--samples MODULE:FUNC, or samples=...)",
        ),
        (
            "check mylib::twice --import mylib --samples mylib:raises",
            "optests check: error: --samples mylib:raises: raises() raised ValueError: no samples today",
        ),
        (
            "check mylib::twice --import mylib --samples mylib:wrong",
            "optests check: error: mylib:wrong: item 1 is a int; expected a SampleInput or an (args, kwargs) pair",
        ),
        (
            "check mylib::twice --import mylib --samples mylib:missing",
            "optests check: error: --samples mylib:missing: mylib has no attribute 'missing'",
        ),
        (
            "check mylib::twice --samples nomodule:f",
            "optests check: error: --samples nomodule:f: importing nomodule failed: ModuleNotFoundError: No module named 'nomodule'",
        ),
        (
            "check sin --modes statc",
            "optests check: error: --modes: unknown value 'statc'; valid: static, dynamic, static-nofunc, dynamic-nofunc",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: str, error: str) -> None:
    (tmp_path / "mylib.py").write_text(
        "import torch\n"
        "@torch.library.custom_op('mylib::twice', mutates_args=())\n"
        "def twice(x: torch.Tensor) -> torch.Tensor:\n    return x * 2\n"
        "def raises():\n    raise ValueError('no samples today')\n"
        "def wrong():\n    return [([torch.ones(2)], {}), 3]\n"
    )
    done = _run(f".venv/bin/optests {args}", tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == error
    assert "Traceback" not in done.stderr


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_check_op_returns_a_result_per_sample_and_mode() -> None:
    func, make, _, _ = BUGS["fake_wrong_dtype"]
    checks = optests.check_op(func, samples=[make(), make()], transforms="none")
    assert [(c.mode, c.sample, c.result.stage) for c in checks] == [
        ("static", 0, optests.Stage.METADATA),  # the sweep's order: mode by mode, then sample by sample
        ("static", 1, optests.Stage.METADATA),
        ("dynamic", 0, optests.Stage.METADATA),
        ("dynamic", 1, optests.Stage.METADATA),
    ]
    good, make_good, _ = CORRECT["transposed_double"]
    checks = optests.check_op(good, samples=[make_good()], modes=["static"])
    # its output is a view made inside the custom op's autograd.Function: eager refuses to mutate
    # it in place, the compiled output does not (the ``outputs`` call pattern tells them apart)
    assert [c.key.transform for c in checks if c.result.outcome is optests.Outcome.FAILED] == ["outputs"]
    assert all(c.result.passed for c in optests.check_op("nn.functional.relu", modes=["static"], transforms="none"))
    with pytest.raises(optests.AuthorError, match="has no OpInfo: give its samples"):
        optests.check_op(torch.ops.aten.sin.default)


@pytest.mark.slow
def test_op_test_parametrizes_an_authors_tests_with_a_registry(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))
    pytester.makepyfile(
        test_mine="""
        import optests
        from corpus import BUGS, CORRECT

        bad, make_bad, _, _ = BUGS["fake_wrong_dtype"]
        good, make_good, _ = CORRECT["transposed_double"]
        test_bad = optests.op_test(bad, samples=lambda: [make_bad(), make_bad()], registry="expected.json", transforms="none")
        test_good = optests.op_test(good, samples=[make_good()], transforms="none")
        """
    )
    (pytester.path / "expected.json").write_text(
        '{"schema_version": 1, "entries": [{"op": "optests_corpus::fake_wrong_dtype", "variant": "", "mode": "static",'
        ' "dtype": "float32", "device": "cpu", "status": "xfail", "stage": "metadata", "reason": "the fake claims float64", "samples": [0, 1]}]}'
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-W", "ignore::UserWarning")
    result.assert_outcomes(passed=2, xfailed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_bad[[]dynamic-float32-cpu-optests_corpus::fake_wrong_dtype-sample0[]]*",
            "*unexpected_failure*traced out.dtype=float64*",
        ]
    )


@pytest.mark.slow
def test_op_test_checks_nothing_at_collection_and_each_test_only_its_sample(pytester: pytest.Pytester) -> None:
    """Collecting (on every xdist worker) makes the samples but runs no check; a test checks
    its own sample where it runs, in the isolated runner's child (which logs each call)."""
    log = pytester.path / "calls.log"
    pytester.makepyfile(
        test_lazy=f"""
        import torch, optests

        @torch.library.custom_op("optests_lazy::logged", mutates_args=())
        def logged(x: torch.Tensor) -> torch.Tensor:
            with open({str(log)!r}, "a") as f:
                f.write(f"{{tuple(x.shape)}}\\n")
            return x * 2

        logged.register_fake(lambda x: torch.empty_like(x))
        test_op = optests.op_test(
            logged, samples=[([torch.randn(2)], {{}}), ([torch.randn(3)], {{}})], modes=["static"], transforms="none"
        )
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*test_op[[]static-float32-cpu-optests_lazy::logged-sample1[]]*"])
    assert not log.exists()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "sample1")
    result.assert_outcomes(passed=1, deselected=1)
    assert set(log.read_text().split()) == {"(3,)"}


_CRASHING_MODULE = """
import os, time, torch

@torch.library.custom_op("optests_author_crash::abort_on_pairs", mutates_args=())
def abort_on_pairs(x: torch.Tensor) -> torch.Tensor:
    if x.shape[0] == 2:
        os.abort()
    return x * 2

abort_on_pairs.register_fake(lambda x: torch.empty_like(x))

@torch.library.custom_op("optests_author_crash::hang_on_pairs", mutates_args=())
def hang_on_pairs(x: torch.Tensor) -> torch.Tensor:
    while x.shape[0] == 2:
        time.sleep(1)
    return x * 2

hang_on_pairs.register_fake(lambda x: torch.empty_like(x))

def samples():
    return [([torch.randn(3)], {}), ([torch.randn(2)], {}), ([torch.randn(4)], {})]
"""


@pytest.mark.parametrize(
    ("op", "stage", "says"), [("abort_on_pairs", "crash", "signal SIGABRT"), ("hang_on_pairs", "timeout", "no result after 2 s")]
)
def test_a_crash_or_hang_is_that_samples_finding_and_the_rest_still_run(tmp_path: Path, op: str, stage: str, says: str) -> None:
    (tmp_path / "crashing.py").write_text(_CRASHING_MODULE)
    argv = [
        str(BIN / "optests"), "check", f"optests_author_crash::{op}", "--import", "crashing", "--samples", "crashing:samples",
        "--modes", "static", "--timeout", "2", "--json", "out.json", "--transforms", "none", "-v",
    ]  # fmt: skip
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"FAIL  static         float32  sample 1 [{stage}]" in done.stdout
    assert f"[{stage}] " in done.stdout and says in done.stdout
    assert "3 checks: 2 passed, 1 failed, 1 not expected" in done.stdout
    records = json.loads((tmp_path / "out.json").read_text())["samples"]
    assert {(r["sample"], r["outcome"], r["stage"]) for r in records} == {
        (0, "passed", None),
        (1, "failed", stage),
        (2, "passed", None),
    }


_SLEEPING_MODULE = """
import time, torch

@torch.library.custom_op("optests_author_sleep::sleeps", mutates_args=())
def sleeps(x: torch.Tensor) -> torch.Tensor:
    time.sleep(3600)
    return x * 2

sleeps.register_fake(lambda x: torch.empty_like(x))

def samples():
    return [([torch.randn(3, 2)], {}), ([torch.randn(4, 2)], {})]
"""


def test_the_samples_derived_from_a_hanging_sample_are_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A kernel that hangs cost its timeout once per derived sample (issue 48, item 17): now a
    derived sample of a base sample that timed out is skipped, not run, unless asked for."""
    from optests import cli

    (tmp_path / "optests_author_sleeping.py").write_text(_SLEEPING_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    argv = ["check", "optests_author_sleep::sleeps", "--import", "optests_author_sleeping", "--samples", "optests_author_sleeping:samples", "--modes", "static", "--timeout", "1"]  # fmt: skip
    assert cli.main([*argv, "--json", "out.json"]) == 1
    out = capsys.readouterr().out
    records = json.loads((tmp_path / "out.json").read_text())["samples"]
    derived = [r for r in records if r["transform"]]
    assert len(derived) >= 10  # the point: many derived samples, none of them run
    assert sorted((r["sample"], r["outcome"], r["stage"]) for r in records if not r["transform"]) == [
        (0, "failed", "timeout"),
        (1, "failed", "timeout"),
    ]
    assert {(r["outcome"], r["stage"]) for r in derived} == {("skipped", None)}
    said = {r["id"]: r["message"] for r in derived}
    some = "static-float32-cpu-optests_author_sleep::sleeps-sample1-noncontiguous"
    assert said[some] == (
        "not run: the sample it derives from, static-float32-cpu-optests_author_sleep::sleeps-sample1, timed out; "
        "--derived-after-death (derived_after_death=True) runs it [optests_author_sleep::sleeps static float32 cpu sample 1 noncontiguous]"
    )
    assert f"{len(derived)} derived checks not run: the sample each derives from timed out or crashed" in out
    assert f"{len(records)} checks: 0 passed, 2 failed, {len(derived)} skipped, 2 not expected" in out

    # asked for, they are run (and time out too)
    assert (
        cli.main([*argv, "--transforms", "noncontiguous", "--select", "first:1", "--derived-after-death", "--json", "again.json"])
        == 1
    )
    capsys.readouterr()
    again = json.loads((tmp_path / "again.json").read_text())["samples"]
    assert [(r["transform"], r["stage"]) for r in again] == [("", "timeout"), ("noncontiguous", "timeout")]


def test_each_check_op_call_compiles_into_its_own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compile cache is the run's choice (issue 48, item 18): a fresh folder per call by
    default, which the checks' processes use and which is gone after; or the folder named."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "torch-cache"))
    seen = tmp_path / "seen.txt"

    def noting(x: torch.Tensor) -> torch.Tensor:
        with open(seen, "a") as f:  # in the runner's child, where the checks compile
            f.write(os.environ.get("TORCHINDUCTOR_CACHE_DIR", "") + "\n")
        return x * 2

    sample: list[tuple[list[torch.Tensor], dict[str, object]]] = [([torch.ones(2)], {})]
    (check,) = optests.check_op(noting, samples=sample, modes=["static"], transforms="none")
    assert check.result.passed
    (fresh,) = set(seen.read_text().split())
    assert Path(fresh).name.startswith("optests-compile-cache-") and not Path(fresh).exists()
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "torch-cache")
    seen.unlink()
    optests.check_op(noting, samples=sample, modes=["static"], transforms="none", compile_cache=str(tmp_path / "mine"))
    assert set(seen.read_text().split()) == {str(tmp_path / "mine")}
    seen.unlink()
    optests.check_op(noting, samples=sample, modes=["static"], transforms="none", compile_cache="shared")
    assert set(seen.read_text().split()) == {str(tmp_path / "torch-cache")}
    with pytest.raises(
        optests.AuthorError, match=r"^compile_cache: .*seen.txt is not a folder; valid: fresh, shared or a folder$"
    ):
        seen.write_text("")
        optests.check_op(noting, samples=sample, compile_cache=str(seen))


def test_each_op_test_test_compiles_into_its_own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``op_test``'s tests each compile into a fresh folder by default, as ``check_op`` does; a
    folder torch could not use is refused when the test module is made."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "torch-cache"))
    seen = tmp_path / "seen.txt"

    def noting(x: torch.Tensor) -> torch.Tensor:
        with open(seen, "a") as f:
            f.write(os.environ.get("TORCHINDUCTOR_CACHE_DIR", "") + "\n")
        return x * 2

    test = optests.op_test(noting, samples=[([torch.ones(2)], {}), ([torch.ones(3)], {})], modes=["static"], transforms="none")
    (mark,) = test.pytestmark  # type: ignore[attr-defined]
    for sample_id in mark.args[1]:
        test(sample_id)
    folders = set(seen.read_text().split())
    assert len(folders) == 2 and all(Path(f).name.startswith("optests-compile-cache-") for f in folders), folders
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "torch-cache")
    (tmp_path / "file").write_text("")
    with pytest.raises(optests.AuthorError, match=r"^compile_cache=.*file/cache: cannot be created: Not a directory"):
        optests.op_test(noting, samples=[([torch.ones(2)], {})], compile_cache=str(tmp_path / "file" / "cache"))


def test_check_records_its_compile_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from optests import cli

    monkeypatch.chdir(tmp_path)
    argv = ["check", "sin", "--modes", "static", "--transforms", "none", "--select", "first:1"]
    assert cli.main([*argv, "--json", "fresh.json"]) == 0
    assert json.loads((tmp_path / "fresh.json").read_text())["environment"]["compile_cache"] == "fresh"
    assert cli.main([*argv, "--compile-cache", "mine", "--json", "mine.json"]) == 0
    assert json.loads((tmp_path / "mine.json").read_text())["environment"]["compile_cache"] == str(tmp_path / "mine")
    capsys.readouterr()
    assert cli.main([*argv, "--compile-cache", "mine.json"]) == 2
    assert capsys.readouterr().err == (
        "optests check: error: --compile-cache: mine.json is not a folder; valid: fresh, shared or a folder\n"
    )


def test_check_honours_the_registry_for_a_dotted_op_name(tmp_path: Path) -> None:
    """nn.functional.ctc_loss is one op with no variant: splitting its name at a dot made the
    registry miss it (issue 14) and wrote op "nn", variant "functional.ctc_loss" into --json.
    (Its samples fail at trace on every release the registry knows.)"""
    out = tmp_path / "out.json"
    registry = ROOT / "expected_failures.json"
    done = _run(
        f".venv/bin/optests check nn.functional.ctc_loss -v --modes static --transforms none --registry {registry} --json {out}",
        tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "XFAIL static         float32  sample 0 [trace]" in done.stdout
    records = json.loads(out.read_text())["samples"]
    assert {(r["op"], r["variant"]) for r in records} == {("nn.functional.ctc_loss", "")}
    # the naming is what is tested: one sample's record carries it, whatever its check found (one
    # full test run of 2026-11-28 saw this sample time out once, on 2 loaded cores)
    hermitian = _run(
        f".venv/bin/optests check linalg.pinv.hermitian --modes static --transforms none --select first:1 --json {out}",
        tmp_path,
    )
    assert hermitian.returncode in (0, 1), hermitian.stdout + hermitian.stderr
    assert {(r["op"], r["variant"]) for r in json.loads(out.read_text())["samples"]} == {("linalg.pinv", "hermitian")}


def _apply_off_by_one_when_traced(x: torch.Tensor, f: object) -> torch.Tensor:
    out: torch.Tensor = f(x)  # type: ignore[operator]
    return out + 1 if type(x) is not torch.Tensor else out


def test_a_finding_whose_inputs_do_not_pickle_is_still_that_finding() -> None:
    """A closure among the arguments cannot cross from the runner's child; the finding must
    not turn into a crash (the repro then rebuilds the sample from the author's inputs)."""
    scale = 3.0
    checks = optests.check_op(
        _apply_off_by_one_when_traced, samples=[([torch.ones(3), lambda t: t * scale], {})], modes=["static"], transforms="none"
    )
    assert [(c.result.stage, c.result.error is not None) for c in checks] == [("forward", True)]
    assert checks[0].result.error is not None and checks[0].result.error.inputs is None
