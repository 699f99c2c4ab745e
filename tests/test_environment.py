"""What this machine cannot give a run: a compile-cache directory torch cannot create or write
(``TORCHINDUCTOR_CACHE_DIR``). One line naming the directory and what is wrong, before any check:
exit 2 from ``optests check``, a usage error (exit 4) from the sweep."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from sweepdir import install_sweep

from optests import cli
from optests._backends import inductor

ADVICE = "torch keeps its compile caches there: name a writable directory"


def _a_file(tmp: Path) -> Path:
    (tmp / "file").write_text("not a directory\n")
    return tmp / "file"


def _under_a_file(tmp: Path) -> Path:
    return _a_file(tmp) / "cache"


def _read_only(tmp: Path) -> Path:
    (tmp / "ro").mkdir(mode=0o555)
    return tmp / "ro"


def _dangling(tmp: Path) -> Path:
    (tmp / "link").symlink_to(tmp / "gone")
    return tmp / "link"


#: Cache directories torch cannot use, and what the line says of each.
BAD: dict[str, tuple[Callable[[Path], Path], str]] = {
    "a file": (_a_file, "is not a directory"),
    "under a file": (_under_a_file, "cannot be created: Not a directory (ENOTDIR)"),
    "a dangling link": (_dangling, "is a symbolic link to '{tmp}/gone', which does not exist"),
    "read-only": (_read_only, "cannot be written: Permission denied (EACCES)"),
}


def _bad(kind: str, tmp: Path) -> tuple[Path, str]:
    if kind == "read-only" and os.geteuid() == 0:
        pytest.skip("root writes into a read-only directory")
    make, said = BAD[kind]
    return make(tmp), said.format(tmp=tmp)


@pytest.mark.parametrize("kind", BAD)
def test_check_refuses_a_cache_directory_torch_cannot_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    path, said = _bad(kind, tmp_path)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(path))
    code = cli.main(["check", "sin", "--transforms", "none", "--modes", "static", "--compile-cache", "shared"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), out + err
    assert err == f"optests check: error: TORCHINDUCTOR_CACHE_DIR={path}: {said}; {ADVICE}\n"


@pytest.mark.parametrize("kind", ["under a file", "a dangling link"])
def test_check_refuses_a_compile_cache_folder_torch_cannot_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    path, said = _bad(kind, tmp_path)
    code = cli.main(["check", "sin", "--transforms", "none", "--modes", "static", "--compile-cache", str(path)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), out + err
    assert err == f"optests check: error: --compile-cache={path}: {said}; {ADVICE}\n"


def test_a_fresh_compile_cache_does_not_use_the_folder_torch_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With the default ``--compile-cache fresh``, the run makes its own folder: a bad
    ``TORCHINDUCTOR_CACHE_DIR`` is not used, so it stops nothing (and is not created)."""
    path, _ = _bad("under a file", tmp_path)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(path))
    code = cli.main(["check", "sin", "--transforms", "none", "--modes", "static", "--select", "first:1"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "1 checks: 1 passed" in out
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(path)  # set back after the run


def test_a_real_check_exits_2_with_one_line_not_a_traceback(tmp_path: Path) -> None:
    """In a fresh process torch itself creates the directory as Dynamo is imported."""
    path, said = _bad("under a file", tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "optests.cli",
            "check",
            "sin",
            "--transforms",
            "none",
            "--modes",
            "static",
            "--compile-cache",
            "shared",
        ],
        env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(path)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == f"optests check: error: TORCHINDUCTOR_CACHE_DIR={path}: {said}; {ADVICE}\n"


def test_a_directory_whose_name_breaks_lines_is_named_on_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = f"{_a_file(tmp_path)}/cache\nsecond line"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", path)
    code = cli.main(["check", "sin", "--transforms", "none", "--modes", "static", "--compile-cache", "shared"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    shown = path.replace("\n", "\\x0a")
    assert (
        err == f"optests check: error: TORCHINDUCTOR_CACHE_DIR={shown}: cannot be created: Not a directory (ENOTDIR); {ADVICE}\n"
    )


def test_torch_s_default_directory_is_checked_when_the_variable_is_not_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(_a_file(tmp_path)))  # torch's default lies under it
    default, given = inductor.cache_dir()
    assert (Path(default).parent, given) == (tmp_path / "file", False)
    with pytest.raises(inductor.CacheDirError) as raised:
        inductor.check_cache_dir()
    assert str(raised.value) == (
        f"{default} (torch's default for TORCHINDUCTOR_CACHE_DIR, which is not set): "
        f"cannot be created: Not a directory (ENOTDIR); {ADVICE}"
    )
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "new" / "cache"))  # missing: made, as torch would
    inductor.check_cache_dir()
    assert (tmp_path / "new" / "cache").is_dir() and not any((tmp_path / "new" / "cache").iterdir())


@pytest.mark.parametrize("kind", BAD)
def test_the_sweep_stops_with_a_usage_error_for_a_cache_directory_torch_cannot_use(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    install_sweep(pytester.path)
    path, said = _bad(kind, pytester.path)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(path))
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--optests-ops=sin", "--optests-modes=static", "--optests-compile-cache=shared"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.errlines if line.strip()] == [f"ERROR: TORCHINDUCTOR_CACHE_DIR={path}: {said}; {ADVICE}"]


@pytest.mark.parametrize("kind", ["under a file", "a dangling link"])
def test_the_sweep_stops_with_a_usage_error_for_a_compile_cache_folder_torch_cannot_use(
    pytester: pytest.Pytester, kind: str
) -> None:
    install_sweep(pytester.path)
    path, said = _bad(kind, pytester.path)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--optests-ops=sin", "--optests-modes=static", f"--optests-compile-cache={path}"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.errlines if line.strip()] == [f"ERROR: --optests-compile-cache={path}: {said}; {ADVICE}"]


# -- a backend that cannot run on this machine ---------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
TRIVIAL = "cannot run on this machine: compiling and calling a trivial function with it"

#: Backends that cannot run here, and how the line goes on after ``TRIVIAL``.
UNRUNNABLE = {
    "dynamo:tvm": " raised BackendCompilerFailed: backend='tvm' raised ImportError: Please install apache-tvm",
    "dynamo:openxla": " raised BackendCompilerFailed: backend='openxla' raised ",
    "tests.user_backends:broken": " raised BackendCompilerFailed: backend='broken' raised RuntimeError: no device for this "
    "backend on this machine",
    "tests.user_backends:aborts": " crashed: the process running it died with signal SIGKILL",
}


@pytest.fixture
def unprobed(monkeypatch: pytest.MonkeyPatch) -> None:
    """No backend preflighted yet in this process; ``tests.user_backends`` importable."""
    from optests import _backends

    monkeypatch.setattr(_backends, "_RUNNABLE", set())
    monkeypatch.syspath_prepend(str(ROOT))


@pytest.mark.usefixtures("unprobed")
@pytest.mark.parametrize("backend", UNRUNNABLE)
def test_check_refuses_a_backend_that_cannot_run_here_in_one_line(capsys: pytest.CaptureFixture[str], backend: str) -> None:
    code = cli.main(["check", "sin", "--backends", f"aot_eager,{backend}", "--transforms", "none", "--modes", "static"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), out + err
    assert err.startswith(f"optests check: error: backends: backend {backend!r} {TRIVIAL}{UNRUNNABLE[backend]}"), err
    assert err.count("\n") == 1, err


@pytest.mark.usefixtures("unprobed")
def test_check_op_refuses_it_and_a_runnable_backend_is_preflighted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import optests
    from optests import _backends
    from optests._author import AuthorError

    with pytest.raises(AuthorError, match=f"^backends: backend 'dynamo:tvm' {TRIVIAL} raised "):
        optests.check_op("sin", backends=["dynamo:tvm"], modes=["static"], transforms="none")
    optests.check_op("sin", backends=["dynamo:eager"], modes=["static"], transforms="none", select="first:1")
    assert _backends._RUNNABLE == {"dynamo:eager"}  # the default is not asked; a runnable one once


@pytest.mark.usefixtures("unprobed")
@pytest.mark.parametrize("backend", ["dynamo:tvm", "tests.user_backends:aborts"])
def test_the_sweep_stops_before_any_test_and_accept_records_nothing(pytester: pytest.Pytester, backend: str) -> None:
    install_sweep(pytester.path)
    registry = pytester.path / "expected_failures.json"
    registry.write_text('{"entries": [], "schema_version": 1}\n')
    before = registry.read_text()
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--optests-ops=sin", "--optests-modes=static", f"--optests-backends={backend}",
        "--optests-accept", "--optests-results=r.json",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.outlines
    errors = [line for line in result.errlines if line.strip()]
    assert len(errors) == 1 and errors[0].startswith(f"ERROR: --optests-backends: backend {backend!r} {TRIVIAL}"), errors
    assert registry.read_text() == before
    assert not (pytester.path / "r.json").exists()


def test_inductor_without_a_c_compiler_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """The machine's C++ compiler out of ``PATH`` (only the interpreter's folder on it)."""
    done = subprocess.run(
        [sys.executable, "-m", "optests.cli", "check", "sin", "--backends", "inductor", "--transforms", "none"],
        env={**os.environ, "PATH": str(Path(sys.executable).parent), "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, ""), done.stdout + done.stderr
    assert done.stderr.startswith(f"optests check: error: backends: backend 'inductor' {TRIVIAL} raised "), done.stderr
    assert "No working C++ compiler found" in done.stderr and done.stderr.count("\n") == 1, done.stderr
