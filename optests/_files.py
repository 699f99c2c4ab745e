"""Writing files safely: atomically, through symlinks, never over a read-only file, one writer
at a time, and checked before the work whose output they hold. Torch-free."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import gzip
import json
import os
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ._errors import InputError


class WriteError(InputError, OSError):
    """An output file that cannot be written; the message names it and says why, in one line."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def _target(path: Path) -> Path:
    """Where writing ``path`` lands: a symlink's target (so a linked registry is updated, not
    replaced by a regular file)."""
    return Path(os.path.realpath(path))


def _refuse_read_only(path: Path, shown: Path) -> None:
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as e:  # e.g. a parent that is a regular file
        raise WriteError(shown, f"cannot be written: {e.strerror or e}") from None
    if stat.S_ISDIR(mode):
        raise WriteError(shown, "is a directory, not a file")
    if not mode & stat.S_IWUSR:  # by the mode bits: root may write anything, but should not here
        raise WriteError(shown, f"is read-only (mode {stat.S_IMODE(mode):o}); make it writable or write elsewhere")


def check_writable(path: Path) -> None:
    """Raise :class:`WriteError` unless ``path`` can be written by :func:`write_json_atomic`:
    checked before a run, so that its results are not lost at the end."""
    target = _target(path)
    _refuse_read_only(target, path)
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", dir=parent)
    except OSError as e:
        raise WriteError(path, f"cannot be written: {e.strerror or e}") from None
    os.close(fd)
    os.unlink(probe)


def write_json_atomic(path: Path, data: Any) -> None:
    """Sorted keys, indent 2, trailing newline, no NaN or Infinity; written to a temp file and
    renamed into place, so a crash mid-write leaves the old file intact. A symlink is followed
    (its target is replaced); a read-only file is refused. The file keeps the mode of the one it
    replaces, or gets the one ``open`` would give (a temp file's own is owner-only). A path
    ending in ``.gz`` is gzip-compressed, with no timestamp: the same data, the same bytes."""
    text = json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"
    content = gzip.compress(text.encode(), mtime=0) if path.name.endswith(".gz") else text.encode()
    target = _target(path)
    _refuse_read_only(target, path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as e:
        raise WriteError(path, f"cannot be written: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


class Busy(WriteError):
    """Another optests held the file's lock for longer than the caller would wait."""


@contextlib.contextmanager
def locked(path: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold an exclusive lock for writing ``path`` (``flock`` on ``PATH.lock`` beside its target),
    so that concurrent read-modify-write cycles (two accepts into one registry, two history
    ingests) follow one another instead of losing an update. Waits for the lock, at most
    ``timeout`` seconds (then :class:`Busy`); on a file system without ``flock``, goes on unlocked."""
    target = _target(path)
    lock = target.with_name(target.name + ".lock")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError as e:
        raise WriteError(path, f"cannot take its lock {lock.name}: {e.strerror or e}") from None
    try:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if deadline is None else fcntl.LOCK_NB))
                break
            except OSError as e:
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    break  # no flock here: nothing to wait for
                if deadline is not None and time.monotonic() > deadline:
                    raise Busy(path, "is busy (another optests is writing it); try again") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # releases the lock
