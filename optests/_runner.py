"""Run tasks in a long-lived forked child, so a sample that crashes or hangs costs one sample.

The child is forked from the (warm) pytest process on first use and serves tasks one at a time
over a pipe. A crash (the child dies) or a hang (no answer before the deadline; the child is
killed) is reported for that task, and the next task gets a fresh child; so does the task after
one whose work raised (:class:`WorkFailed`), since what raised may have left the child unfit (a
sticky CUDA error fails every later CUDA call in that process). This works the same
with and without pytest-xdist, needs no worker-restart budget, and stops hangs in C code too.
The child leads a process group of its own, which is killed with it: what a check forks does not
outlive it, and the child's end is watched (a pidfd) besides its pipe, which a process it forked
may hold open.
Forking per task would cost about 50 ms a sample (measured); a long-lived child costs a pipe
round trip.

A process that has initialized CUDA cannot fork a child that uses it (collecting a ``cuda``
sweep initializes it), so there the child is a fresh interpreter instead, started once and then
long-lived the same way; it imports what it needs itself. POSIX only: without ``os.fork`` tasks
run in-process, unprotected.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import _findings
from ._findings import Stage, error_line
from .errors import WorkFailed as WorkFailed

_HEADER = struct.Struct("!Q")
_STDERR_TAIL = 2000
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class Died:
    """The task did not return: ``kind`` is ``crash`` or ``timeout``."""

    kind: str
    message: str

    @property
    def stage(self) -> Stage:
        return Stage.CRASH if self.kind == "crash" else Stage.TIMEOUT


#: A child whose private memory (resident, less file-backed pages) has grown by more than this
#: since it started is replaced after its task. Checks leave state behind (compiled graphs in
#: reference cycles, AOTAutograd caches): measured in a full sweep, a child grew by about 200 MB
#: a minute, which would exhaust a 24 GB machine within the hour. Growth, not size: a forked
#: child starts as large as its parent (the pages it shares count in its resident memory), and a
#: parent that has collected a pattern sweep holds over 2 GB: a limit on size would replace the
#: child after every task, a fork a sample.
MAX_CHILD_GROWTH = 1536 * 1024**2
#: How long a fresh interpreter may take to start and prepare, before its first task's clock.
START_TIMEOUT = 300.0


@dataclass(frozen=True)
class _Unfit:
    """An answer from a child that may not take another task (``fit`` said no)."""

    value: Any


def _failure() -> tuple[str, str]:
    """The exception being handled: its traceback, and its first line (:func:`error_line`). The
    traceback's last line is not that line for a message of several lines (a CUDA error's ends
    with advice and a newline)."""
    error = sys.exc_info()[1]
    assert error is not None
    return traceback.format_exc(), error_line(error)


class IsolatedRunner:
    def __init__(
        self,
        work: Callable[[Any], Any],
        max_growth: int = MAX_CHILD_GROWTH,
        can_fork: Callable[[], bool] | None = None,
        prepare: Callable[[], None] | None = None,
        fit: Callable[[], bool] | None = None,
    ) -> None:
        """``can_fork`` (default :func:`fork_is_safe`) is asked before each child starts.
        ``prepare`` is what a child needs before its first task (imports): it runs once in this
        process before the first fork, so that every forked child, a replaced one too, inherits it
        rather than paying for it on its first task. Where ``can_fork`` says no, the child is a
        fresh interpreter: ``work``, ``prepare`` and the tasks must pickle, and ``prepare`` runs
        there before the first task, so that a task's timeout does not count the child's start.
        ``fit``, asked in the child after each task, says whether the child may take another (a
        task left state behind that cannot be undone): one that may not is replaced."""
        self._work = work
        self._fit = fit
        self._max_growth = max_growth
        self._start_private = 0  # the child's private memory (:meth:`_private`) when it started
        self._can_fork = can_fork or fork_is_safe
        self._prepare = prepare
        self._prepared = False  # prepare has run in this process
        self._pid: int | None = None
        self._tasks_w = self._results_r = -1
        self._stderr: Any = None
        self._statm = -1  # the child's /proc/PID/statm, open while it lives
        self._pidfd = -1  # readable once the child has ended (Linux); -1 where not available

    @staticmethod
    def available() -> bool:
        return hasattr(os, "fork")

    def run(self, task: Any, timeout: float, *, fresh: bool = False) -> Any | Died:
        """The work's return value for ``task``, or :class:`Died`. An exception the work raises
        comes back as :class:`WorkFailed`, and the child that raised is replaced. ``fresh``: in a
        child that has run no task before (the one serving is replaced first; a forked one
        inherits what ``prepare`` did), so that nothing an earlier task left in the process can
        decide the answer; the new child serves the tasks after it."""
        if not self.available():
            return self._work(task)
        if fresh:
            self.close()
        if self._pid is not None and self._ended():  # the child died between tasks
            self._kill()
        if self._pid is None and (died := self._start()) is not None:
            return died
        try:
            _send(self._tasks_w, pickle.dumps(task))
        except BrokenPipeError:  # the child died between tasks: start another, once
            self._kill()
            if (died := self._start()) is not None:
                return died
            _send(self._tasks_w, pickle.dumps(task))
        try:
            answer = self._answer(timeout, f"no result after {timeout:g} s; the process running the sample was killed")
        except WorkFailed:
            raise
        except BaseException:  # interrupted (Ctrl-C) while the child works: it goes too
            self._kill()
            raise
        if isinstance(answer, _Unfit):
            self.close()  # the next task gets a fresh child
            return answer.value
        if not isinstance(answer, Died) and self._private() - self._start_private > self._max_growth:
            self.close()  # the next task gets a fresh child
        return answer

    def _answer(self, timeout: float, timeout_message: str) -> Any | Died:
        try:
            status, value = pickle.loads(_recv(self._results_r, time.monotonic() + timeout, self._pidfd))
        except TimeoutError:
            self._kill()
            return Died("timeout", timeout_message)
        except EOFError:
            return Died("crash", self._describe_death())
        if status == "error":
            self._kill()  # unfit for the next task, maybe; and one in a bad state may not exit
            raise WorkFailed(*value)
        return _Unfit(value) if status == "unfit" else value

    def _private(self) -> int:
        """The child's resident memory less its file-backed pages, in bytes (0 where /proc is not
        available): the memory a check can leave behind. Pages of shared libraries, which the child
        maps again as it runs, cost nothing and are not counted. Asked after every task: the file
        stays open, and each read at offset 0 gives its current value."""
        try:
            if self._statm < 0:
                self._statm = os.open(f"/proc/{self._pid}/statm", os.O_RDONLY | os.O_CLOEXEC)
            fields = os.pread(self._statm, 200, 0).split()
            return (int(fields[1]) - int(fields[2])) * _PAGE_SIZE
        except (OSError, ValueError, IndexError):
            return 0

    def close(self) -> None:
        if self._pid is not None:
            os.close(self._tasks_w)  # the child sees EOF and exits
            self._tasks_w = -1
            self._reap(wait=True)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    # -- parent side ------------------------------------------------------------------------------

    def _start(self) -> Died | None:
        """Start a child; :class:`Died` if a fresh interpreter did not get ready."""
        if self._can_fork():
            if self._prepare is not None and not self._prepared:
                try:
                    self._prepare()
                except Exception:  # as the work's own failures: a bug to show, with its traceback
                    raise WorkFailed(*_failure()) from None
                self._prepared = True
            self._fork()
            self._start_private = self._private()  # the fork has mapped the parent's anonymous memory
            return None
        self._start_interpreter()
        ready = self._answer(START_TIMEOUT, f"the sample runner's interpreter did not start within {START_TIMEOUT:g} s")
        self._start_private = self._private()  # its imports done
        return ready if isinstance(ready, Died) else None

    def _open_channels(self) -> tuple[int, int, int, int]:
        """Pipes for tasks and results, and a fresh file for the next child's stderr."""
        tasks_r, tasks_w = os.pipe()
        results_r, results_w = os.pipe()
        if self._stderr is not None:
            self._stderr.close()
        self._stderr = tempfile.TemporaryFile()
        return tasks_r, tasks_w, results_r, results_w

    def _start_interpreter(self) -> None:
        tasks_r, tasks_w, results_r, results_w = self._open_channels()
        pid = _spawn_interpreter(tasks_r, results_w, self._stderr.fileno())
        os.close(tasks_r)
        os.close(results_w)
        self._started(pid, tasks_w, results_r)
        # The child's first message: where to import from, then what to run (it answers "ready").
        _send(tasks_w, pickle.dumps((sys.path, pickle.dumps((self._work, self._prepare, self._fit)))))

    def _fork(self) -> None:
        tasks_r, tasks_w, results_r, results_w = self._open_channels()
        parent = os.getpid()
        with warnings.catch_warnings():
            # Python 3.12+ warns on fork in a multi-threaded process (xdist's IO thread); the
            # child only uses its own pipes, and drops the thread pool torch keeps (_forget_pools).
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            try:
                with contextlib.suppress(OSError):  # a group of its own: what it forks dies with it
                    os.setpgid(0, 0)
                _die_with(parent)
                _forget_pools()
                os.close(tasks_w)
                os.close(results_r)
                _serve(self._work, tasks_r, results_w, self._stderr.fileno(), self._fit)
            finally:
                os._exit(0)
        os.close(tasks_r)
        os.close(results_w)
        with contextlib.suppress(OSError):  # as the child does: whichever runs first (it may have exited)
            os.setpgid(pid, pid)
        self._started(pid, tasks_w, results_r)

    def _started(self, pid: int, tasks_w: int, results_r: int) -> None:
        self._pid, self._tasks_w, self._results_r = pid, tasks_w, results_r
        try:
            self._pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):  # not Linux 5.3+: a death shows as the pipe's end only
            self._pidfd = -1

    def _ended(self) -> bool:
        """Whether the child has ended (False where that cannot be told without waiting)."""
        return self._pidfd >= 0 and bool(select.select([self._pidfd], [], [], 0)[0])

    def _kill(self) -> None:
        if self._pid is not None:
            self._reap(wait=False)

    def _reap(self, wait: bool = True) -> int:
        """Kill the child's process group (``wait``: once the child has ended by itself), so that
        nothing it forked outlives it; wait for it, close our ends of its pipes; its exit status."""
        assert self._pid is not None
        if wait and hasattr(os, "waitid"):  # without reaping it: its group's id stays its own
            with contextlib.suppress(ChildProcessError):
                os.waitid(os.P_PID, self._pid, os.WEXITED | os.WNOWAIT)
        for kill in (os.killpg, os.kill):  # the group; the child itself, if it has none (yet)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                kill(self._pid, signal.SIGKILL)
        _, status = os.waitpid(self._pid, 0)
        for fd in (self._tasks_w, self._results_r, self._statm, self._pidfd):
            if fd >= 0:
                os.close(fd)
        self._pid, self._tasks_w, self._results_r, self._statm, self._pidfd = None, -1, -1, -1, -1
        return status

    def _describe_death(self) -> str:
        status = self._reap()
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            what = f"the process running the sample died with signal {signal.Signals(sig).name}"
        else:
            what = f"the process running the sample exited with status {os.WEXITSTATUS(status)}"
        self._stderr.seek(0)
        tail = self._stderr.read().decode(errors="replace").strip()[-_STDERR_TAIL:]
        return what + (f"; its last output:\n{tail}" if tail else "")


def _forget_pools() -> None:
    """In a forked child: drop inductor's compile thread pool (``AsyncCompile.pool``), whose
    threads stayed in the parent. torch's own at-fork handler resets its process pool but not this
    one, which inductor compiles C++ in once the parent has compiled any: the child's first
    compile would wait for it forever (``findings/inductor_fork_after_compile_hangs.py``)."""
    compiling = sys.modules.get("torch._inductor.async_compile")
    pool = getattr(getattr(compiling, "AsyncCompile", None), "pool", None)
    if callable(getattr(pool, "cache_clear", None)):
        pool.cache_clear()  # type: ignore[union-attr]


def fork_is_safe() -> bool:
    """Whether a forked child of this process can do what the parent can: not once the parent
    has initialized CUDA (the child would fail with "Cannot re-initialize CUDA in forked
    subprocess")."""
    torch = sys.modules.get("torch")
    return torch is None or not torch.cuda.is_initialized()


def _spawn_interpreter(tasks_r: int, results_w: int, stderr_fd: int) -> int:
    """Start ``python -m optests._runner`` serving on the given pipe ends; its pid."""
    for fd in (tasks_r, results_w):
        os.set_inheritable(fd, True)
    try:
        return os.posix_spawn(
            sys.executable,
            [sys.executable, "-m", __name__, str(tasks_r), str(results_w), str(os.getpid())],
            os.environ,
            setpgroup=0,  # a group of its own, as a forked child's
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, stderr_fd, 2),
            ],
        )
    finally:
        for fd in (tasks_r, results_w):
            os.set_inheritable(fd, False)


# -- child side -----------------------------------------------------------------------------------


def _main() -> None:  # pragma: no cover - runs in a child started by _spawn_interpreter
    tasks_r, results_w = int(sys.argv[1]), int(sys.argv[2])
    _die_with(int(sys.argv[3]))
    try:
        path, pickled = pickle.loads(_recv(tasks_r, None))
    except EOFError:
        return
    sys.path[:] = path  # the parent's: the work and the tasks may live in modules found through it
    ready: tuple[str, tuple[str, str] | None] = ("ok", None)
    try:
        work, prepare, fit = pickle.loads(pickled)
        if prepare is not None:
            prepare()
    except BaseException:
        ready = ("error", _failure())
    _send(results_w, pickle.dumps(ready))
    if ready[0] == "ok":
        _serve(work, tasks_r, results_w, 2, fit)


def _die_with(parent: int) -> None:  # pragma: no cover - runs in the child
    """Have the kernel kill this process when ``parent`` (its parent) dies (Linux's
    ``PR_SET_PDEATHSIG``): in a process group of its own, it does not get what is sent to its
    parent's group (a CI job's end), and a child hung in a check would outlive the run."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux
        return
    if os.getppid() != parent:  # it died before the call
        os._exit(1)


#: Whether this process is a runner's child, serving tasks.
_SERVING = [False]


def serving() -> bool:
    """Whether this process is a runner's child: between its tasks, only the runner's loop runs."""
    return _SERVING[0]


def _serve(  # pragma: no cover
    work: Callable[[Any], Any], tasks_r: int, results_w: int, stderr_fd: int, fit: Callable[[], bool] | None = None
) -> None:
    """Run tasks until the parent closes the pipe. An exception of the work is an error of
    optests (:class:`WorkFailed`); a ``BaseException`` that is not one (``SystemExit``, a
    ``KeyboardInterrupt`` raised, not Ctrl-C: that reaches only the parent's process group) came
    from user code the work ran, and ends this process as it would any: a ``crash`` of the task."""
    _findings.interrupts_are_raised = True
    _SERVING[0] = True
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(stderr_fd, 2)
    while True:
        try:
            task = pickle.loads(_recv(tasks_r, None))
        except EOFError:
            return
        os.ftruncate(2, 0)
        os.lseek(2, 0, os.SEEK_SET)
        try:
            value = work(task)
            payload = pickle.dumps(("ok" if fit is None or fit() else "unfit", value))
        except Exception:  # the work raised, or its answer does not pickle
            payload = pickle.dumps(("error", _failure()))
        except BaseException as e:  # user code's: the process ends, with its traceback as last output
            with contextlib.suppress(OSError):
                os.write(2, traceback.format_exc().encode(errors="replace"))  # fd 2: the parent reads it
            os._exit(_exit_status(e))
        _send(results_w, payload)


def _exit_status(e: BaseException) -> int:
    """The status a process ends with on ``e``, as Python's own: ``SystemExit``'s code (1 for
    one that is not a number), 130 for a ``KeyboardInterrupt`` (as a shell says Ctrl-C), else 1."""
    if isinstance(e, SystemExit):
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 130 if isinstance(e, KeyboardInterrupt) else 1


def _send(fd: int, payload: bytes) -> None:
    data = _HEADER.pack(len(payload)) + payload
    while data:
        data = data[os.write(fd, data) :]


def _recv(fd: int, deadline: float | None, pidfd: int = -1) -> bytes:
    """One message from ``fd``. ``pidfd`` (the writer's, where known): once the writer has ended,
    what it did not write is never coming, even while a process it forked holds the pipe open."""
    header = _read_exactly(fd, _HEADER.size, deadline, pidfd)
    (size,) = _HEADER.unpack(header)
    return _read_exactly(fd, size, deadline, pidfd)


def _read_exactly(fd: int, size: int, deadline: float | None, pidfd: int = -1) -> bytes:
    chunks = []
    while size:
        if deadline is not None or pidfd >= 0:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise TimeoutError
            ready = select.select([fd] if pidfd < 0 else [fd, pidfd], [], [], remaining)[0]
            if not ready:
                raise TimeoutError
            if fd not in ready and not select.select([fd], [], [], 0)[0]:  # the writer ended, nothing left
                raise EOFError
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


if __name__ == "__main__":  # pragma: no cover
    _main()
