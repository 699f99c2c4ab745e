"""The sweep: every OpInfo sample through the AOT-autograd check, one test per sample and mode.

Select with the optests options (``pytest --help``, section optests) or ``-k``; ids read
``static-float32-cpu-sin-sample3``. The plugin hands out both fixtures.
"""

from __future__ import annotations

from collections.abc import Callable


def test_aot_autograd(optests_case: object, optests_check: Callable[[object], None]) -> None:
    optests_check(optests_case)
