"""What users wrap around the compiled call: operators and torch.compile backends whose bug only
one of the patterns ``func``, ``checkpoint``, ``hooks``, ``inplace-between`` and ``rng`` shows,
and correct ones of the same shapes. Each bug passes the plain check; the check flags it, at the
stage given, on the samples its pattern derives. Backends are given to optests as
``wrap_corpus:NAME`` (``MODULE:ATTRIBUTE``; the tests' directory is importable)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

NS = "optests_wcorpus"

Make = Callable[[], tuple[list[Any], dict[str, Any]]]


@dataclass(frozen=True)
class Case:
    func: Callable[..., Any]
    make: Make
    #: the call pattern whose derived samples show the bug (None: a correct case)
    pattern: str
    #: the stage the check flags it at ("" for a correct case)
    stage: str
    #: the backend it is checked with
    backend: str = "aot_eager"


def _tensors(*shapes: tuple[int, ...], low: float | None = None) -> Make:
    def make() -> tuple[list[Any], dict[str, Any]]:
        torch.manual_seed(0)
        made = [torch.rand(*s) + low if low is not None else torch.randn(*s) for s in shapes]
        return [t.requires_grad_() for t in made], {}

    return make


# -- func: a fake kernel that assumes the rank its tests gave it; vmap adds a dim ----------------------


def _register_scale(name: str, fake: Callable[[torch.Tensor], torch.Tensor]) -> Callable[..., Any]:
    @torch.library.custom_op(f"{NS}::{name}", mutates_args=())
    def op(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    op.register_fake(fake)
    op.register_autograd(lambda ctx, grad: grad * 2)

    def batched(info: Any, in_dims: tuple[int | None], x: torch.Tensor) -> tuple[torch.Tensor, int | None]:
        if in_dims[0] is None:
            return op(x), None
        return op(x.movedim(in_dims[0], 0)), 0

    torch.library.register_vmap(f"{NS}::{name}", batched)
    return op


#: 2 x; its fake kernel says the output is 2-D (the last two dims), right for the 2-D inputs it was
#: tested with, wrong for the 3-D ones vmap's batching rule passes it.
matrix_scale = _register_scale("matrix_scale", lambda x: x.new_empty(x.shape[-2:]))
#: The same op with a right fake kernel.
good_scale = _register_scale("good_scale", lambda x: torch.empty_like(x))


def scale_matrix(x: torch.Tensor) -> torch.Tensor:
    out: torch.Tensor = matrix_scale(x)
    return out


def scale_good(x: torch.Tensor) -> torch.Tensor:
    out: torch.Tensor = good_scale(x)
    return out


# -- rng: a composite that draws a seed for its fused kernel only while it is compiled ------------------


def seeded_double(x: torch.Tensor) -> torch.Tensor:
    """2 x. Compiled, it first draws a seed from the global generator (for a fused kernel that
    then ignores it): random numbers drawn after a compiled call differ from eager's."""
    if torch.compiler.is_compiling() or torch._subclasses.fake_tensor.is_fake(x):
        seed = torch.randint(0, 2**31 - 1, (), device=x.device)
        return x * (2 + seed * 0)  # x * 2 to the bit, signed zeros included
    return x * 2


def dropout(x: torch.Tensor) -> torch.Tensor:
    """A correct random op: compiled code draws as eager does."""
    return torch.nn.functional.dropout(x, 0.5)


def sin_times(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Saves both inputs for its backward: eager refuses a backward after either changed."""
    return x.sin() * y


def times3(x: torch.Tensor) -> torch.Tensor:
    return x * 3


# -- backends: Dynamo's graph run through an autograd.Function of the backend's own ----------------------


def _graph_function(gm: torch.fx.GraphModule, *, versioned: bool, ones: bool, recompute_otherwise: bool) -> Callable[..., Any]:
    """``gm`` as one autograd node that recomputes ``gm`` in its backward. ``versioned``: it saves
    its inputs with ``save_for_backward`` (else as attributes of ``ctx``: no version check);
    ``ones``: its backward uses tangents of ones, whatever gradient comes in;
    ``recompute_otherwise``: called while a backward runs (a checkpoint's recomputation), it
    computes with its inputs scaled."""

    class Graph(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *args: Any) -> Any:
            if recompute_otherwise and torch._C._current_graph_task_id() != -1:
                args = tuple(a * 1.5 if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args)
            ctx.args = [None if isinstance(a, torch.Tensor) else a for a in args]  # sizes (dynamic shapes)
            tensors = [a for a in args if isinstance(a, torch.Tensor)]
            if versioned:
                ctx.save_for_backward(*tensors)
            else:
                ctx.inputs = tensors
            return tuple(gm(*args))

        @staticmethod
        def backward(ctx: Any, *grads: torch.Tensor) -> Any:
            saved: Sequence[torch.Tensor] = ctx.saved_tensors if versioned else ctx.inputs
            fresh = iter([t.detach().requires_grad_(t.is_floating_point()) for t in saved])
            args = [next(fresh) if a is None else a for a in ctx.args]
            with torch.enable_grad():
                outs = gm(*args)
            pairs = [(o, g) for o, g in zip(outs, grads) if isinstance(o, torch.Tensor) and o.requires_grad]
            wanted = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
            found = torch.autograd.grad(
                [o for o, _ in pairs], wanted, [torch.ones_like(o) if ones else g for o, g in pairs], allow_unused=True
            )
            by_input = dict(zip(map(id, wanted), found))
            return tuple(by_input.get(id(a)) for a in args)

    def run(*args: Any) -> Any:
        return list(Graph.apply(*args))  # type: ignore[no-untyped-call]

    return run


def unversioned_saves(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> Callable[..., Any]:
    """Keeps its inputs for the backward as attributes, not ``save_for_backward``: a backward after
    an input changed in place silently reads the new values where eager refuses."""
    return _graph_function(gm, versioned=False, ones=False, recompute_otherwise=False)


def ones_tangents(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> Callable[..., Any]:
    """Its backward assumes the tangents of ``.sum()`` (ones): a hook that changes an output's
    gradient is ignored."""
    return _graph_function(gm, versioned=True, ones=True, recompute_otherwise=False)


def recomputes_otherwise(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> Callable[..., Any]:
    """Computes otherwise when called during a backward: a checkpoint's recomputation saves
    other values than the forward."""
    return _graph_function(gm, versioned=True, ones=False, recompute_otherwise=True)


def faithful(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> Callable[..., Any]:
    """The same autograd.Function, right."""
    return _graph_function(gm, versioned=True, ones=False, recompute_otherwise=False)


BUGS: dict[str, Case] = {
    "vmap_fake_rank": Case(scale_matrix, _tensors((3, 4)), "func", "metadata"),
    "rng_seed_draw": Case(seeded_double, _tensors((3, 4)), "rng", "forward"),
    "inplace_unversioned": Case(
        sin_times, _tensors((3, 4), (3, 4)), "inplace-between", "backward", "wrap_corpus:unversioned_saves"
    ),
    "hook_ignored": Case(times3, _tensors((3, 4), low=1.0), "hooks", "backward", "wrap_corpus:ones_tangents"),
    "checkpoint_recompute": Case(
        sin_times, _tensors((3, 4), (3, 4)), "checkpoint", "backward", "wrap_corpus:recomputes_otherwise"
    ),
}

CORRECT: dict[str, Case] = {
    "vmap_fake_rank": Case(scale_good, _tensors((3, 4)), "func", ""),
    "rng_seed_draw": Case(dropout, _tensors((3, 4)), "rng", ""),
    "inplace_unversioned": Case(sin_times, _tensors((3, 4), (3, 4)), "inplace-between", "", "aot_eager"),
    "hook_ignored": Case(times3, _tensors((3, 4), low=1.0), "hooks", "", "wrap_corpus:faithful"),
    "checkpoint_recompute": Case(sin_times, _tensors((3, 4), (3, 4)), "checkpoint", "", "wrap_corpus:faithful"),
}
