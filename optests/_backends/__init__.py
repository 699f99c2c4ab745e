"""Backends: the compile step of the check, one module per backend, looked up by name in
:data:`BACKENDS`. Torch-free to import (a backend imports its compiler when it compiles), so
that the sweep's settings can validate ``--optests-backends`` without torch.

A backend's name is part of a sample's identity (``SampleKey.backend``): ids, results records and
registry scopes of any backend but :data:`DEFAULT_BACKEND` carry it (``docs/contract.md``, "Sample ids").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

from .._key import BACKEND_NAME, DEFAULT_BACKEND
from .aot_eager import AotEager

__all__ = ["BACKENDS", "DEFAULT_BACKEND", "NAME", "Backend", "get_backend", "register"]


class Backend(Protocol):
    """Compiles the check's wrapper. The check (:func:`optests._check._check_call`) calls
    :meth:`compile` once per check, then calls what it returns on fresh copies of the inputs,
    under the same RNG seed as eager, and takes gradients through it."""

    def compile(self, fn: Callable[..., Any], *, dynamic: bool, disable_functionalization: bool) -> Callable[..., Any]:
        """``fn`` compiled. ``fn`` takes one argument, the list of the call's tensors, and returns
        the call's output; so must the result. ``dynamic``: trace with symbolic shapes;
        ``disable_functionalization``: the ``-nofunc`` modes. A failure to compile may raise here
        or when the result is first called: either is a ``trace`` finding."""
        ...


#: Backends by name. :func:`register` adds one.
BACKENDS: dict[str, Backend] = {DEFAULT_BACKEND: AotEager()}

#: What a backend's name may be: it ends a sample id after ``@`` (``...-sample3@inductor``).
NAME = re.compile(rf"^{BACKEND_NAME}$")


def register(name: str, backend: Backend) -> None:
    """Make ``backend`` known as ``name`` (in every process that checks: register it where the
    sweep's conftest or the module ``--import`` names runs)."""
    if not NAME.match(name):
        raise ValueError(f"backend name {name!r}: expected letters, digits, '_', '.' or ':', not starting with a digit")
    BACKENDS[name] = backend


def get_backend(name: str) -> Backend:
    """The backend registered as ``name``; a ``ValueError`` naming the known ones."""
    backend = BACKENDS.get(name)
    if backend is None:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(BACKENDS)}")
    return backend
