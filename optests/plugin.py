"""The pytest plugin (entry point ``pytest11``). Thin and torch-free: pytest loads every
installed plugin in every run, so this module only declares options and validates them; the
sweep's machinery is registered when a run is configured and imports torch only when the sweep
is actually collected."""

from __future__ import annotations

import dataclasses

import pytest

from . import _files, _registry, _settings


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("optests", "optests: the OpInfo sweep through the AOT-autograd check")
    for opt in _settings.OPTIONS:
        dest = "optests_" + opt.name.replace("-", "_")
        if opt.flag:
            group.addoption(f"--optests-{opt.name}", dest=dest, action="store_true", default=False, help=opt.help)
        else:
            group.addoption(f"--optests-{opt.name}", dest=dest, default=None, metavar=opt.name.upper(), help=opt.help)
        parser.addini(dest, f"{opt.help} (default: {opt.default!r})", default="")


def _read(config: pytest.Config) -> _settings.Settings:
    settings = _settings.parse(
        lambda name: config.getoption("optests_" + name.replace("-", "_")),
        lambda name: str(config.getini("optests_" + name.replace("-", "_"))),
    )
    if settings.registry is not None and not settings.registry.is_absolute():
        settings = dataclasses.replace(settings, registry=config.rootpath / settings.registry)
    return settings


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    try:
        settings = _read(config)
        if settings.registry is not None:
            _registry.load(settings.registry)  # a malformed registry stops the run before any test
    except (_settings.SettingError, _registry.RegistryError) as e:
        raise pytest.UsageError(str(e)) from None
    # outputs are checked now, not after the run whose results they would hold
    outputs = {"--optests-results": settings.results, "--optests-accept": settings.registry if settings.accept else None}
    for option, path in outputs.items():
        try:
            if path is not None:
                _files.check_writable(path)
        except _files.WriteError as e:
            raise pytest.UsageError(f"{option}: {e}") from None


def pytest_configure(config: pytest.Config) -> None:
    from ._sweep import Sweep

    config.pluginmanager.register(Sweep(config, _read(config)), "optests-sweep")
