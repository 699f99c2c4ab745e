"""User code runs as user code: a ``SystemExit``, a ``KeyboardInterrupt`` raised (not Ctrl-C) or
any other ``BaseException`` from a user's op, backend or sample generator is that code's failure
(a finding, a crash record, a one-line input error), never an internal error of optests, and
the rest of the run stands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from sweepdir import install_sweep
from user_backends import Odd

import optests
from optests import _author, cli
from optests._runner import Died, IsolatedRunner

RAISED = {"exits": "SystemExit: 3", "interrupts": "KeyboardInterrupt", "raises_odd": "Odd: odd"}


@pytest.mark.parametrize("backend", list(RAISED))
def test_optests_check_records_a_backend_s_exit_as_its_finding(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = f"user_backends:{backend}"
    argv = ["check", "sin", "--modes", "static", "--transforms", "none", "--backends", f"{spec},aot_eager", "--json", "r.json"]
    assert cli.main(argv) == 1
    out, err = capsys.readouterr()
    assert "internal error" not in out + err
    assert f"[trace] compiled call=raised {RAISED[backend]}, but expected no error (eager succeeded)" in out
    assert "2 checks: 1 passed, 1 failed, 1 not expected" in out
    records = json.loads((tmp_path / "r.json").read_text())["samples"]
    assert {(r.get("backend", "aot_eager"), r["outcome"], r["stage"]) for r in records} == {
        (spec, "failed", "trace"),
        ("aot_eager", "passed", None),
    }


def exits_eagerly(x: torch.Tensor) -> torch.Tensor:
    raise SystemExit(2)


def test_an_op_s_exit_is_its_eager_failure() -> None:
    (check,) = optests.check_op(exits_eagerly, samples=[((torch.ones(3),), {})], modes=["static"], transforms="none")
    assert (check.result.stage, check.result.message) == (
        "eager",
        "eager call=raised SystemExit: 2, but expected no error [exits_eagerly static float32 cpu sample 0]",
    )


def _ends(task: str) -> Any:
    """Work for a runner's child: end as ``task`` says, or say its pid."""
    if task == "exit":
        raise SystemExit(5)
    if task == "interrupt":
        raise KeyboardInterrupt
    if task == "odd":
        raise Odd("odd")
    return os.getpid()


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "interpreter"])
@pytest.mark.parametrize(
    ("task", "status", "last"), [("exit", 5, "SystemExit: 5"), ("interrupt", 130, "KeyboardInterrupt"), ("odd", 1, "Odd: odd")]
)
def test_what_escapes_the_work_in_the_child_is_a_crash_of_the_task(fork: bool, task: str, status: int, last: str) -> None:
    runner = IsolatedRunner(_ends, can_fork=lambda: fork)
    try:
        answer = runner.run(task, timeout=60)
        assert isinstance(answer, Died) and answer.kind == "crash", answer
        assert answer.message.startswith(f"the process running the sample exited with status {status}; its last output:")
        assert answer.message.rstrip().endswith(last)
        assert isinstance(runner.run("pid", timeout=60), int)  # and the next task gets a fresh child
    finally:
        runner.close()


def test_a_sample_generator_s_exit_is_an_input_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "exiting_samples.py").write_text(
        "class Odd(BaseException):\n    pass\n\n"
        "def exits():\n    raise SystemExit(4)\n\n"
        "def odd():\n    raise Odd('odd')\n\n"
        "def interrupts():\n    raise KeyboardInterrupt\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(_author.AuthorError) as info:
        _author.load_samples("exiting_samples:exits")
    assert str(info.value) == "--samples exiting_samples:exits: exits() raised SystemExit: 4"
    with pytest.raises(_author.AuthorError) as info:
        _author.load_samples("exiting_samples:odd")
    assert str(info.value) == "--samples exiting_samples:odd: odd() raised Odd: odd"
    with pytest.raises(KeyboardInterrupt):  # in the command's own process: Ctrl-C, as it reads
        _author.load_samples("exiting_samples:interrupts")


def test_the_sweep_records_a_backend_s_exit_as_its_finding(pytester: pytest.Pytester) -> None:
    install_sweep(pytester.path)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--optests-ops=sin", "--optests-modes=static", "--optests-results=r.json",
        "--optests-backends=user_backends:exits,aot_eager",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "internal error" not in result.stdout.str()
    records = json.loads((pytester.path / "r.json").read_text())["samples"]
    assert {(r.get("backend", "aot_eager"), r["outcome"], r["stage"]) for r in records} == {
        ("user_backends:exits", "failed", "trace"),
        ("aot_eager", "passed", None),
    }


_EXITING_OPS = """
import torch
from torch.testing._internal.common_dtype import _dispatch_dtypes
from torch.testing._internal.opinfo.core import OpInfo


def exits(op, device, dtype, requires_grad, **kwargs):
    raise SystemExit(3)


ops = [OpInfo("exiting", op=torch.sin, dtypes=_dispatch_dtypes((torch.float32,)), sample_inputs_func=exits)]
"""


def test_an_opinfo_whose_sample_generator_exits_is_a_broken_case_of_the_sweep(pytester: pytest.Pytester) -> None:
    install_sweep(pytester.path)
    pytester.makepyfile(exiting_ops=_EXITING_OPS)
    pytester.syspathinsert()
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--optests-dbs=exiting_ops:ops", "--optests-modes=static", "--optests-results=r.json"
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    (record,) = json.loads((pytester.path / "r.json").read_text())["samples"]
    assert (record["outcome"], record["stage"]) == ("failed", "eager")
    assert record["message"].startswith("sample_inputs raised SystemExit: 3"), record["message"]


_COMPILE_THEN_FORK = """
import torch
from optests._runner import IsolatedRunner, Died

def compile_and_call(n):
    import torch
    torch._dynamo.reset()
    return float(torch.compile(lambda x: x.cos() * n, backend="inductor")(torch.ones(3)).sum())

torch.compile(lambda x: x.sin() + 1, backend="inductor")(torch.randn(3))  # compiles C++ in inductor's pool
runner = IsolatedRunner(compile_and_call, can_fork=lambda: True)
try:
    answer = runner.run(2, 120)
finally:
    runner.close()
expected = float((torch.ones(3).cos() * 2).sum())
print("timed out" if isinstance(answer, Died) else "as eager" if abs(answer - expected) < 1e-5 else answer)
"""


@pytest.mark.slow
def test_a_child_forked_after_an_inductor_compile_compiles_too(tmp_path: Path) -> None:
    """inductor compiles C++ in a thread pool that a forked child inherits without its threads;
    the child drops it (``_runner._forget_pools``), or its first compile waits forever."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}  # empty: the parent compiles C++
    ran = subprocess.run([sys.executable, "-c", _COMPILE_THEN_FORK], env=env, capture_output=True, text=True, timeout=600)
    assert ran.stdout.strip().splitlines()[-1:] == ["as eager"], ran.stdout + ran.stderr
