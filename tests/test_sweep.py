"""Acceptance tests of the sweep, run through pytest itself (pytester), on test-only ops."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from sweepdir import install_sweep, run_inline

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "sweep_fixtures"


def _records(path: Path) -> list[dict[str, object]]:
    data = json.loads(path.read_text())
    assert data["schema_version"] == 4 and data["kind"] == "optests-results"
    assert {"torch", "python", "optests"} <= set(data["environment"])
    return list(data["samples"])


@pytest.mark.parametrize(
    ("xdist", "fork"), [([], True), (["-n", "2"], True), ([], False)], ids=["serial", "xdist", "fresh-interpreter"]
)
@pytest.mark.slow
def test_crash_and_hang_are_recorded_and_the_run_goes_on(
    sweep: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str], fork: bool
) -> None:
    if not fork:  # as in a cuda sweep, where the runner's children are fresh interpreters
        monkeypatch.setattr("optests._runner.fork_is_safe", lambda: False)
    result = run_inline(
        sweep,
        *xdist,
        "--optests-dbs=crashy_ops:ops",
        "--optests-timeout=3",
        "--optests-results=results.json",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*static: 6 samples:*", "*dynamic: 6 samples:*"])
    stages = {r["id"]: (r["outcome"], r["stage"]) for r in _records(sweep.path / "results.json")}
    assert len(stages) == 12
    for mode in ("static", "dynamic"):
        for i in (0, 1):
            assert stages[f"{mode}-float32-cpu-crashy_abort-sample{i}"] == ("failed", "crash")
            assert stages[f"{mode}-float32-cpu-crashy_hang-sample{i}"] == ("failed", "timeout")
            assert stages[f"{mode}-float32-cpu-crashy_fine-sample{i}"] == ("passed", None)
    result.stdout.fnmatch_lines(["*died with signal SIGABRT*"])


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.slow
def test_the_samples_derived_from_a_hanging_sample_are_not_run(sweep: pytest.Pytester, xdist: list[str]) -> None:
    """A hanging op cost its timeout once per derived sample (issue 48, item 17). Under xdist a
    base sample and its derived samples go to one worker, so the rule holds there too."""
    args = ["--optests-dbs=crashy_ops:ops", "--optests-ops=crashy_hang", "--optests-modes=static", "--optests-timeout=3"]
    result = run_inline(sweep, *xdist, *args, "--optests-transforms=all", "--optests-results=r.json", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    records = _records(sweep.path / "r.json")
    derived = [r for r in records if r["transform"]]
    assert len(derived) >= 10
    assert sorted((r["sample"], r["stage"]) for r in records if not r["transform"]) == [(0, "timeout"), (1, "timeout")]
    assert {(r["outcome"], r["stage"], r["verdict"]) for r in derived} == {("skipped", None, "skipped")}
    for r in derived:
        base = f"static-float32-cpu-crashy_hang-sample{r['sample']}"
        assert str(r["message"]).startswith(
            f"not run: the sample it derives from, {base}, timed out; --optests-derived-after-death runs it ["
        )
    result.assert_outcomes(failed=2, skipped=len(derived))
    assert not any(r.get("duration") for r in derived)  # not run: no check time at all

    # asked for (the ini key), the derived samples are run and time out as well
    sweep.makeini("[pytest]\noptests_derived_after_death = true\n")
    again = run_inline(
        sweep, *args, "--optests-transforms=noncontiguous", "--optests-results=again.json", "-p", "no:cacheprovider"
    )
    assert again.ret == pytest.ExitCode.TESTS_FAILED
    assert {(r["transform"], r["stage"]) for r in _records(sweep.path / "again.json")} == {
        ("", "timeout"),
        ("noncontiguous", "timeout"),
    }


_PLANT_COS = """
import os
if os.environ.get("OPTESTS_TEST_PLANT_COS"):  # a wrong decomposition, planted as a user's conftest might
    import torch
    from torch._inductor import decomposition

    decomposition.decompositions[torch.ops.aten.sin.default] = lambda x: torch.cos(x)
"""


@pytest.mark.slow
def test_an_inductor_verdict_does_not_depend_on_what_the_compile_cache_holds(
    sweep: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Inductor's caches are shared between runs, and their keys need not see everything that
    changes what is compiled (issue 48, item 18): here a decomposition planted at run time, which
    a warm AOTAutograd cache hides. A run uses a fresh cache unless told otherwise, and records it.
    (Subprocesses: what a cache holds across processes, and the environment, are the point.)"""
    (sweep.path / "conftest.py").write_text((sweep.path / "conftest.py").read_text() + _PLANT_COS)
    shared = tmp_path / "torch-cache"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(shared))
    args = ["--optests-ops=sin", "--optests-backends=inductor", "--optests-modes=static", "--optests-select=first:1"]

    def run(name: str, *extra: str) -> tuple[object, ...]:
        sweep.runpytest_subprocess(
            *args, "--optests-registry=none.json", f"--optests-results={name}", *extra, "-p", "no:cacheprovider"
        )
        data = json.loads((sweep.path / name).read_text())
        (record,) = data["samples"]
        return data["environment"]["compile_cache"], record["outcome"], record["stage"]

    # the shared cache, warmed by a run of sin as it is
    assert run("warm.json", "--optests-compile-cache=shared") == (f"shared ({shared})", "passed", None)
    monkeypatch.setenv("OPTESTS_TEST_PLANT_COS", "1")
    # sin compiled as cos: the warm shared cache still hands out sin's code, so the verdict is the cache's
    assert run("stale.json", "--optests-compile-cache=shared") == (f"shared ({shared})", "passed", None)
    # by default a run compiles into a fresh cache of its own, whatever the shared one holds
    assert run("fresh.json") == ("fresh", "failed", "forward")
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(shared)


@pytest.mark.slow
def test_xdist_results_hold_every_sample_exactly_once(sweep: pytest.Pytester) -> None:
    args = ["--optests-dbs=op_db", "--optests-ops=sin,abs,nn.functional.relu", "-p", "no:cacheprovider"]
    collected = run_inline(sweep, "--collect-only", "-q", *args)
    ids = sorted(line.split("[", 1)[1].rstrip("]") for line in collected.outlines if "::test_aot_autograd[" in line)
    assert len(ids) >= 12
    result = run_inline(sweep, "-n", "2", "--optests-results=out/results.json", *args)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    recorded = [str(r["id"]) for r in _records(sweep.path / "out" / "results.json")]
    assert recorded == ids  # each collected sample once, none lost, none doubled; sorted by id


def test_ids_are_stable_and_k_selects_by_op(sweep: pytest.Pytester) -> None:
    args = ["--collect-only", "-q", "--optests-dbs=crashy_ops:ops", "-p", "no:cacheprovider"]
    first = run_inline(sweep, *args).outlines
    second = run_inline(sweep, *args).outlines
    assert [ln for ln in first if "[" in ln] == [ln for ln in second if "[" in ln]
    assert "test_aot_autograd.py::test_aot_autograd[static-float32-cpu-crashy_fine-sample1]" in first
    selected = run_inline(sweep, *args, "-k", "crashy_fine")
    assert len([ln for ln in selected.outlines if "::test_aot_autograd[" in ln]) == 4


def test_an_unsupported_dtype_is_recorded_as_not_applicable(sweep: pytest.Pytester) -> None:
    result = run_inline(
        sweep,
        "--optests-dbs=crashy_ops:ops",
        "--optests-ops=crashy_fine",
        "--optests-dtypes=float64",
        "--optests-modes=static",
        "--optests-results=r.json",
    )
    assert result.ret == pytest.ExitCode.OK
    records = _records(sweep.path / "r.json")
    assert [(r["id"], r["outcome"], r["sample"]) for r in records] == [
        ("static-float64-cpu-crashy_fine-not_applicable", "not_applicable", None)
    ]
    assert records[0]["message"] == "crashy_fine does not support float64 on cpu"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            ["--optests-modes=statc"],
            "ERROR: --optests-modes: unknown value 'statc'; valid: static, dynamic, static-nofunc, dynamic-nofunc",
        ),
        (["--optests-dtypes=float33"], "ERROR: --optests-dtypes: unknown value 'float33'; valid: float32, *"),
        (["--optests-devices=tpu"], "ERROR: --optests-devices: unknown value 'tpu'; valid: cpu, cuda"),
        (["--optests-timeout=0"], "ERROR: --optests-timeout: must be more than 0 and at most 86400 seconds (a day), got '0'"),
        (["--optests-timeout=soon"], "ERROR: --optests-timeout: 'soon' is not a number of seconds"),
        (
            ["--optests-dbs=nosuch_module:ops"],
            "ERROR: --optests-dbs: OpInfo database 'nosuch_module:ops': importing nosuch_module failed: *",
        ),
        (["--optests-dbs=crashy_ops:ops", "--optests-ops=nope*"], "ERROR: --optests-ops: no op matches nope* in crashy_ops:ops"),
        (["-o", "optests_modes=static,fast"], "ERROR: optests_modes (ini): unknown value 'fast'; valid: *"),
    ],
)
def test_bad_option_values_are_one_line_usage_errors(sweep: pytest.Pytester, args: list[str], error: str) -> None:
    result = run_inline(sweep, *args, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([error])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


_CLASHING = """
import torch
from torch.testing._internal.common_dtype import floating_types
from torch.testing._internal.opinfo.core import OpInfo, SampleInput


def _samples(op, device, dtype, requires_grad, **kwargs):
    yield SampleInput(torch.randn(3, device=device, dtype=dtype, requires_grad=requires_grad))


def op(name, func=torch.sin, variant=""):
    return OpInfo(name, op=func, variant_test_name=variant, dtypes=floating_types(), sample_inputs_func=_samples)


twice = [op("fine"), op("twin"), op("twin", torch.cos)]
one = [op("twin")]
other = [op("fine", torch.cos), op("twin", torch.cos)]
dotted = [op("a.b"), op("a", variant="b")]
"""


@pytest.mark.parametrize(
    ("dbs", "error"),
    [
        ("{m}:twice", "'twin': {m}:twice[1] (name 'twin') and {m}:twice[2] (name 'twin')"),
        ("{m}:one,{m}:other", "'twin': {m}:one[0] (name 'twin') and {m}:other[1] (name 'twin')"),
        ("{m}:dotted", "'a.b': {m}:dotted[0] (name 'a.b') and {m}:dotted[1] (name 'a', variant 'b')"),
    ],
    ids=["in-one-database", "across-two", "name-and-variant"],
)
def test_ops_that_share_an_id_are_a_one_line_usage_error(pytester: pytest.Pytester, dbs: str, error: str) -> None:
    """Two ops whose test ids would be one, in one database or across two, stop the run before
    collection: one line naming the id and both ops, and pytest's usage exit (4), not a collection
    traceback."""
    pytester.makepyfile(clashing_ops=_CLASHING)
    pytester.makeconftest("")  # the pytester dir first on sys.path (rootdir conftest)
    install_sweep(pytester.path)
    result = run_inline(
        pytester, f"--optests-dbs={dbs.format(m='clashing_ops')}", "--optests-modes=static", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    message = (
        f"ERROR: --optests-dbs: two ops have the id {error.format(m='clashing_ops')}; their test ids would clash, rename one"
    )
    assert [line for line in result.errlines if line] == [message]
    assert "Traceback" not in result.stdout.str() and "ERROR collecting" not in result.stdout.str()
    if dbs == "{m}:twice":  # the ops a run selects are what may not clash
        result = run_inline(
            pytester,
            "--optests-dbs=clashing_ops:twice",
            "--optests-ops=fine",
            "--optests-modes=static",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
        )
        assert result.ret == pytest.ExitCode.OK
        result.stdout.fnmatch_lines(["*static-float32-cpu-fine-sample0*"])


def test_the_runner_replaces_a_child_that_grew_too_big() -> None:
    import os

    from optests._runner import IsolatedRunner

    runner = IsolatedRunner(lambda task: os.getpid(), max_growth=-1)  # every child has grown "too much"
    try:
        pids = {runner.run(i, timeout=30) for i in range(3)}
    finally:
        runner.close()
    assert len(pids) == 3 and os.getpid() not in pids

    runner = IsolatedRunner(lambda task: os.getpid())
    try:
        assert len({runner.run(i, timeout=30) for i in range(3)}) == 1  # one long-lived child
    finally:
        runner.close()


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "interpreter"])
def test_the_runner_replaces_a_child_whose_work_raised(fork: bool) -> None:
    """A child whose work raised may be unfit for the next task (a sticky CUDA error fails every
    later CUDA call in it, and each sample after it would be an internal error): a fresh one."""

    from optests._runner import IsolatedRunner, WorkFailed

    runner = IsolatedRunner(_pid_and_path, can_fork=lambda: fork)
    try:
        before: Any = runner.run("pid", timeout=60)
        with pytest.raises(WorkFailed) as info:
            runner.run("cuda", timeout=60)
        assert info.value.summary == "RuntimeError: CUDA error: an illegal memory access was encountered"
        after: Any = runner.run("pid", timeout=60)
        assert after[0] != before[0]
        assert runner.run("pid", timeout=60) == after  # and that one lives on
    finally:
        runner.close()


_BALLAST: list[bytes] = []


def _hold(megabytes: int) -> int:
    """Work for a runner's child: keep ``megabytes`` of touched memory alive; its pid."""
    import os

    _BALLAST.append(b"\x01" * (megabytes * 1024**2))  # written, so resident (zeros may not be)
    return os.getpid()


def test_the_runner_judges_a_child_by_its_growth_not_by_what_it_shares_with_a_large_parent() -> None:
    """A forked child is as large as its parent from the start; a pattern sweep's parent holds
    over 2 GB, and a limit on size would replace its child after every task (a fork a sample)."""
    import os

    from optests._runner import IsolatedRunner

    parent = b"\x01" * (400 * 1024**2)  # a large parent, written: resident in every child too
    runner = IsolatedRunner(_hold, max_growth=200 * 1024**2)
    try:
        assert len({runner.run(0, timeout=30) for _ in range(3)}) == 1  # small tasks: one child
        first = runner.run(300, timeout=30)  # grows past the limit: replaced after this task
        assert runner.run(0, timeout=30) not in (first, os.getpid())
    finally:
        runner.close()
    del parent


def _pid_and_path(task: str) -> tuple[int, bool]:
    """Work for a runner's child: its pid, and whether it imports from the parent's sys.path."""
    import os
    import sys

    if task == "raise":
        raise ValueError("the work failed")
    if task == "cuda":  # as a CUDA error reads: several lines, the last one blank
        raise RuntimeError(
            "CUDA error: an illegal memory access was encountered\n"
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
        )
    if task == "abort":
        os.abort()
    if task == "hang":
        import time

        time.sleep(60)
    return os.getpid(), str(Path(__file__).parent) in sys.path


def test_a_runner_that_may_not_fork_starts_a_fresh_long_lived_interpreter() -> None:
    import os

    from optests._runner import Died, IsolatedRunner

    runner = IsolatedRunner(_pid_and_path, can_fork=lambda: False)
    try:
        first: list[Any] = [runner.run("pid", timeout=60) for _ in range(3)]
        assert len(set(first)) == 1 and first[0][0] != os.getpid()  # one child, not this process
        assert first[0][1]  # the work was found through the parent's sys.path
        with pytest.raises(RuntimeError, match="ValueError: the work failed"):
            runner.run("raise", timeout=60)
        died = runner.run("abort", timeout=60)
        assert isinstance(died, Died) and died.kind == "crash" and "SIGABRT" in died.message
        died = runner.run("hang", timeout=1)
        assert isinstance(died, Died) and died.kind == "timeout"
        after = runner.run("pid", timeout=60)
        assert not isinstance(after, Died) and after[0] not in (first[0][0], os.getpid())  # a new child after each death
    finally:
        runner.close()

    # a child that has grown too much is replaced after its task, the first one too (its ready
    # answer is no task): each task gets a fresh interpreter, and the runner keeps working
    runner = IsolatedRunner(_pid_and_path, max_growth=-1, can_fork=lambda: False)
    try:
        pids: list[Any] = [runner.run("pid", timeout=60) for _ in range(2)]
        assert not any(isinstance(p, Died) for p in pids) and pids[0][0] != pids[1][0]
    finally:
        runner.close()


def test_forking_is_refused_once_cuda_is_initialized(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from optests._runner import fork_is_safe

    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    assert fork_is_safe()
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    assert not fork_is_safe()


def test_a_database_that_cannot_be_imported_is_a_one_line_error(sweep: pytest.Pytester) -> None:
    """(Subprocesses: a fresh interpreter, that imports the planted expecttest rather than the one
    this process has.)"""
    # torch's test utilities import expecttest; without it, op_db cannot be loaded
    (sweep.path / "expecttest.py").write_text("raise ImportError('no expecttest here')\n")
    sweep.makeconftest("")  # the pytester dir first on sys.path (rootdir conftest)
    result = sweep.runpytest_subprocess("--optests-ops=sin", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --optests-dbs: OpInfo database 'op_db': importing torch.testing._internal.common_methods_invocations "
            "failed: ImportError: no expecttest here"
        ]
    )
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    checked = sweep.run(sys.executable, "-m", "optests.cli", "check", "sin")  # the same for optests check
    assert checked.ret == 2
    assert checked.errlines == [
        "optests check: error: OpInfo database 'op_db': importing torch.testing._internal.common_methods_invocations "
        "failed: ImportError: no expecttest here"
    ]


def test_warnings_while_importing_a_database_do_not_stop_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # as numba's DeprecationWarning did, imported by torch's test utilities under filterwarnings=error
    import warnings

    from optests import _opinfo

    (tmp_path / "warny_db_module.py").write_text(
        "import warnings\nwarnings.warn('old', DeprecationWarning)\nwarny_db = ['not-checked-here']\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(_opinfo._BUILTIN_MODULES, "warny_db", "warny_db_module")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _opinfo._load("warny_db") == ("not-checked-here",)


def test_the_cuda_runtime_notice_of_a_cuda_build_without_a_gpu_is_not_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PyPI's torch 2.15 (a CUDA build) on a CPU machine: torch's test utilities import
    torch.utils.cpp_extension, which logs "No CUDA runtime is found" to stderr; a one-line
    error must stay one line. Its other warnings, later, still show."""
    import logging

    from optests import _opinfo

    (tmp_path / "cuda_build_db_module.py").write_text(
        "import logging\n"
        "logging.getLogger('torch.utils.cpp_extension').warning('No CUDA runtime is found')\n"
        "cuda_build_db = ['not-checked-here']\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(_opinfo._BUILTIN_MODULES, "cuda_build_db", "cuda_build_db_module")
    seen: list[logging.LogRecord] = []

    class Seen(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    log, handler = logging.getLogger("torch.utils.cpp_extension"), Seen()
    log.addHandler(handler)
    try:
        assert _opinfo._load("cuda_build_db") == ("not-checked-here",)
        log.warning("later")
    finally:
        log.removeHandler(handler)
    assert [r.getMessage() for r in seen] == ["later"]


@pytest.mark.slow
def test_a_killed_xdist_worker_is_a_crash_and_no_sample_is_lost(sweep: pytest.Pytester) -> None:
    """Fault injection: sample 4 of `kills_worker` SIGKILLs the xdist worker running it."""
    args = ["--optests-dbs=worker_killer_ops:ops", "--optests-modes=static", "-p", "no:cacheprovider"]
    collected = run_inline(sweep, "--collect-only", "-q", *args)
    ids = sorted(line.split("[", 1)[1].rstrip("]") for line in collected.outlines if "::test_aot_autograd[" in line)
    assert len(ids) == 16
    result = run_inline(sweep, "-n", "2", "--optests-results=results.json", *args)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    records = {str(r["id"]): r for r in _records(sweep.path / "results.json")}
    assert sorted(records) == ids  # every collected sample, the dead one included
    dead = records["static-float32-cpu-kills_worker-sample4"]
    assert (dead["outcome"], dead["stage"], dead["verdict"]) == ("failed", "crash", "unexpected_failure")
    assert "worker running the sample died" in str(dead["message"])
    assert all(r["outcome"] == "passed" for i, r in records.items() if i != dead["id"])


@pytest.mark.slow
def test_a_sample_that_kills_its_worker_is_not_run_again_with_its_derived_samples(sweep: pytest.Pytester) -> None:
    """With transforms under ``-n``, a base sample and its derived samples are one unit of work
    (:func:`optests._sweep._base_group_scheduling`): the sample that killed its worker is a crash
    once, not handed to the next worker (which it would kill too), and its derived samples are
    not run; every other sample is checked."""
    args = ["--optests-dbs=worker_killer_ops:ops", "--optests-modes=static", "--optests-transforms=noncontiguous"]
    result = run_inline(sweep, "-n", "2", "-p", "no:cacheprovider", "--optests-results=results.json", *args)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    assert result.stdout.str().count("replacing crashed worker") == 1
    records = {str(r["id"]): r for r in _records(sweep.path / "results.json")}
    base = "static-float32-cpu-kills_worker-sample4"
    assert (records[base]["outcome"], records[base]["stage"]) == ("failed", "crash")
    derived = {i: r["outcome"] for i, r in records.items() if i.startswith(f"{base}-")}
    assert derived and set(derived.values()) == {"skipped"}, derived
    assert all(r["outcome"] == "passed" for i, r in records.items() if not i.startswith(base)), records


@pytest.mark.slow
def test_a_worker_crash_the_registry_expects_is_an_xfail(sweep: pytest.Pytester) -> None:
    (sweep.path / "expected_failures.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "entries": [
                    {"op": "kills_worker", "variant": "", "mode": "static", "dtype": "float32", "device": "cpu",
                     "status": "xfail", "stage": "crash", "reason": "kills its worker", "samples": [4]}
                ],
            }
        )
    )  # fmt: skip
    args = ["--optests-dbs=worker_killer_ops:ops", "--optests-modes=static", "-p", "no:cacheprovider"]
    result = run_inline(sweep, "-n", "2", "--optests-results=results.json", *args)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=15, xfailed=1)
    data = json.loads((sweep.path / "results.json").read_text())
    assert data["complete"] is True
    dead = next(r for r in data["samples"] if r["id"] == "static-float32-cpu-kills_worker-sample4")
    assert (dead["stage"], dead["verdict"]) == ("crash", "xfailed")


_PREPARED: list[int] = []


def _prepare() -> None:
    _PREPARED.append(__import__("os").getpid())


def test_a_forking_runner_prepares_once_in_its_own_process_and_every_child_inherits_it() -> None:
    import os

    from optests._runner import IsolatedRunner

    _PREPARED.clear()
    # every child has grown "too much", so each task gets a fresh one: none of them prepares again
    runner = IsolatedRunner(lambda task: (os.getpid(), list(_PREPARED)), max_growth=-1, prepare=_prepare)
    try:
        answers: list[Any] = [runner.run(i, timeout=30) for i in range(3)]
    finally:
        runner.close()
    assert len({pid for pid, _ in answers}) == 3
    assert _PREPARED == [os.getpid()]
    assert all(prepared == [os.getpid()] for _, prepared in answers)

    def broken() -> None:
        raise ImportError("no such module")

    runner = IsolatedRunner(lambda task: task, prepare=broken)
    with pytest.raises(RuntimeError, match=r"(?s)the sample runner failed:.*ImportError: no such module"):
        runner.run(0, timeout=30)  # as a child's failure is reported
    runner.close()


def test_the_runner_reads_its_childs_memory_as_it_grows() -> None:
    from optests._runner import IsolatedRunner

    if not Path("/proc/self/statm").exists():
        pytest.skip("no /proc here")
    grown: list[bytes] = []
    runner = IsolatedRunner(lambda size: grown.append(b"x" * size))
    try:
        runner.run(0, timeout=30)
        before = runner._private()
        runner.run(200 * 1024**2, timeout=30)
        after = runner._private()
    finally:
        runner.close()
    assert before > 0 and after - before > 150 * 1024**2
    assert runner._private() == 0  # no child: nothing to read


def test_samples_are_seeded_on_a_shallow_stack_however_deep_the_caller() -> None:
    """torch.manual_seed formats the caller's stack where CUDA is not initialized: seeded deep in
    pytest (a sweep's collection, its runner child), it cost about a millisecond each time."""
    import sys

    import torch

    from optests import _opinfo

    depths: list[int] = []
    seed = torch.manual_seed

    def counting(value: int) -> object:
        frame, depth = sys._getframe(), 0
        while frame is not None:
            frame, depth = frame.f_back, depth + 1  # type: ignore[assignment]
        depths.append(depth)
        return seed(value)

    def deep(n: int) -> list[_opinfo.SampleCall]:
        return deep(n - 1) if n else list(_opinfo.samples(_opinfo.select(_opinfo.all_ops(), ["sin"])[0], "cpu", torch.float32))

    torch.manual_seed = counting  # type: ignore[assignment]
    try:
        drawn = deep(300)
    finally:
        torch.manual_seed = seed
    assert depths and max(depths) < 50
    again = list(_opinfo.samples(_opinfo.select(_opinfo.all_ops(), ["sin"])[0], "cpu", torch.float32))
    assert all(torch.equal(a.args[0], b.args[0]) for a, b in zip(drawn, again, strict=True))  # the same values


def test_a_bug_in_optests_is_recorded_by_its_exception_shown_whole_and_the_run_goes_on(
    sweep: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception in the harness (not in the op) while checking one sample: the record says
    "optests internal error: " and the exception's line, even when its message ends in a newline;
    the test shows the child's whole traceback; the run goes on, and the next sample passes (that
    the runner replaces the child is the runner's own test)."""
    from optests import _execute

    real = _execute.execute

    def planted(case: Any) -> Any:
        if case.key.sample == 0:
            raise RuntimeError("planted harness bug: no such field\nsecond line\n")
        return real(case)

    monkeypatch.setattr(_execute, "execute", planted)  # the runner's forked children inherit it
    result = run_inline(
        sweep,
        "--optests-dbs=crashy_ops:ops",
        "--optests-ops=crashy_fine",
        "--optests-modes=static",
        "--optests-results=results.json",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*the sample runner failed:*", "*RuntimeError: planted harness bug: no such field*"])
    records = {r["id"]: r for r in _records(sweep.path / "results.json")}
    bug = records["static-float32-cpu-crashy_fine-sample0"]
    assert (bug["outcome"], bug["stage"]) == ("failed", None)
    assert bug["message"] == "optests internal error: RuntimeError: planted harness bug: no such field"
    assert records["static-float32-cpu-crashy_fine-sample1"]["outcome"] == "passed"
