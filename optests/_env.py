"""Where and when a run happened, as results files record it."""

from __future__ import annotations

import datetime
import platform


def now() -> str:
    """The current time as results files record it: ISO 8601, UTC, seconds."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def environment(date: str | None = None) -> dict[str, str]:
    """Where and when (``date``: the run's start, default now) a run happened. Imports torch
    (callers on the torch-free path pass their own)."""
    import torch

    from . import __version__

    return {
        "date": date or now(),
        "torch": torch.__version__,
        "torch_git": getattr(torch.version, "git_version", "") or "",
        "cuda": torch.version.cuda or "",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "optests": __version__,
    }
