"""Every check starts from the same process state: what a check leaves behind (grad mode off, a
default dtype, Dynamo's config...) is set back, or the runner's child that holds it is replaced."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch.overrides import TorchFunctionMode

import optests
from optests import _author, _runner, _state

_HELD: list[object] = []


def _dynamo_config() -> None:
    torch._dynamo.config.cache_size_limit = 1


#: Each leak a check can plant, by name.
LEAKS: dict[str, Callable[[], object]] = {
    "grad mode": lambda: torch.set_grad_enabled(False),
    "inference mode": lambda: _HELD.append(torch._C._InferenceMode(True)),
    "default dtype": lambda: torch.set_default_dtype(torch.float64),
    "default device": lambda: torch.set_default_device("meta"),
    "deterministic algorithms": lambda: torch.use_deterministic_algorithms(True, warn_only=True),
    "cudnn deterministic": lambda: torch._C._set_cudnn_deterministic(True),
    "mkldnn": lambda: torch._C._set_mkldnn_enabled(False),
    "anomaly mode": lambda: torch.set_anomaly_enabled(True),
    "autocast": lambda: torch.set_autocast_enabled("cpu", True),
    "autocast dtype": lambda: torch.set_autocast_dtype("cpu", torch.float16),
    "float32 matmul precision": lambda: torch.set_float32_matmul_precision("medium"),
    "thread count": lambda: torch.set_num_threads(3),
    "dynamo config": _dynamo_config,
    "torch function mode": lambda: TorchFunctionMode().__enter__(),  # type: ignore[no-untyped-call]
    "saved tensors hooks": lambda: _HELD.append(_entered(torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t))),
    "fill of uninitialized memory": lambda: torch._C._set_deterministic_fill_uninitialized_memory(False),
}


#: The leaks that cannot be set back from outside: the child holding them is replaced.
_UNDONE_BY_A_NEW_CHILD = ("inference mode", "torch function mode", "saved tensors hooks")


def _entered(context: Any) -> Any:
    context.__enter__()
    return context


def _work(task: str) -> tuple[int, dict[str, str]]:
    """A runner's work: plant the leak ``task`` names, or (``probe``) say how the process is."""
    if task != "probe":
        LEAKS[task]()
        return os.getpid(), {}
    return os.getpid(), {name: repr(value) for name, value in _state.capture().items()}


def _answer(answer: object) -> tuple[int, dict[str, str]]:
    assert isinstance(answer, tuple), answer
    return answer


@pytest.mark.parametrize("leak", list(LEAKS))
def test_a_check_that_leaves_state_behind_does_not_change_the_next(leak: str) -> None:
    runner = _runner.IsolatedRunner(_author._one_thread(_work), fit=_state.fit)  # as optests check runs checks
    try:
        pid, before = _answer(runner.run("probe", timeout=60))
        runner.run(leak, timeout=60)
        after_pid, after = _answer(runner.run("probe", timeout=60))
    finally:
        runner.close()
    assert after == before
    assert (after_pid == pid) is (leak not in _UNDONE_BY_A_NEW_CHILD), "a child is replaced only for what cannot be set back"


def test_restore_names_what_it_cannot_set_back() -> None:
    before = _state.capture()
    guard = torch._C._InferenceMode(True)
    torch.set_grad_enabled(False)
    try:
        assert "inference mode" in _state.restore(before)
    finally:
        del guard
    assert _state.restore(before) == [] and torch.is_grad_enabled()


@pytest.mark.parametrize("isolated", [True, False], ids=["isolated", "in-process"])
def test_a_backend_that_leaves_grad_mode_off_fails_no_other_check(isolated: bool) -> None:
    target = _author.resolve(["cos"])[0]
    checks = _author.check_target(
        target,
        None,
        modes=["static"],
        transforms="none",
        backends=["user_backends:leaves_grad_off", "aot_eager"],
        isolated=isolated,
    )
    by_backend: dict[str, set[str]] = {}
    for c in checks:
        by_backend.setdefault(c.key.backend, set()).add(c.result.outcome.value)
    assert by_backend == {"user_backends:leaves_grad_off": {"failed"}, "aot_eager": {"passed"}}
    assert torch.is_grad_enabled()


def test_check_op_leaves_the_callers_state_as_it_was() -> None:
    checks = optests.check_op("sin", modes=["static"], transforms="none", backends=["user_backends:leaves_grad_off"])
    assert checks and torch.is_grad_enabled()


def test_in_a_sweep_a_backend_that_leaves_grad_mode_off_fails_no_other_check(pytester: pytest.Pytester) -> None:
    from sweepdir import install_sweep

    install_sweep(pytester.path)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--optests-ops=cos,atan2", "--optests-modes=static", "--optests-results=r.json",
        "--optests-backends=user_backends:leaves_grad_off,aot_eager",
    )  # fmt: skip
    records = json.loads((pytester.path / "r.json").read_text())["samples"]
    outcomes: dict[str, set[str]] = {}
    for r in records:
        outcomes.setdefault(r.get("backend", "aot_eager"), set()).add(r["outcome"])
    assert outcomes == {"user_backends:leaves_grad_off": {"failed"}, "aot_eager": {"passed"}}, result.stdout.str()


def test_a_default_device_is_set_back_in_process_with_no_mode_left_behind() -> None:
    """Setting a default device pushes a torch function mode: where none was set, the state is set
    back by unsetting it, so a process that checks in-process keeps no mode."""
    with _state.kept():
        torch.set_default_device("meta")
    assert (_state.leaks(), torch._C._len_torch_function_stack(), torch.empty(1).device.type) == ([], 0, "cpu")


def test_a_block_after_another_in_a_runner_child_starts_from_the_state_the_last_set_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    captures: list[int] = []
    real = _state.capture

    def counted() -> dict[str, Any]:
        captures.append(1)
        return real()

    monkeypatch.setattr(_state, "capture", counted)
    with _state.kept():
        torch.set_default_dtype(torch.float64)
    assert torch.get_default_dtype() is torch.float32 and len(captures) == 3  # before, after, after setting back
    with _state.kept(since_last=True):
        torch.set_default_dtype(torch.float64)
    assert torch.get_default_dtype() is torch.float32  # set back, from the state the last block set back
    assert len(captures) == 3 + 2  # not captured again before the block
    with _state.kept():
        pass
    assert len(captures) == 5 + 2  # without since_last: captured before


def test_a_runner_child_knows_it_serves_tasks() -> None:
    assert not _runner.serving()
    runner = _runner.IsolatedRunner(_serving)
    try:
        assert runner.run(None, 60) is True
    finally:
        runner.close()


def _serving(_: object) -> bool:
    return _runner.serving()
