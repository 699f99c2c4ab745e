"""A sequence of calls on one compiled function (the ``sequence`` call pattern): compiled once
with ``torch.compile`` and the key's backend as a Dynamo backend, never reset between calls,
each call compared with eager by :func:`._orchestration._check_once`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Literal

import torch

from .._backends import dynamo_backend
from .._backends.dynamo import translated
from .._findings import EagerFailure, Finding, SequenceMismatch
from .._patterns import DEFAULT_PATTERN
from .._patterns.grad_mode import GradMode
from .._patterns.single import Single
from ..errors import GraphBreak, Unsupported
from ._options import CheckOptions, _Checking
from ._trace import _TensorCall

#: What a compiled call raises where the marks on its inputs ask what the op's shapes cannot give
#: (a marked dim the op specializes; a guard on an unbacked size), or where Dynamo does not
#: support a module hook under ``fullgraph``: the call is dropped, as one eager rejects is; so is a
#: later call Dynamo cannot compile as one graph (a graph break: its coverage, not a stale answer),
#: and a first call it cannot makes the sequence not applicable.
_REFUSED_MARKS = (
    "Constraints violated",
    "ConstraintViolation",
    "data-dependent",
    "GuardOnDataDependentSymNode",
    "unbacked",
)
_REFUSED_HOOKS = ("hooks require compiled autograd", "backward hook", "Backward hook")

#: Recompiles a sequence may make before Dynamo falls back to eager (its default is 8). Dynamo's
#: guards on module hooks are on (``skip_nnmodule_hook_guards=False``): by default a hook added
#: after the first call is ignored, as documented, which would be a finding on every module.
_RECOMPILE_LIMIT = 64


def _marks(tensors: list[torch.Tensor], mark: str) -> None:
    """``mark`` (``mark_dynamic``, ``mark_unbacked`` or ``maybe_mark_dynamic``) on every dim of
    size >= 2 of each tensor."""
    if mark == "mark_unbacked":
        marker: Callable[[torch.Tensor, int], None] = torch._dynamo.decorators.mark_unbacked
    else:
        marker = getattr(torch._dynamo, mark)
    for t in tensors:
        for d, s in enumerate(t.shape):
            if s >= 2:
                marker(t, d)


def _through(compiled: Callable[..., Any], call: _TensorCall, mark: str) -> Callable[[list[torch.Tensor]], Any]:
    """The compiled function as the check calls it (on the list of the call's tensors)."""

    def run(tensors: list[torch.Tensor]) -> Any:
        if mark:
            _marks(tensors, mark)
        args, kwargs = call.rebuild(tensors)
        return translated(compiled, args, kwargs)

    return run


def _compiles() -> int:
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def _check_sequence(
    call: _TensorCall,
    options: CheckOptions,
    opts: _Checking,
    check_once: Callable[[_TensorCall, Callable[..., Any], list[torch.Tensor], _Checking], bool],
) -> list[str]:
    """The sequence :attr:`_Checking.pattern` makes of ``call`` (a
    :class:`optests._patterns.sequence.Sequence`): the first call judged as the single call is
    (its own stages), each later call's finding a :class:`SequenceMismatch` naming the call and
    what changed (``check_once``: :func:`._orchestration._check_once`, one call compared).
    Returns the notes: each call's, and how many calls and Dynamo compiles it made."""

    steps = opts.pattern.steps(call.func, *call.rebuild(call.tensors))  # type: ignore[attr-defined]
    func = steps.func

    def body(args: Any, kwargs: Any) -> Any:
        return func(*args, **kwargs)

    single = dataclasses.replace(options, pattern=DEFAULT_PATTERN, try_check_data_specialization=False)
    torch._dynamo.reset()
    start = _compiles()
    backend = dynamo_backend(options.backend, disable_functionalization=options.disable_functionalization)
    compiled = torch.compile(body, backend=backend, fullgraph=True, dynamic=None)
    first = _TensorCall(func, *call.rebuild(call.tensors))
    notes: list[str] = []
    with torch._dynamo.config.patch(recompile_limit=_RECOMPILE_LIMIT, skip_nnmodule_hook_guards=False):
        first_opts = _Checking(single, opts.context, Single(), notes)
        try:
            check_once(
                first, _through(compiled, first, "maybe_mark_dynamic" if options.dynamic else ""), list(first.tensors), first_opts
            )
        except Finding as f:
            f.inputs = call.rebuild(call.tensors)
            if isinstance(f.__cause__, GraphBreak):  # Dynamo's coverage, not a call's answer: no sequence to make
                f.__cause__ = Unsupported(f"Dynamo cannot compile the first call as one graph: {f.__cause__}")
            raise
        made, dropped, previous = 1, [], steps.first
        for n, step in enumerate(steps.later, 1):
            if step.before is not None:
                step.before(func)
            later = _TensorCall(func, step.args, step.kwargs)
            # a later call's inputs may require no grad: gradients where some input and output do
            wanted: bool | Literal["auto"] = False if options.check_gradients is False or step.grad_mode is not None else "auto"
            checking = dataclasses.replace(single, check_gradients=wanted)
            pattern = GradMode(step.grad_mode) if step.grad_mode is not None else Single()
            step_opts = _Checking(checking, opts.context, pattern, [])
            try:
                check_once(later, _through(compiled, later, step.mark), list(later.tensors), step_opts)
            except EagerFailure:
                dropped.append(n)  # not a valid call: eager rejects it
                continue
            except Finding as f:
                said = str(f.__cause__ or "")
                refused = _REFUSED_MARKS if step.mark else _REFUSED_HOOKS if step.hook else ()
                if isinstance(f.__cause__, GraphBreak) or (f.what == "compiled call" and any(text in said for text in refused)):
                    dropped.append(n)
                    continue
                compiles = _compiles() - start
                finding = SequenceMismatch(
                    f"call {n} ({step.label} after {previous}): {f.what}",
                    f.actual,
                    f.expected,
                    f.context,
                    detail=f"[{f.stage}, on call {n} of the sequence, after {made} calls and {compiles} Dynamo compiles "
                    f"on one compiled function] {f.detail}".rstrip(),
                )
                finding.inputs = call.rebuild(call.tensors)
                raise finding from f
            notes += [f"call {n}: {note}" for note in step_opts.notes]
            made, previous = made + 1, step.label
    skipped = f" ({len(dropped)} dropped: {', '.join(map(str, dropped))})" if dropped else ""
    calls = f"{made} call" + ("s" if made != 1 else "")
    notes.append(f"sequence: {calls}{skipped}, {_compiles() - start} Dynamo compiles")
    return notes
