"""torch.compile backends for the tests, given to optests as ``tests.user_backends:NAME``
(``MODULE:ATTRIBUTE``, importable from the repository's root)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def faithful(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> Callable[..., Any]:
    """Runs Dynamo's graph as it is."""
    return gm.forward


def sin_as_cos(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> Callable[..., Any]:
    """Miscompiles on purpose: every sin in the graph becomes a cos."""
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in (torch.sin, torch.ops.aten.sin.default):
            node.target = torch.cos
        elif node.op == "call_method" and node.target == "sin":
            node.target = "cos"
    gm.recompile()
    return gm.forward


#: Not a backend: not callable.
not_callable = 3


def reseeded(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> Callable[..., Any]:
    """Faithful, but draws random numbers from another seed than eager's: as inductor does."""

    def run(*args: Any) -> Any:
        torch.manual_seed(7)
        return gm.forward(*args)

    return run


def upcast(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> Callable[..., Any]:
    """Computes float16 in float32, rounding once at the end: as inductor does."""

    def run(*args: Any) -> Any:
        wide = [a.float() if isinstance(a, torch.Tensor) and a.dtype == torch.float16 else a for a in args]
        out = gm.forward(*wide)
        return [o.half() if isinstance(o, torch.Tensor) and o.dtype == torch.float32 else o for o in out]

    return run


def leaves_grad_off(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> Callable[..., Any]:
    """Faithful, but turns grad mode off after each call, and leaves it off."""

    def run(*args: Any) -> Any:
        out = gm.forward(*args)
        torch.set_grad_enabled(False)
        return out

    return run


class Odd(BaseException):
    """Neither an ``Exception`` nor ``SystemExit`` nor ``KeyboardInterrupt``."""


def _calls(gm: torch.fx.GraphModule, name: str) -> bool:
    """Whether graph ``gm`` calls the op ``name`` (``torch.NAME``, ``aten.NAME``, ``x.NAME()``)."""
    ops = {getattr(torch, name), getattr(torch.ops.aten, name).default}
    return any(node.target in ops or (node.op == "call_method" and node.target == name) for node in gm.graph.nodes)


def _raising(error: BaseException) -> Callable[..., Any]:
    """A backend that raises ``error`` compiling a graph that calls sin, and compiles any other: it
    runs here (the preflight's trivial function passes), and fails the samples of sin."""

    def backend(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> Callable[..., Any]:
        if _calls(gm, "sin"):
            raise error
        return gm.forward

    return backend


#: Backends that raise, as they compile sin, what ends a process: findings of theirs, not errors of optests.
exits = _raising(SystemExit(3))
interrupts = _raising(KeyboardInterrupt())
raises_odd = _raising(Odd("odd"))


def refuses_cos(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> Callable[..., Any]:
    """Raises while compiling a graph that calls cos (a message of two lines); compiles any other."""
    if _calls(gm, "cos"):
        raise NotImplementedError("cos is not supported here\n(a second line)")
    return gm.forward


def broken(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> Callable[..., Any]:
    """Cannot run here at all: raises whatever it compiles, as a backend whose device is missing."""
    raise RuntimeError("no device for this backend on this machine")


def aborts(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> Callable[..., Any]:
    """Kills the process compiling anything, as a backend whose native library is broken."""
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")


#: The first graph each frame compiled to, by Dynamo's frame id (:func:`stale_on_recompile`).
_FIRST: dict[int | None, Callable[..., Any]] = {}


def stale_on_recompile(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> Callable[..., Any]:
    """Miscompiles on purpose, on a recompile only: Dynamo's ``aot_eager``, but it caches what it
    compiled of the first graph of each frame and returns that for every later graph of the
    frame, as if no guard had failed (a single call per compiled function never shows it)."""
    from torch._dynamo.backends.registry import lookup_backend

    compile_id = torch._guards.CompileContext.current_compile_id()
    frame, count = (compile_id.frame_id, compile_id.frame_compile_id) if compile_id is not None else (None, 0)
    if not count or frame not in _FIRST:
        _FIRST[frame] = lookup_backend("aot_eager")(gm, example_inputs)
    return _FIRST[frame]
