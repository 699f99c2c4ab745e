"""The sweep: every OpInfo sample through the AOT-autograd check, one test per sample and mode.

Select with the optests options (``pytest --help``, section optests) or ``-k``; ids read
``static-float32-cpu-sin-sample3``.
"""

from __future__ import annotations

import pytest

from optests._sweep import Case


def test_aot_autograd(optests_case: Case, request: pytest.FixtureRequest) -> None:
    request.config.pluginmanager.get_plugin("optests-sweep").check(request.node, optests_case)
