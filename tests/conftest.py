import pytest

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def _torch_warnings_are_not_ours(request: pytest.FixtureRequest) -> None:
    """Our own warnings are errors (pyproject), but torch's internal UserWarnings (e.g. the
    autograd anomaly notes a failing compiled backward prints) are not ours to fail on."""
    request.node.add_marker(pytest.mark.filterwarnings("ignore::UserWarning:torch"))
