"""The runner's child runs in a process group of its own: a check that forks takes what it forked
with it when it crashes, times out or ends, and a crash is seen when the child dies, not when the
last process holding its pipe does."""

from __future__ import annotations

import faulthandler
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from optests._runner import Died, IsolatedRunner


def _fork_then(task: tuple[str, str]) -> int:
    """Work for a runner's child: fork a grandchild that sleeps (holding the child's pipes) and
    writes its pid to the file ``task`` names; then ``abort``, ``hang`` or ``return``."""
    then, pid_file = task
    grandchild = os.fork()
    if grandchild == 0:  # pragma: no cover - the grandchild
        try:
            Path(pid_file).write_text(str(os.getpid()))
            time.sleep(120)
        finally:
            os._exit(0)
    while not Path(pid_file).exists() or not Path(pid_file).read_text():
        time.sleep(0.01)
    if then == "abort":
        faulthandler.disable()  # pytest's, writing to the terminal
        os.abort()
    if then == "hang":
        time.sleep(120)
    return grandchild


def _gone(pid: int, within: float = 10.0) -> bool:
    """Whether process ``pid`` has ended (or is a zombie) within ``within`` seconds."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def grandchildren() -> Iterator[list[int]]:
    """Pids to kill after the test, whatever it found."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _grandchild(pid_file: Path, pids: list[int]) -> int:
    pid = int(pid_file.read_text())
    pids.append(pid)
    return pid


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "interpreter"])
def test_a_child_that_forks_and_crashes_is_a_crash_at_once_and_takes_its_fork(
    fork: bool, tmp_path: Path, grandchildren: list[int]
) -> None:
    runner = IsolatedRunner(_fork_then, can_fork=lambda: fork)
    try:
        start = time.monotonic()
        answer = runner.run(("abort", str(tmp_path / "pid")), timeout=60)
        took = time.monotonic() - start
        assert isinstance(answer, Died) and answer.kind == "crash", answer
        assert "SIGABRT" in answer.message
        assert took < 30, f"a crash seen after {took:.0f} s: the parent waited on the grandchild's pipe"
        assert _gone(_grandchild(tmp_path / "pid", grandchildren)), "the crashed check's fork outlived it"
        assert runner.run(("return", str(tmp_path / "next")), timeout=60) == _grandchild(tmp_path / "next", grandchildren)
    finally:
        runner.close()


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "interpreter"])
def test_a_child_that_forks_and_hangs_is_a_timeout_and_takes_its_fork(
    fork: bool, tmp_path: Path, grandchildren: list[int]
) -> None:
    runner = IsolatedRunner(_fork_then, can_fork=lambda: fork)
    try:
        answer = runner.run(("hang", str(tmp_path / "pid")), timeout=3)
        assert isinstance(answer, Died) and answer.kind == "timeout", answer
        assert _gone(_grandchild(tmp_path / "pid", grandchildren)), "the killed check's fork outlived it"
    finally:
        runner.close()


def test_what_a_check_forked_does_not_outlive_the_runner(tmp_path: Path, grandchildren: list[int]) -> None:
    runner = IsolatedRunner(_fork_then)
    try:
        pid = runner.run(("return", str(tmp_path / "pid")), timeout=60)
        assert pid == _grandchild(tmp_path / "pid", grandchildren) and not _gone(pid, within=0.5)
    finally:
        runner.close()
    assert _gone(pid), "a check's fork outlived the run"


def test_the_child_is_the_leader_of_its_own_process_group() -> None:
    """Ctrl-C at the terminal reaches the parent, which kills the child: not the child mid-check
    (whose KeyboardInterrupt would read as the check's own)."""
    runner = IsolatedRunner(lambda task: (os.getpid(), os.getpgrp()))
    try:
        answer = runner.run(None, timeout=60)
    finally:
        runner.close()
    assert isinstance(answer, tuple), answer
    pid, group = answer
    assert group == pid != os.getpgrp()


_ORPHANED = """
import os, sys, time
from optests._runner import IsolatedRunner

def pid(task):
    if task == "hang":
        time.sleep(120)
    return os.getpid()

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    import orphaned  # the work, by a name a fresh interpreter can import
    runner = IsolatedRunner(orphaned.pid, can_fork=lambda: sys.argv[1] == "fork")
    print(runner.run(None, timeout=60), flush=True)
    runner.run("hang", timeout=300)
"""


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "interpreter"])
def test_the_child_does_not_outlive_its_parent(fork: bool, tmp_path: Path, grandchildren: list[int]) -> None:
    """In a process group of its own, the child is not killed with its parent's group: it is
    killed when its parent dies, however that dies, even while it works (it would otherwise only
    end when it next reads the pipe)."""
    import subprocess
    import sys

    script = tmp_path / "orphaned.py"
    script.write_text(_ORPHANED)
    parent = subprocess.Popen([sys.executable, str(script), "fork" if fork else "spawn"], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        grandchildren.append(child)
        assert not _gone(child, within=1.0)  # and working on "hang" by now
    finally:
        parent.kill()
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
    assert _gone(child), "the runner's child outlived its parent"


def _hang(pid_file: str) -> int:
    """Work for a runner's child: write its pid to ``pid_file``, then hang."""
    Path(pid_file).write_text(str(os.getpid()))
    time.sleep(120)
    return os.getpid()


def test_an_interrupted_run_kills_the_child_it_was_waiting_for(tmp_path: Path, grandchildren: list[int]) -> None:
    """Ctrl-C reaches the parent only (the child's group is its own): the parent kills the child
    that works for it, so that neither a hung check nor closing the runner outlives it."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    runner = IsolatedRunner(_hang)
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 2.0)
        with pytest.raises(KeyboardInterrupt):
            runner.run(str(tmp_path / "pid"), timeout=60)
        assert _gone(_grandchild(tmp_path / "pid", grandchildren)), "the interrupted check's child lives on"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        runner.close()
