"""Importing a user's module (``--import``, ``--backends``/``--optests-backends``,
``--optests-dbs``, ``--samples``): whatever it raises at import is that user's failure, one line,
never optests' own exit or crash. Torch-free."""

from __future__ import annotations

import contextlib
import importlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType, ModuleType
from typing import Any

from .errors import ImportFailed as ImportFailed


def import_module(name: str) -> ModuleType:
    """``importlib.import_module(name)``; what the module raises at import is an
    :class:`ImportFailed`. A Ctrl-C while it imports (a real ``SIGINT``) still interrupts."""
    with _sigint_seen() as seen:
        try:
            return importlib.import_module(name)
        except BaseException as e:
            if isinstance(e, KeyboardInterrupt) and seen():
                raise
            raise ImportFailed(name, e) from None


@contextlib.contextmanager
def _sigint_seen() -> Iterator[Any]:
    """Notes whether ``SIGINT`` arrives in the block (then handled as before): a
    ``KeyboardInterrupt`` without one was raised by the module's code. Off the main thread, or
    where ``SIGINT`` has no Python handler, none is seen (none raises ``KeyboardInterrupt``)."""
    seen = False
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        yield lambda: False
        return

    def note(signum: int, frame: FrameType | None) -> Any:
        nonlocal seen
        seen = True
        return previous(signum, frame)

    signal.signal(signal.SIGINT, note)
    try:
        yield lambda: seen
    finally:
        if signal.getsignal(signal.SIGINT) is note:  # unless the module installed its own
            signal.signal(signal.SIGINT, previous)
