"""The in-tree check's helpers, under the in-tree names: the raises-regex context manager, the
comparison PyTorch's OpInfo tests use, the one-thread rule and the name of a mode."""

from __future__ import annotations

import re
from typing import Any

import torch

__all__ = ["assert_raises_regex", "assert_close_equal_nan", "one_intra_op_thread", "mode_name"]


class assert_raises_regex:  # noqa: N801 - same name and contract as the in-tree helper
    """Context manager: the block must raise ``exception_cls`` with a message matching ``regex``."""

    def __init__(self, exception_cls: type[BaseException], regex: str) -> None:
        self.exception_cls = exception_cls
        self.regex = regex

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool:
        if exc_type is None:
            raise AssertionError(f"expected {self.exception_cls.__name__} matching {self.regex!r}, but nothing was raised")
        if not issubclass(exc_type, self.exception_cls):
            raise AssertionError(
                f"expected {self.exception_cls.__name__} matching {self.regex!r}, but got {exc_type.__name__}: {exc}"
            )
        if not re.search(self.regex, str(exc)):
            raise AssertionError(f"expected {self.exception_cls.__name__} matching {self.regex!r}, but the message was: {exc}")
        return True


def assert_close_equal_nan(actual: Any, expected: Any, **kwargs: Any) -> None:
    """``torch.testing.assert_close`` with NaN equal to NaN: what PyTorch's own OpInfo tests
    compare with (``TestCase.assertEqual``). The sweep and ``optests check`` use it; the
    check's default stays the in-tree check's plain ``assert_close``."""
    torch.testing.assert_close(actual, expected, equal_nan=True, **kwargs)


def one_intra_op_thread() -> None:
    """Run checks with one intra-op thread, in the sweep's child and in ``optests check``'s: a
    verdict must not depend on the thread count (reductions split across threads round
    otherwise), the sweep's workers already use every core, and GNU OpenMP is not fork-safe."""
    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def mode_name(dynamic: bool, disable_functionalization: bool = False) -> str:
    """The sweep's name for a mode: ``static``, ``dynamic``, ``static-nofunc``, ``dynamic-nofunc``."""
    return ("dynamic" if dynamic else "static") + ("-nofunc" if disable_functionalization else "")
