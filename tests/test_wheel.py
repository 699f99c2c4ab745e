"""The wheel that ``python -m build`` makes installs into a fresh virtual environment, and there
``optests check`` and the sweep plugin work, while a project that does not ask for the sweep is
untouched. It takes about a minute (mostly pip installing torch, from the CPU wheel on this
machine's disk as requirements.txt pins it) and the package index, so it runs only when asked:
``OPTESTS_WHEEL=1`` (``.ci/run`` sets it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from sweepdir import install_sweep

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    os.environ.get("OPTESTS_WHEEL") != "1", reason="builds and installs the wheel (about a minute): set OPTESTS_WHEEL=1"
)


def _torch_pin() -> str:
    """The torch requirement of requirements.txt (``torch==2.13.*``), so pip takes the same wheel."""
    pins = [line for line in (ROOT / "requirements.txt").read_text().splitlines() if re.match(r"torch\b", line)]
    assert len(pins) == 1, "requirements.txt: expected one torch line"
    return pins[0].strip()


def _clean_env() -> dict[str, str]:
    """This process's environment without what would leak our checkout or our pytest run into the
    fresh one; bytecode is written, since the install skips compiling it."""
    drop = ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONHOME", "VIRTUAL_ENV")
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith(("PYTEST_", "OPTESTS_"))}


def _run(args: Sequence[str | Path], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, env=_clean_env(), capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def fresh_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment with only the built wheel (and what it depends on) installed."""
    where = tmp_path_factory.mktemp("wheel")
    # sdist first, then the wheel from the unpacked sdist: what a release would publish
    built = _run([sys.executable, "-m", "build", "--outdir", where / "dist", ROOT], where)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    wheels = sorted((where / "dist").glob("optests-*.whl"))
    assert len(wheels) == 1, wheels
    env = where / "env"
    made = _run([sys.executable, "-m", "venv", env], where)
    assert made.returncode == 0, made.stderr
    # --no-compile: byte-compiling all of torch costs more than the runs below compile on import
    installed = _run([env / "bin" / "python", "-m", "pip", "install", "-q", "--no-compile", wheels[0], _torch_pin()], where)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    return env


def test_the_installed_package_is_the_wheel(fresh_env: Path, tmp_path: Path) -> None:
    done = _run([fresh_env / "bin" / "python", "-c", "import optests; print(optests.__file__)"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_relative_to(fresh_env), done.stdout


def test_optests_check_runs(fresh_env: Path, tmp_path: Path) -> None:
    # the input transforms: with every call pattern too, sin's out= to resize is a finding (an
    # AOTAutograd bug, findings/aot_out_resize.py) that only the repository's registry expects
    transforms = "noncontiguous,transposed,duplicated,aliased,grad-subset,dtypes,resized"
    done = _run([fresh_env / "bin" / "optests", "check", "sin", "--modes", "static", "--transforms", transforms], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    # what passed is counted, not listed (``-v`` lists it)
    assert re.search(r"^(\d+) checks: \1 passed, 0 failed, 0 not expected", done.stdout, re.M), done.stdout
    assert "derived by noncontiguous" in done.stdout  # the transforms, and hypothesis with them, are installed


def test_a_project_that_asks_for_the_sweep_gets_it(fresh_env: Path, tmp_path: Path) -> None:
    install_sweep(tmp_path)  # opinfo_sweeps' test module, and its conftest with optests_sweep = True
    options = ["-v", "-p", "no:cacheprovider", "--optests-ops=sin", "--optests-modes=static"]
    done = _run([fresh_env / "bin" / "python", "-m", "pytest", *options], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "test_aot_autograd[static-float32-cpu-sin-sample0] PASSED" in done.stdout, done.stdout
    assert "optests sweep" in done.stdout and "1 passed" in done.stdout, done.stdout


def test_a_project_that_does_not_ask_is_untouched(fresh_env: Path, tmp_path: Path) -> None:
    (tmp_path / "expected_failures.json").write_text('{"tests": ["a"]}\n')  # its own file, not ours
    (tmp_path / "test_theirs.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    done = _run([fresh_env / "bin" / "python", "-X", "importtime", "-m", "pytest", "-q", "-p", "no:cacheprovider"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout and "optests sweep" not in done.stdout, done.stdout
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "optests" in imported  # the installed plugin was loaded...
    assert "torch" not in imported  # ...and stayed dormant
