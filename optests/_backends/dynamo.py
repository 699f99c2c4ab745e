"""Backends through Dynamo: ``torch.compile(fn, backend=..., fullgraph=True, dynamic=...)``, as a
user of ``torch.compile`` runs one. ``dynamo:NAME`` names any backend in
``torch._dynamo.list_backends(exclude_tags=())``; ``inductor`` and a user's own backend
(``MODULE:ATTRIBUTE``) compile this way too.

Dynamo traces the Python call before the backend sees a graph. With ``fullgraph=True`` a graph
break is an error: it is raised as :class:`GraphBreak`, whose message says so, and the check
reports it at stage ``trace`` (a finding, not a crash). A backend that raises while it compiles
Dynamo's graph is raised as :class:`BackendCompilerFailed`, whose one-line message keeps what the
backend raised (its type and first line): torch's own keeps it on later lines, which findings,
records and registry reasons leave out.

``torch.compile`` has no switch to turn functionalization off: the ``-nofunc`` modes do not
apply, and a run that asks for them under such a backend is refused before it starts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._findings import error_line
from ..errors import BackendCompilerFailed as BackendCompilerFailed
from ..errors import GraphBreak as GraphBreak


class Dynamo:
    """``torch.compile`` with ``backend`` (a registered name, or a backend callable)."""

    nofunc = False
    #: What the backend generates draws random numbers its own way (unknown: assume so).
    same_random = False
    opinfo_test = "TestEagerFusionOpInfo"
    free_strides: frozenset[str] = frozenset()

    def __init__(self, backend: str | Callable[..., Any]) -> None:
        self.backend = backend

    def compile(self, fn: Callable[..., Any], *, dynamic: bool, disable_functionalization: bool) -> Callable[..., Any]:
        import torch

        if disable_functionalization:
            raise ValueError(f"backend {self.backend!r} cannot compile without functionalization (torch.compile)")

        def call(tensors: Any) -> Any:
            return fn(tensors)

        compiled = torch.compile(call, backend=self.backend, fullgraph=True, dynamic=dynamic)

        def run(tensors: Any) -> Any:
            return translated(compiled, tensors)

        return run


def translated(compiled: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``compiled(*args, **kwargs)`` (a ``torch.compile``'d function), a graph break raised as
    :class:`GraphBreak` and a backend's failure as :class:`BackendCompilerFailed`, in one line."""
    import torch

    try:
        return compiled(*args, **kwargs)
    except torch._dynamo.exc.Unsupported as e:
        lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
        raise GraphBreak(f"graph break (fullgraph=True): {lines[0] if lines else type(e).__name__}") from e
    except torch._dynamo.exc.BackendCompilerFailed as e:
        cause = e.inner_exception if e.inner_exception is not None else e.__cause__
        said = error_line(cause) if cause is not None else "an error"
        raise BackendCompilerFailed(f"backend={e.backend_name!r} raised {said}") from e
