from pathlib import Path

import pytest
from sweepdir import install_sweep

pytest_plugins = ["pytester"]


@pytest.fixture
def nightly_sweep(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester dir holding the sweep, with ``--optests-dbs=nightly_ops:ops`` importable: alpha
    correct, beta broken at the forward stage, gamma at metadata (``NIGHTLY_BROKEN``)."""
    install_sweep(pytester.path)
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parent / "sweep_fixtures"))
    monkeypatch.setenv("NIGHTLY_BROKEN", "beta=forward,gamma=metadata")
    return pytester


@pytest.fixture(autouse=True)
def _torch_warnings_are_not_ours(request: pytest.FixtureRequest) -> None:
    """Our own warnings are errors (pyproject), but torch's internal UserWarnings (e.g. the
    autograd anomaly notes a failing compiled backward prints) are not ours to fail on."""
    request.node.add_marker(pytest.mark.filterwarnings("ignore::UserWarning:torch"))
