"""The public seams: a backend registered through ``optests.register_backend``, and call patterns
written against ``optests.patterns``."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import optests


class _Eager:
    """A backend that compiles nothing: the function as it is."""

    nofunc = True
    same_random = True
    opinfo_test = "TestEagerFusionOpInfo"
    free_strides: frozenset[str] = frozenset()

    def compile(self, fn: Callable[..., Any], *, dynamic: bool, disable_functionalization: bool) -> Callable[..., Any]:
        return fn


def test_register_backend_is_public_and_the_old_name_still_works(monkeypatch: pytest.MonkeyPatch) -> None:
    from optests import _backends

    monkeypatch.setattr(_backends, "BACKENDS", dict(_backends.BACKENDS))
    assert "register_backend" in optests.__all__ and "Backend" in optests.__all__
    optests.register_backend("seam_eager", _Eager())
    assert isinstance(_backends.get_backend("seam_eager"), _Eager)
    assert _backends.register is optests.register_backend  # what vendors were told to call
    with pytest.raises(ValueError, match="backend name '1x'"):
        optests.register_backend("1x", _Eager())


def test_a_registered_backend_checks_a_call() -> None:
    import torch

    from optests import _backends

    saved = dict(_backends.BACKENDS)
    try:
        optests.register_backend("seam_eager", _Eager())
        result = optests.run_check(torch.sin, [torch.randn(3, requires_grad=True)], {}, False, backend="seam_eager")
    finally:
        _backends.BACKENDS.clear()
        _backends.BACKENDS.update(saved)
    assert result.passed, result.message


def test_importing_optests_for_register_backend_imports_no_torch() -> None:
    code = "import sys, optests; optests.register_backend; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_optests_patterns_exports_what_a_pattern_needs() -> None:
    import optests.patterns as patterns
    from optests._patterns import base

    assert set(patterns.__all__) == {name for name in vars(patterns) if not name.startswith(("_", "@")) and name != "annotations"}
    assert patterns.CallPattern is base.CallPattern and patterns.Called is base.Called


@pytest.mark.parametrize("path", sorted((Path(optests.__file__).parent / "_patterns").glob("*.py")), ids=lambda p: p.stem)
def test_the_built_in_patterns_use_the_public_base(path: Path) -> None:
    """No built-in pattern reaches for the transforms' private sample types: a pattern written
    outside optests can do all that they do."""
    private = {"_Made", "_Sample"}
    used = {node.id for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(node, ast.Name)}
    imported = {
        alias.name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert not (used | imported) & private
