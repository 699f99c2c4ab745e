"""The call as a function of its tensors, and what the trace saw the first time AOTAutograd called it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.utils._pytree as pytree

from ._metadata import _Meta, _meta


@dataclass(frozen=True)
class _TraceRecord:
    """What the trace saw the first time AOTAutograd called the wrapper (the functionalized
    metadata pass): output metadata as the fake/meta kernels predicted it, and per input
    whether the traced program mutates it, its data or only its sizes and strides (``t_``,
    ``unsqueeze_``, ``as_strided_``, which AOTAutograd replays on the input too), and whether it
    writes its data (None: unknown, e.g. not functionalized)."""

    outputs: tuple[tuple[str, _Meta | None], ...]
    mutated: tuple[bool | None, ...]
    written: tuple[bool | None, ...]


def _traced_mutation(t: torch.Tensor, *, data_only: bool = False) -> bool | None:
    """Whether the traced program mutates this input: its data, or (unless ``data_only``) its
    sizes and strides."""
    from torch._subclasses.functional_tensor import FunctionalTensor

    if not isinstance(t, FunctionalTensor):
        return None
    data = bool(torch._functionalize_has_data_mutation(t.elem))  # type: ignore[attr-defined]
    return data or (not data_only and bool(torch._functionalize_has_metadata_mutation(t.elem)))


class _TensorCall:
    """``func(*args, **kwargs)`` as a function of the tensors in ``(args, kwargs)`` only;
    non-tensor leaves stay baked in. Records the first call AOTAutograd traces."""

    def __init__(self, func: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        self.func = func
        paths_and_leaves, self.spec = pytree.tree_flatten_with_path((tuple(args), dict(kwargs)))
        self.leaves = [leaf for _, leaf in paths_and_leaves]
        self.positions = [i for i, leaf in enumerate(self.leaves) if isinstance(leaf, torch.Tensor)]
        self.tensors: list[torch.Tensor] = [self.leaves[i] for i in self.positions]
        self.names = [_input_name(paths_and_leaves[i][0]) for i in self.positions]
        self.trace: _TraceRecord | None = None
        #: What a call pattern wraps around the call (``optests._patterns.base.BODY``): the
        #: function both eager and the backend run is ``body(call)``; None: the call itself.
        self.body: Callable[[Callable[[Sequence[torch.Tensor]], Any]], Callable[[Sequence[torch.Tensor]], Any]] | None = None

    def within(
        self, body: Callable[[Callable[[Sequence[torch.Tensor]], Any]], Callable[[Sequence[torch.Tensor]], Any]]
    ) -> _TensorCall:
        """This call with ``body`` wrapped around it (:attr:`body`), as a new call."""
        wrapped = _TensorCall(self.func, *pytree.tree_unflatten(self.leaves, self.spec))
        wrapped.body = body
        return wrapped

    def rebuild(self, tensors: Sequence[torch.Tensor]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``(args, kwargs)`` with these tensors in place of the original ones."""
        leaves = list(self.leaves)
        for pos, t in zip(self.positions, tensors):
            leaves[pos] = t
        args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return args, kwargs

    def eager(self, tensors: Sequence[torch.Tensor]) -> Any:
        if self.body is not None:
            return self.body(self._plain)(tensors)
        return self._plain(tensors)

    def _plain(self, tensors: Sequence[torch.Tensor]) -> Any:
        args, kwargs = self.rebuild(tensors)
        return self.func(*args, **kwargs)

    def __call__(self, tensors: Sequence[torch.Tensor]) -> Any:
        # Only a backend calls this (our eager runs call `eager`), so the inputs are traced. Dynamo
        # traces the Python itself: it records nothing (it would break the graph), and no trace is kept.
        out = self.eager(tensors)
        # under a torch.func transform around the compiled call (``func``) the tensors traced
        # are per-example, not what the call returns: no trace is kept either
        transformed = torch._C._functorch.peek_interpreter_stack() is not None
        if self.trace is None and not torch.compiler.is_dynamo_compiling() and not transformed:
            self.trace = _TraceRecord(
                outputs=tuple(
                    (name, _meta(leaf, tensors) if isinstance(leaf, torch.Tensor) else None) for name, leaf in _output_leaves(out)
                ),
                mutated=tuple(_traced_mutation(t) for t in tensors),
                written=tuple(_traced_mutation(t, data_only=True) for t in tensors),
            )
        return out


def _input_name(path: tuple[Any, ...]) -> str:
    head, rest = path[0], path[1:]
    root = "args" if getattr(head, "idx", 0) == 0 else "kwargs"
    return root + pytree.keystr(rest)


def _output_leaves(out: Any) -> list[tuple[str, Any]]:
    return [("out" + pytree.keystr(path), leaf) for path, leaf in pytree.tree_flatten_with_path(out)[0]]
