"""The pytest plugin (entry point ``pytest11``). Thin and torch-free: pytest loads every
installed plugin in every run, so this module only declares options and validates them; the
sweep's machinery is registered when a run is configured and imports torch only when the sweep
is actually collected."""

from __future__ import annotations

import pytest

from . import _settings


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("optests", "optests: the OpInfo sweep through the AOT-autograd check")
    for opt in _settings.OPTIONS:
        group.addoption(
            f"--optests-{opt.name}", dest=f"optests_{opt.name}", default=None, metavar=opt.name.upper(), help=opt.help
        )
        parser.addini(f"optests_{opt.name}", f"{opt.help} (default: {opt.default!r})", default="")


def _read(config: pytest.Config) -> _settings.Settings:
    return _settings.parse(
        lambda name: config.getoption(f"optests_{name}"),
        lambda name: str(config.getini(f"optests_{name}")),
    )


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    try:
        _read(config)
    except _settings.SettingError as e:
        raise pytest.UsageError(str(e)) from None


def pytest_configure(config: pytest.Config) -> None:
    from ._sweep import Sweep

    config.pluginmanager.register(Sweep(config, _read(config)), "optests-sweep")
