"""Where and when a run happened, as results files record it, and the compile cache it used."""

from __future__ import annotations

import datetime
import getpass
import os
import platform
import re
import shutil
import tempfile
from pathlib import Path
from types import TracebackType

#: The environment variable that tells inductor where its on-disk caches live (its FX graph
#: cache and AOTAutograd cache among them); the runner's children inherit it.
CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"
#: ``--optests-compile-cache``, ``optests check --compile-cache``: besides these, a folder.
COMPILE_CACHES = ("fresh", "shared")


def now() -> str:
    """The current time as results files record it: ISO 8601, UTC, seconds."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def environment(date: str | None = None, compile_cache: str = "") -> dict[str, str]:
    """Where and when (``date``: the run's start, default now) a run happened, and where given,
    the compile cache it used (:attr:`CompileCache.label`). Imports torch (callers on the
    torch-free path pass their own)."""
    import torch

    from . import __version__

    return {
        "date": date or now(),
        "torch": torch.__version__,
        "torch_git": getattr(torch.version, "git_version", "") or "",
        "cuda": torch.version.cuda or "",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu(),
        "optests": __version__,
    } | ({"compile_cache": compile_cache} if compile_cache else {})


def cpu() -> str:
    """The CPU's model name (``/proc/cpuinfo``'s, else what ``platform`` says), "" if unknown: the
    floating point of some kernels (oneDNN's bfloat16) depends on it."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                name, _, value = line.partition(":")
                if name.strip() == "model name":
                    return " ".join(value.split())
    except OSError:
        pass
    return platform.processor()


def parse_compile_cache(value: str) -> str:
    """``fresh``, ``shared`` or a folder (made absolute); a ``ValueError`` saying what is valid."""
    text = value.strip()
    if text in COMPILE_CACHES:
        return text
    if not text:
        raise ValueError("empty; valid: fresh, shared or a folder")
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(f"{text} is not a folder; valid: fresh, shared or a folder")
    return str(path.absolute())


def torch_default_cache_dir() -> str:
    """Where inductor caches without ``TORCHINDUCTOR_CACHE_DIR``, as
    ``torch._inductor.runtime.cache_dir_utils.default_cache_dir`` says (torch-free)."""
    try:
        user = getpass.getuser()
    except (KeyError, ModuleNotFoundError, OSError):
        user = f"uid_{os.getuid()}" if hasattr(os, "getuid") else "unknown_user"
    return os.path.join(tempfile.gettempdir(), "torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user))


class CompileCache:
    """The compile cache a run uses, a choice it makes (``choice``, :func:`parse_compile_cache`)
    and records (:attr:`label`): inductor's caches are keyed by what it compiles, but a key can
    miss what changed (a decomposition planted at run time), and then a verdict would depend on
    the checks run before, in this run or an earlier one. ``fresh``: an empty folder for the run,
    removed after it; ``shared``: torch's own (``TORCHINDUCTOR_CACHE_DIR``, or its default);
    a folder: that one, kept. Entered, it sets ``TORCHINDUCTOR_CACHE_DIR`` for this process and
    the processes it starts after (the runner's children, xdist's workers); left, it restores it."""

    def __init__(self, choice: str) -> None:
        self.choice = choice
        self.path = ""
        self._fresh = ""
        self._before: str | None = None

    @property
    def label(self) -> str:
        """As results record it: ``fresh``, ``shared (FOLDER)`` or the folder."""
        return "fresh" if self._fresh else f"shared ({self.path})" if self.choice == "shared" else self.path

    def __enter__(self) -> CompileCache:
        self._before = os.environ.get(CACHE_ENV)
        if self.choice == "shared":
            self.path = os.path.abspath(self._before) if self._before else torch_default_cache_dir()
            return self
        if self.choice == "fresh":
            self.path = self._fresh = tempfile.mkdtemp(prefix="optests-compile-cache-")
        else:
            self.path = self.choice
        os.environ[CACHE_ENV] = self.path
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self.choice != "shared":
            if self._before is None:
                os.environ.pop(CACHE_ENV, None)
            else:
                os.environ[CACHE_ENV] = self._before
        if self._fresh:
            shutil.rmtree(self._fresh, ignore_errors=True)
