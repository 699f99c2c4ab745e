"""The sweep's test module and its conftest, installed into a pytester directory, and pytest run
on it in this process (:func:`run_inline`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import pytest

SWEEP = Path(__file__).resolve().parents[1] / "opinfo_sweeps"
#: The test-only OpInfo databases (``--optests-dbs=crashy_ops:ops``).
FIXTURES = Path(__file__).resolve().parent / "sweep_fixtures"


def install_sweep(where: Path) -> None:
    """Copy the sweep (its test module, and the conftest that asks the dormant plugin for it)."""
    for name in ("test_aot_autograd.py", "conftest.py"):
        shutil.copy(SWEEP / name, where / name)


#: Every module an in-process run imported from outside its pytester directory, for the rest of
#: the process (``keep_imports`` in conftest.py puts them back after each test).
KEPT: dict[str, ModuleType] = {}


class _Imports:
    """A plugin for an in-process run: the modules imported when its configuration ends."""

    def __init__(self) -> None:
        self.modules: dict[str, ModuleType] = {}

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self) -> None:
        self.modules = dict(sys.modules)


def _outside(module: ModuleType, where: Path) -> bool:
    file = getattr(module, "__file__", None)
    return file is None or not Path(file).resolve().is_relative_to(where.resolve())


def run_inline(pytester: pytest.Pytester, *args: str | Path) -> pytest.RunResult:
    """``pytester.runpytest_inprocess(*args)``, keeping what it imported for the rest of the process.

    pytester drops every module a run imported when the run ends (and again when the test ends).
    torch, its OpInfo databases and the test-only ops (which register custom ops with
    ``torch.library``) cannot be imported twice in one process, so the modules the run imported
    from outside its directory are put back; the directory's own (its conftest, the sweep's test
    module) are dropped, as each test writes its own. The sweep's checks run in the runner's
    children (forked), and the plugin puts back the torch state a check changes, so a run leaves
    this process as it found it.
    """
    imports = _Imports()
    # xdist's workers take their sys.path from the process that imported xdist (this test's
    # worker), not from PYTHONPATH: they are told the folders a subprocess would import from
    folders = [f for f in os.environ.get("PYTHONPATH", "").split(os.pathsep) if f]
    paths = ["-o", f"pythonpath={' '.join(folders)}"] if folders else []
    _fresh_caches()
    try:
        return pytester.runpytest_inprocess(*args, *paths, plugins=[imports])
    finally:
        for name, module in imports.modules.items():
            if name not in sys.modules and _outside(module, pytester.path):
                KEPT[name] = module
        restore_kept()


def _fresh_caches() -> None:
    """Empty what optests keeps for the life of a process (its functools caches: ops by database,
    their samples; the backends resolved and probed), as a run in a fresh process would find it:
    a pytester directory's database of one name holds other ops in the next test."""
    for name, module in list(sys.modules.items()):
        if name == "optests" or name.startswith("optests."):
            for value in list(vars(module).values()):
                if getattr(value, "__module__", None) == name and callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()
    backends = sys.modules.get("optests._backends")
    for kept in ("_RESOLVED", "_RUNNABLE"):
        getattr(backends, kept, {}).clear()


def run_cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``optests ARGS`` in this process (:func:`optests.cli.main`): its exit status and output."""
    from optests.cli import main

    capsys.readouterr()
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["optests", *map(str, args)], status, out, err)


#: ``optests_cli(ARGS, CWD)`` (the fixture): ``optests ARGS`` run in ``CWD``, in this process.
OptestsCli = Callable[[Sequence[str | Path], Path], subprocess.CompletedProcess[str]]


def restore_kept() -> None:
    """Put back the modules in-process runs imported (pytester drops them as each test ends)."""
    for name, module in KEPT.items():
        sys.modules.setdefault(name, module)


def sweep_dir(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *extra: Path) -> pytest.Pytester:
    """``pytester``'s directory holding the sweep, the test-only ops importable (and ``extra``
    folders) in this process, and in a subprocess (``PYTHONPATH``)."""
    install_sweep(pytester.path)
    folders = [FIXTURES, *extra]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(str(f) for f in folders))
    for folder in reversed(folders):
        monkeypatch.syspath_prepend(str(folder))
    return pytester
