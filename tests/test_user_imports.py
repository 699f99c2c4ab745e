"""What a user's module raises at import (``--import``, ``--backends``, ``--samples``, a ModuleInfo
of the user's, ``--optests-backends``, ``--optests-dbs``) is that user's failure: one line, exit 2
from ``optests check``, a usage error (exit 4) from the sweep; ``sys.exit`` in it neither ends
optests nor passes for a green run."""

from __future__ import annotations

import itertools
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from sweepdir import install_sweep

from optests import _imports, cli

#: Module bodies that raise at import what is not an ``Exception``, and what the line says of it.
HOSTILE = {
    "exit0": ("import sys\nsys.exit(0)\n", "SystemExit: sys.exit(0)"),
    "exit_none": ("import sys\nsys.exit()\n", "SystemExit: sys.exit(None)"),
    "exit_text": ("raise SystemExit('bye\\nnow')\n", "SystemExit: sys.exit('bye\\nnow')"),
    "interrupt": ("raise KeyboardInterrupt\n", "KeyboardInterrupt"),
    "base": ("class Odd(BaseException):\n    pass\nraise Odd('odd\\nthing')\n", "Odd: odd"),
}

_names = itertools.count()


def _module(where: Path, body: str) -> str:
    """A module of ``body`` in ``where``, under a name no other test imports."""
    name = f"hostile_import_{next(_names)}"
    (where / f"{name}.py").write_text(body)
    return name


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``optests check`` run from ``tmp_path`` (it puts the working directory on ``sys.path``)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    return tmp_path


#: ``optests check`` options that import a module of the user's, and the line's start for ``M``.
WHERE: dict[str, tuple[Callable[[str], list[str]], Callable[[str], str]]] = {
    "--import": (lambda m: ["sin", "--import", m], lambda m: f"--import {m}: importing it failed: "),
    "--backends": (
        lambda m: ["sin", "--backends", f"{m}:x"],
        lambda m: f"backends: backend '{m}:x': module {m} cannot be imported (",
    ),
    "--samples": (lambda m: ["sin", "--samples", f"{m}:f"], lambda m: f"--samples {m}:f: importing {m} failed: "),
    "ModuleInfo": (lambda m: [f"{m}:info"], lambda m: f"{m}:info: importing {m} failed: "),
}


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("hostile", HOSTILE)
def test_check_reports_what_a_module_raised_at_import_in_one_line(
    here: Path, capsys: pytest.CaptureFixture[str], where: str, hostile: str
) -> None:
    body, said = HOSTILE[hostile]
    argv, start = WHERE[where]
    module = _module(here, body)
    code = cli.main(["check", *argv(module), "--transforms", "none", "--modes", "static"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), err
    assert err == f"optests check: error: {start(module)}{said}{')' if where == '--backends' else ''}\n"


@pytest.mark.parametrize("option", ["--optests-backends", "--optests-dbs"])
@pytest.mark.parametrize("hostile", ["exit0", "interrupt", "base"])
def test_the_sweep_stops_with_a_usage_error_for_a_module_that_raises_at_import(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, option: str, hostile: str
) -> None:
    install_sweep(pytester.path)
    body, said = HOSTILE[hostile]
    module = _module(pytester.path, body)
    monkeypatch.syspath_prepend(str(pytester.path))
    result = pytester.runpytest("-p", "no:cacheprovider", f"{option}={module}:x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.strip()]
    assert len(errors) == 1 and errors[0].startswith(f"ERROR: {option}: ") and said in errors[0], result.errlines


def test_a_real_ctrl_c_while_a_module_imports_still_interrupts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    signalled = _module(tmp_path, "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(5)\n")
    # Python's own Ctrl-C handler, as in a command run from a terminal: an xdist worker ignores SIGINT
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            _imports.import_module(signalled)
    finally:
        signal.signal(signal.SIGINT, previous)
    raised = _module(tmp_path, HOSTILE["interrupt"][0])  # raised by its code: its failure
    with pytest.raises(_imports.ImportFailed, match=f"^importing {raised} failed: KeyboardInterrupt$"):
        _imports.import_module(raised)


@pytest.mark.parametrize("option", ["--optests-dbs", "--optests-backends"])
def test_what_a_module_raised_reaches_the_terminal_escaped(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, option: str
) -> None:
    """A user's module's error text is shown with its control characters escaped: it cannot set
    the terminal's title or clear the screen."""
    install_sweep(pytester.path)
    module = _module(pytester.path, 'raise RuntimeError("bad\\x1b]0;owned\\x07 module")\n')
    monkeypatch.syspath_prepend(str(pytester.path))
    result = pytester.runpytest("-p", "no:cacheprovider", f"{option}={module}:x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (error,) = [line for line in result.errlines if line.strip()]
    assert "\x1b" not in error and "\x07" not in error and "bad\\x1b]0;owned\\x07 module" in error, error
