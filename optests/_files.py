"""Writing files safely: atomically, through symlinks, never over a read-only file, one writer
at a time, and checked before the work whose output they hold. Torch-free."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import gzip
import io
import json
import os
import re
import signal
import stat
import tempfile
import threading
import time
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .errors import Busy as Busy
from .errors import ReadError as ReadError
from .errors import WriteError as WriteError
from .errors import _FileError as _FileError

#: The most bytes an input file read whole may hold, and a gzip-compressed one expand to: 1 GiB.
INPUT_LIMIT = 1 << 30

#: What a file that is not regular is, by its ``st_mode``.
_NOT_REGULAR = (
    (stat.S_ISDIR, "is a directory, not a file"),
    (stat.S_ISFIFO, "is a FIFO (named pipe), not a regular file"),
    (stat.S_ISCHR, "is a character device, not a regular file"),
    (stat.S_ISBLK, "is a block device, not a regular file"),
    (stat.S_ISSOCK, "is a socket, not a regular file"),
)


def _irregular(mode: int) -> str | None:
    """What a file of ``mode`` is, where it is not a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((w for test, w in _NOT_REGULAR if test(mode)), "is not a regular file")


def _refuse_irregular(path: Path, mode: int) -> None:
    if (words := _irregular(mode)) is not None:
        raise ReadError(path, words)


def open_input(path: Path) -> io.BufferedReader:
    """``path`` opened for reading, binary: every file optests reads (results, journals, ids
    files, the registry, durations files, the history database) is opened here. It must be a
    regular file (a symlink's target): a FIFO, a device, a socket or a directory is a
    :class:`ReadError`, found by ``stat`` before opening and by ``fstat`` after (opened
    non-blocking, so that a FIFO made in between does not hang). Other errors are the
    ``OSError`` of ``stat`` or ``open`` (``FileNotFoundError``, ``PermissionError``)."""
    _refuse_irregular(path, os.stat(path).st_mode)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        _refuse_irregular(path, os.fstat(fd).st_mode)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def too_large(path: Path, limit: int = INPUT_LIMIT, what: str = "holds") -> ReadError:
    """The error for an input of more than ``limit`` bytes."""
    return ReadError(path, f"{what} more than {limit:,} bytes, the most optests reads from one input file")


def read_input(path: Path, limit: int | None = None) -> bytes:
    """The bytes of the input file at ``path`` (see :func:`open_input`), at most ``limit``
    (default :data:`INPUT_LIMIT`); a larger file is a :class:`ReadError`, found without
    reading more than one byte past the limit."""
    limit = INPUT_LIMIT if limit is None else limit
    with open_input(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise too_large(path, limit)
        pieces = [f.read(size + 1)]  # a buffer of the file's size, not of the limit's
        total = len(pieces[0])
        # a file that grew since fstat, or that reports no size (procfs), is read on, in pieces
        while total > size and total <= limit and (piece := f.read(_BATCH)):
            pieces.append(piece)
            total += len(piece)
    if total > limit:
        raise too_large(path, limit)
    return b"".join(pieces)


def gunzip(path: Path, content: bytes, limit: int | None = None) -> bytes:
    """``content`` (the bytes of ``path``) gzip-decompressed, at most ``limit`` bytes of it
    (default :data:`INPUT_LIMIT`): a :class:`ReadError` for more, found without expanding
    more than one byte past the limit."""
    limit = INPUT_LIMIT if limit is None else limit
    pieces, size = [], 0
    with gzip.GzipFile(filename="", mode="rb", fileobj=io.BytesIO(content)) as f:
        while piece := f.read(_BATCH):  # a piece at a time: read(limit) would allocate the limit
            pieces.append(piece)
            size += len(piece)
            if size > limit:
                raise too_large(path, limit, "expands to")
    return b"".join(pieces)


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


def reason(e: OSError) -> str:
    """The words of an OS error and its errno's name, for a one-line message:
    ``No space left on device (ENOSPC)``."""
    name = errno.errorcode.get(e.errno) if e.errno is not None else None
    words = e.strerror or str(e)
    return f"{words} ({name})" if name else words


#: The names :func:`tempfile.mkstemp` gives after our prefix ``.NAME.``.
_TEMP_TAIL = re.compile(r"[a-z0-9_]{8}")
#: ``flock`` errors that mean another process holds the lock.
_HELD = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)


def _open_temp(target: Path) -> tuple[int, str]:
    """A new temp file ``.NAME.XXXXXXXX`` beside ``target``, locked (``flock``) for as long as
    its descriptor is open: :func:`_sweep_stale_temps` removes only temp files whose lock is
    free, that is, whose writer is gone (the kernel releases a dead process's locks)."""
    while True:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # waits only for a sweeper that is looking at it
        except OSError:
            return fd, tmp  # no flock here: nothing is swept either
        if os.fstat(fd).st_nlink:
            return fd, tmp
        os.close(fd)  # a sweeper took it for a dead writer's before it was locked: make another


def _sweep_stale_temps(target: Path) -> None:
    """Remove the temp files of writers of ``target`` that died mid-write (SIGKILL, a power
    cut): those whose ``flock`` is free. A live writer's temp file is locked, and stays."""
    prefix = f".{target.name}."
    try:
        names = [n for n in os.listdir(target.parent) if n.startswith(prefix) and _TEMP_TAIL.fullmatch(n[len(prefix) :])]
    except OSError:
        return
    for name in names:
        path = target.parent / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            here, mine = os.stat(path, follow_symlinks=False), os.fstat(fd)
            if (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino):
                os.unlink(path)
        except OSError:
            pass  # a live writer holds it, or it is gone, or this file system has no flock
        finally:
            os.close(fd)


class _Killed(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


#: Signals whose default action kills the process without running any cleanup.
_FATAL = (signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def _cleanup_on_signals() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP (where they have their default, fatal, action) raise,
    so that the block's cleanup runs; then they kill the process as they would have. SIGINT
    raises ``KeyboardInterrupt`` anyway. Only the main thread can set handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise _Killed(signum)

    old = {s: signal.signal(s, handler) for s in _FATAL if signal.getsignal(s) is signal.SIG_DFL}
    try:
        yield
    except _Killed as killed:
        for s, h in old.items():
            signal.signal(s, h)
        old = {}
        signal.raise_signal(killed.signum)  # dies as the signal's default action says
        raise
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def check_writable(path: Path) -> None:
    """Raise :class:`WriteError` unless ``path`` can be written by :func:`write_atomic`:
    checked before a run, so that its results are not lost at the end."""
    target = _target(path)
    _refuse_read_only(target, path)
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        fd, probe = _open_temp(target)
    except OSError as e:
        raise WriteError(path, f"cannot be written: {e.strerror or e}") from None
    os.unlink(probe)
    os.close(fd)


#: How much text :func:`write_atomic` gathers from chunks before writing (and compressing) it.
_BATCH = 1 << 20


def _pieces(content: bytes | Iterable[str | bytes], compress: bool) -> Iterator[bytes]:
    """``content`` (bytes, or chunks of text or bytes) in pieces of about :data:`_BATCH` bytes,
    gzip-compressed where ``compress`` says: ``zlib``'s gzip format (``wbits=31``, level 9) gives
    the bytes of ``gzip.compress(data, mtime=0)``, a piece at a time."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31) if compress else None
    for data in [content] if isinstance(content, bytes) else _batched(content):
        yield packer.compress(data) if packer else data
    if packer:
        yield packer.flush()


def _batched(chunks: Iterable[str | bytes]) -> Iterator[bytes]:
    batch: list[bytes] = []
    size = 0
    for chunk in chunks:
        data = chunk.encode() if isinstance(chunk, str) else chunk
        batch.append(data)
        size += len(data)
        if size > _BATCH:
            yield b"".join(batch)
            batch, size = [], 0
    yield b"".join(batch)


def write_atomic(path: Path, content: bytes | Iterable[str | bytes]) -> None:
    """Write ``content`` to ``path`` atomically: to a temp file beside it, renamed into place, so
    a crash mid-write leaves the old file intact. Every file optests writes goes through here.
    ``content`` is bytes, or an iterable of chunks (text, as UTF-8, or bytes) written as they
    come, so that a large file is never in memory whole. A path ending in ``.gz`` is
    gzip-compressed, with no timestamp: the same content, the same bytes.
    A symlink is followed (its target is replaced); a read-only file is refused. The file keeps
    the mode of the one it replaces, or gets the one ``open`` would give (a temp file's own is
    owner-only). The temp file is removed if the write fails or the process is interrupted
    (SIGINT, SIGTERM, SIGHUP), and one a killed writer left is removed by the next write. An
    error is a :class:`WriteError` naming ``path`` and the errno (``File too large (EFBIG)``)."""
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
    except OSError as e:
        raise WriteError(path, f"cannot be written: {reason(e)}") from None
    _sweep_stale_temps(target)
    with _cleanup_on_signals():
        tmp: str | None = None
        fd = -1
        try:
            fd, tmp = _open_temp(target)
            with os.fdopen(fd, "wb", closefd=False) as f:  # the descriptor (so the lock) outlives the rename
                for piece in _pieces(content, path.name.endswith(".gz")):
                    f.write(piece)
                f.flush()
                os.fsync(f.fileno())
            os.fchmod(fd, mode)
            os.replace(tmp, target)
            tmp = None
        except OSError as e:
            raise WriteError(path, f"cannot be written: {reason(e)}") from None
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            if fd >= 0:
                os.close(fd)


def write_json_atomic(path: Path, data: Any) -> None:
    """JSON through :func:`write_atomic`: sorted keys, indent 2, trailing newline, no NaN or
    Infinity. A path ending in ``.gz`` is gzip-compressed, with no timestamp: the same data,
    the same bytes."""
    text = json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"
    write_atomic(path, text.encode())


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
                if e.errno not in _HELD:
                    break  # no flock here: nothing to wait for
                if deadline is not None and time.monotonic() > deadline:
                    raise Busy(path, "is busy (another optests is writing it); try again") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # releases the lock


def claim(path: Path) -> int:
    """Open ``path`` (created if missing, never truncated here) as its one writer: an exclusive
    ``flock`` on it, held while the returned descriptor is open and released by the kernel when
    the process dies. :class:`Busy` when a live process holds it, which leaves the file as it
    was. On a file system without ``flock``, goes on unlocked."""
    while True:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileNotFoundError):  # a FIFO is refused before it is opened
                if (words := _irregular(os.stat(path).st_mode)) is not None:
                    raise WriteError(path, words)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK, 0o666)
            if (words := _irregular(os.fstat(fd).st_mode)) is not None:
                os.close(fd)
                raise WriteError(path, words)
            os.set_blocking(fd, True)
        except WriteError:
            raise
        except OSError as e:
            raise WriteError(path, f"cannot be written: {reason(e)}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in _HELD:
                os.close(fd)
                raise Busy(path, "is locked by another process that writes it") from None
        try:
            here, mine = os.stat(path), os.fstat(fd)
            if (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino):
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)  # its owner removed it between our open and our lock: take the new one
