"""The pytest plugin (entry point ``pytest11``). Thin and torch-free: pytest loads every
installed plugin in every run, so this module only declares options, and stays dormant unless a
run asks for the sweep. A run asks with any ``--optests-*`` option or ``optests_*`` ini key, or by
collecting a folder whose ``conftest.py`` sets ``optests_sweep = True`` (``opinfo_sweeps/`` does).
Then the options are validated before any test, the registry is read, and the sweep's machinery
is registered; it imports torch only when the sweep is collected. Otherwise optests reads no
file, imports no torch and changes no outcome, as pytest-xdist registers its session only with
``-n``."""

from __future__ import annotations

import dataclasses

import pytest

from . import _files, _registry, _settings
from ._sanitize import printable


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("optests", "optests: the OpInfo sweep through the AOT-autograd check")
    for opt in _settings.OPTIONS:  # each option and ini key as its declaration says
        if opt.flag:
            group.addoption(opt.option, dest=opt.ini, action="store_true", default=False, help=opt.help)
        else:
            group.addoption(opt.option, dest=opt.ini, default=None, metavar=opt.name.upper(), help=opt.help)
        parser.addini(opt.ini, f"{opt.help} (default: {opt.default!r})", default="")


#: The conftest attribute that asks for the sweep in its folder.
ASK = "optests_sweep"
_SWEEP = "optests-sweep"


def _asked(config: pytest.Config) -> bool:
    for opt in _settings.OPTIONS:
        if config.getoption(opt.ini) not in (None, False) or str(config.getini(opt.ini)).strip():
            return True
    return any(getattr(plugin, ASK, False) is True for plugin in config.pluginmanager.get_plugins())


def _read(config: pytest.Config) -> _settings.Settings:
    settings = _settings.parse(
        lambda name: config.getoption(_settings.OPTION[name].ini),
        lambda name: str(config.getini(_settings.OPTION[name].ini)),
        config.rootpath,
    )
    if settings.registry is not None and not settings.registry.is_absolute():
        settings = dataclasses.replace(settings, registry=config.rootpath / settings.registry)
    return settings


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    if not _asked(config):
        return
    from ._backends.inductor import CacheDirError, check_compile_cache

    try:
        settings = _read(config)
        # torch creates the cache folder as Dynamo is imported: a bad one stops the run in one line
        check_compile_cache("--optests-compile-cache", settings.compile_cache)
        if settings.registry is not None:
            _registry.load(settings.registry)  # a malformed registry stops the run before any test
    except (CacheDirError, _settings.SettingError, _registry.RegistryError) as e:
        raise pytest.UsageError(printable(str(e))) from None  # it may quote the file
    # outputs are checked now, not after the run whose results they would hold
    outputs = {"--optests-results": settings.results, "--optests-accept": settings.registry if settings.accept else None}
    for option, path in outputs.items():
        try:
            if path is not None:
                _files.check_writable(path)
        except _files.WriteError as e:
            raise pytest.UsageError(printable(f"{option}: {e}")) from None


_CONFIGURED = pytest.StashKey[bool]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_CONFIGURED] = True
    if _asked(config):
        _start(config)


def pytest_plugin_registered(plugin: object, manager: pytest.PytestPluginManager) -> None:
    """A conftest that asks for the sweep but is found only while collecting (``pytest .``);
    those found before the run is configured are asked about in ``pytest_configure``."""
    config = manager.get_plugin("pytestconfig")
    if getattr(plugin, ASK, False) is True and isinstance(config, pytest.Config) and config.stash.get(_CONFIGURED, False):
        _start(config)


def _start(config: pytest.Config) -> None:
    if config.pluginmanager.get_plugin(_SWEEP) is None:
        from ._sweep import Sweep

        config.pluginmanager.register(Sweep(config, _read(config)), _SWEEP)
