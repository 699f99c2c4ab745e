"""``optests.errors`` holds every exception class optests defines, under one root."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys

import optests
import optests.errors

#: Exception classes that never leave the module that defines them, and so are not a user's to
#: meet: each is control flow inside one function's reach, caught where it is raised.
PRIVATE = {
    # a BaseException on purpose: the signal handler of an atomic write raises it to unwind the
    # write and then re-raises the signal; an `except Exception` must not swallow a kill
    "optests._files._Killed",
    # the streaming results reader's "leave this file to the whole-file reader", caught in _results
    "optests._results._Odd",
}


def _defined() -> dict[str, type[BaseException]]:
    """Every exception class defined in a module of the package, by its qualified name."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(optests.__path__, "optests."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__.startswith("optests"):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def test_optests_errors_holds_every_exception_class_of_the_package() -> None:
    defined = _defined()
    assert PRIVATE <= set(defined)  # each is still there (else drop it from PRIVATE)
    held = {value for value in vars(optests.errors).values() if inspect.isclass(value)}
    missing = sorted(name for name, cls in defined.items() if name not in PRIVATE and cls not in held)
    assert not missing, f"define these in optests/errors.py (and import them where they are raised): {missing}"


def test_every_error_shares_the_root_and_every_finding_is_an_assertion_error() -> None:
    exported = [getattr(optests.errors, name) for name in optests.errors.__all__]
    for cls in exported:
        assert issubclass(cls, optests.errors.OptestsError) != issubclass(cls, optests.errors.Finding), cls
    assert issubclass(optests.errors.Finding, AssertionError)
    assert not issubclass(optests.errors.Finding, optests.errors.OptestsError)  # the contract: a finding is a result


def test_optests_errors_exports_exactly_its_public_classes() -> None:
    public = {
        name
        for name, value in vars(optests.errors).items()
        if inspect.isclass(value) and issubclass(value, BaseException) and not name.startswith("_")
    }
    assert set(optests.errors.__all__) == public
    assert {name for name in optests.__all__ if name in public} <= public  # the package's own exports are among them


def test_optests_errors_imports_no_torch() -> None:
    code = "import sys, optests.errors; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
