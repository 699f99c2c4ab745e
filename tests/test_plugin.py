"""The plugin is dormant in pytest runs that do not ask for the sweep: in another project it
reads no file, imports no torch and changes no outcome."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sweepdir import install_sweep


def _foreign_project(where: Path) -> None:
    (where / "expected_failures.json").write_text('{"tests": ["a"]}\n')  # its own file, not ours
    (where / "test_theirs.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    (where / "pytest.ini").write_text("[pytest]\n")


def test_an_unrelated_project_runs_as_if_optests_were_not_installed(tmp_path: Path) -> None:
    _foreign_project(tmp_path)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout and "optests sweep" not in done.stdout
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "optests" in imported  # the plugin was loaded...
    assert "torch" not in imported  # ...and stayed dormant


def test_an_optests_option_asks_for_the_sweep(tmp_path: Path) -> None:
    _foreign_project(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--optests-strict-registry"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == pytest.ExitCode.USAGE_ERROR  # now the registry is read, and it is not one
    assert "expected_failures.json: schema_version None is not supported" in done.stderr


@pytest.mark.parametrize("args", [["."], []], ids=["found-while-collecting", "named-by-testpaths"])
def test_the_sweeps_conftest_asks_for_it(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: list[str]) -> None:
    sub = pytester.path / "sweep"
    sub.mkdir()
    install_sweep(sub)
    pytester.makeini("[pytest]\ntestpaths = sweep\n")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parent / "sweep_fixtures"))
    result = pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider", "--collect-only", "-q")
    ids = [line for line in result.outlines if "test_aot_autograd[" in line]
    assert ids and all("-sample" in i or "not_applicable" in i for i in ids), result.stdout.str()
