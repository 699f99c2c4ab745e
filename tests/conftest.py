import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from sweepdir import OptestsCli, restore_kept, run_cli, sweep_dir

pytest_plugins = ["pytester"]


@pytest.fixture
def sweep(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester dir holding the sweep's test module, with the test-only ops importable (in this
    process for :func:`sweepdir.run_inline`, and through ``PYTHONPATH`` for a subprocess)."""
    return sweep_dir(pytester, monkeypatch)


@pytest.fixture
def nightly_sweep(sweep: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester dir holding the sweep, with ``--optests-dbs=nightly_ops:ops`` importable: alpha
    correct, beta broken at the forward stage, gamma at metadata (``NIGHTLY_BROKEN``)."""
    monkeypatch.setenv("NIGHTLY_BROKEN", "beta=forward,gamma=metadata")
    return sweep


@pytest.fixture
def optests_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> OptestsCli:
    """``optests_cli(ARGS, CWD)``: ``optests ARGS`` in ``CWD``, in this process (no interpreter to
    start, no torch to import), its exit status and output as a ``CompletedProcess``."""
    monkeypatch.setattr(sys, "path", list(sys.path))  # optests check puts the working directory on it

    def run(args: Sequence[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
        monkeypatch.chdir(cwd)
        return run_cli(capsys, *args)

    return run


@pytest.fixture(autouse=True)
def _keep_imports() -> Iterator[None]:
    """pytester drops the modules a test imported as the test ends: put back those in-process
    runs imported (torch's cannot be imported twice). Autouse, so it is set up before pytester
    and torn down after it."""
    yield
    restore_kept()


@pytest.fixture(autouse=True)
def _torch_warnings_are_not_ours(request: pytest.FixtureRequest) -> None:
    """Our own warnings are errors (pyproject), but torch's internal UserWarnings (e.g. the
    autograd anomaly notes a failing compiled backward prints) are not ours to fail on."""
    request.node.add_marker(pytest.mark.filterwarnings("ignore::UserWarning:torch"))
