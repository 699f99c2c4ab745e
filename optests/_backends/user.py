"""A user's own backend, given as ``MODULE:ATTRIBUTE``: a ``torch.compile`` backend callable
``(gm, example_inputs) -> callable``, run through ``torch.compile(fn, backend=it, fullgraph=True,
dynamic=...)`` (:class:`optests._backends.dynamo.Dynamo`). The module is imported where the
name is first resolved (``optests._backends.get_backend``), in every process that checks: it must
be importable there (``optests check`` puts the working directory on ``sys.path``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._imports import ImportFailed, import_module
from .dynamo import Dynamo


class User(Dynamo):
    """``torch.compile`` with the callable ``spec`` names."""

    def __init__(self, spec: str, backend: Callable[..., Any]) -> None:
        super().__init__(backend)
        self.spec = spec


def resolve(spec: str) -> User:
    """The backend ``MODULE:ATTRIBUTE`` names; a ``ValueError`` saying what is wrong, in one line."""
    module_name, _, attribute = spec.partition(":")
    try:
        module = import_module(module_name)
    except ImportFailed as e:  # whatever it raised, sys.exit too
        raise ValueError(f"backend {spec!r}: module {module_name} cannot be imported ({e.summary})") from None
    backend = getattr(module, attribute, None)
    if backend is None:
        raise ValueError(f"backend {spec!r}: module {module_name} has no attribute {attribute!r}")
    if not callable(backend):
        raise ValueError(
            f"backend {spec!r}: {type(backend).__name__} is not callable, but expected a torch.compile backend "
            "(gm, example_inputs) -> callable"
        )
    return User(spec, backend)
