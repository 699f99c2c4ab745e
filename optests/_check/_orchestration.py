"""The check proper: eager vs compiled on the call's inputs, then on randomized data."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.utils._pytree as pytree

from .._findings import BackwardMismatch, EagerFailure, Finding, ForwardMismatch, RandomizedMismatch, error_line
from .._patterns import DEFAULT_PATTERN, Called, DependsOnCpu, Unsupported, get_pattern
from .._patterns.base import BODY, EAGER_LIMITS, RECOMPUTES, UNCHANGED
from ._comparisons import COMPARISONS, _Compared
from ._copies import _copies, _donor_values, _identical
from ._float64 import _Float64Reference
from ._messages import _dtype, _finding_factory
from ._options import CheckOptions, _Checking
from ._running import (
    _RANDOM_DATA_SEED,
    _called,
    _compile,
    _draws_as_eager,
    _is_inductor,
    _random_draws,
    _Run,
    _seeded,
    _user_gradients,
)
from ._sequence import _check_sequence
from ._trace import _output_leaves, _TensorCall

_NO_GRAD_FN = "does not require grad and does not have a grad_fn"


#: What eager's kernels raise where this machine's CPU has no implementation of the call that another
#: CPU has: oneDNN's "could not create a primitive descriptor" (its bfloat16 LSTM without AVX-512),
#: the ``mkldnn_*`` kernels' "needs the cpu support ...", FBGEMM's "Your CPU does not support". A call
#: pattern's compiled call must refuse alike where eager refuses (:func:`_refused_alike`), but not
#: where the refusal is the machine's: what compiled code must do there depends on the CPU, so the
#: derived sample is not applicable (a verdict may not depend on the machine). The price: oneDNN
#: says the same of a call no CPU implements, which then hides a compiled call that goes through.
_MACHINE_REFUSAL = re.compile(
    r"could not create a primitive descriptor|needs the cpu support|Your CPU does(?:n't| not) support|on the platform with"
)


def _wants_gradients(opts: _Checking, inputs: Sequence[torch.Tensor], out: Any) -> bool:
    if opts.options.check_gradients != "auto":
        return bool(opts.options.check_gradients)
    return any(t.requires_grad for t in inputs) and any(
        isinstance(leaf, torch.Tensor) and leaf.requires_grad for leaf in pytree.tree_leaves(out)
    )


def _check_once(call: _TensorCall, compiled: Callable[..., Any], originals: list[torch.Tensor], opts: _Checking) -> bool:
    """One eager-vs-compiled comparison; raises a Finding. Returns whether gradients were checked."""
    fresh = opts.options.check_mutations
    make = _finding_factory(opts)
    pattern = opts.pattern

    eager = _Run(inputs=_copies(originals) if fresh else originals)
    try:
        eager.called = _called(pattern, call.eager, eager.inputs)
    except Exception as e:
        _refused_alike(compiled, originals, opts, e, None)
        raise make(EagerFailure, "eager call", f"raised {error_line(e)}", "no error") from e
    _same_on_every_cpu(call.eager, originals, eager.called, opts)
    if fresh and getattr(pattern, RECOMPUTES, False):
        _no_side_effects(call, originals, eager.inputs, opts)
    gradients = _wants_gradients(opts, eager.inputs, eager.out)
    if gradients:
        try:
            eager.grads = _user_gradients(pattern, eager.called, eager.inputs)
        except Exception as e:
            _refused_alike(compiled, originals, opts, None, e, call.eager)
            raise make(EagerFailure, "eager backward", f"raised {error_line(e)}", "no error") from e
        if all(g is None for g in eager.grads) and any(t.grad_fn is not None for t in originals):
            # Eager has no gradient to give; autograd must refuse the compiled call alike.
            inputs = _copies(originals) if fresh else originals
            try:
                with opts.options.assert_raises_regex_fn(RuntimeError, _NO_GRAD_FN):
                    _user_gradients(pattern, _called(pattern, compiled, inputs), inputs)
            except AssertionError as e:
                raise make(BackwardMismatch, "compiled backward", error_line(e), f"RuntimeError matching {_NO_GRAD_FN!r}") from e
            return True

    comp = _Run(inputs=_copies(originals) if fresh else originals)
    try:
        comp.called = _called(pattern, compiled, comp.inputs)
    except Exception as e:
        comp.error = e
    if comp.called is not None and gradients:
        try:
            comp.grads = _user_gradients(pattern, comp.called, comp.inputs)
        except Exception as e:
            comp.backward_error = e

    # the reference needs the values both runs started from: with check_mutations off, the
    # runs used the originals themselves, which an in-place op has changed by now
    tangents = eager.called.tangents
    truth = _Float64Reference(call, originals, gradients, pattern, tangents) if opts.options.float64_reference and fresh else None
    compared = _Compared(call, originals, eager, comp, opts, gradients, truth)
    for _, applies, compare in COMPARISONS:
        if applies(opts.options):
            compare(compared)
    return gradients


def _no_side_effects(call: _TensorCall, originals: list[torch.Tensor], after: list[torch.Tensor], opts: _Checking) -> None:
    """Under a pattern that recomputes the forward in the backward (``checkpoint``): a call that
    changes an input in place makes the sample not applicable. A checkpointed function must have
    no side effects; eager's recomputation writes the change again (``batch_norm``'s running
    stats are updated twice), a compiler's recomputation need not, and neither is the contract."""
    changed = [name for name, before, now in zip(call.names, originals, after) if not _identical(now, before)]
    if changed:
        raise _finding_factory(opts)(
            EagerFailure,
            "eager call",
            f"changed {', '.join(changed)} in place",
            "no side effects (the backward recomputes a checkpointed call)",
        ) from Unsupported(f"the call changes {', '.join(changed)} in place")


def _refused_alike(
    compiled: Callable[..., Any],
    originals: list[torch.Tensor],
    opts: _Checking,
    call: Exception | None,
    backward: Exception | None,
    eager: Callable[..., Any] | None = None,
) -> None:
    """Under a call pattern (not the default call), where eager's call (``call``) or backward
    (``backward``) raised: the compiled function must refuse alike. A compiled call that goes
    through is a finding, as any difference in which one raises; where it raises too, the sample
    is not applicable (the caller's eager failure), as where eager's refusal is this machine's
    (:data:`_MACHINE_REFUSAL`). The default call keeps eager's failure as the sample's precondition:
    a sample eager cannot run is no valid call. A pattern with an ``unchanged`` pattern (an input
    changed between the forward and the backward) lets a compiled backward go through whose
    gradients are ``eager``'s under ``unchanged``: it kept the values it needs, and used none of
    the new ones; where eager refuses under ``unchanged`` too, the compiled backward must refuse.
    Nor where eager's refusal is a limit of the pattern's own (its ``EAGER_LIMITS``: a kernel
    ``torch.func`` refuses in eager's body), as where it is this machine's."""
    refusal = str(call or backward)
    limits = getattr(opts.pattern, EAGER_LIMITS, None)
    if (
        opts.options.pattern == DEFAULT_PATTERN
        or _MACHINE_REFUSAL.search(refusal)
        or (limits is not None and limits.search(refusal))
    ):
        return
    inputs = _copies(originals)
    try:
        called = _called(opts.pattern, compiled, inputs)
        grads = _user_gradients(opts.pattern, called, inputs) if backward is not None else None
    except Exception:
        return
    make = _finding_factory(opts)
    unchanged = getattr(opts.pattern, UNCHANGED, None)
    if backward is not None and grads is not None and unchanged is not None and eager is not None:
        before = _copies(originals)
        try:
            expected = _user_gradients(unchanged, _called(unchanged, eager, before), before)
        except Exception:  # eager refuses without the change too: the refusal is not the change's
            raise make(
                BackwardMismatch, "compiled backward", "no error", f"raised {error_line(backward)} (as eager)"
            ) from backward
        try:
            torch.testing.assert_close(grads, expected, equal_nan=True)
        except AssertionError as e:
            draws = (
                None if _draws_as_eager(opts.options.backend, called) else _random_draws(opts.pattern, eager, _copies(originals))
            )
            if draws is not None and draws.found is not None:
                return  # the backend draws otherwise than eager: the values say nothing (as _unless_random)
            raise make(
                BackwardMismatch,
                "compiled backward",
                "no error, and gradients other than those of the values before the change",
                f"raised {error_line(backward)} (as eager)",
                detail=f"The compiled backward used what changed in place after the forward. {e}",
            ) from backward
        return
    if call is not None:
        raise make(ForwardMismatch, "compiled call", "no error", f"raised {error_line(call)} (as eager)") from call
    assert backward is not None
    raise make(BackwardMismatch, "compiled backward", "no error", f"raised {error_line(backward)} (as eager)") from backward


def _same_on_every_cpu(eager: Callable[..., Any], originals: list[torch.Tensor], called: Called, opts: _Checking) -> None:
    """Where the call computed in bfloat16 (CPU autocast) on a CPU whose oneDNN has bfloat16
    kernels (:func:`_cpu_has_kernels`), eager is called again with oneDNN off. Where an output's
    dtype differs, eager's result, and so what compiled code must return, depends on the CPU:
    the derived sample is not applicable (:class:`DependsOnCpu`), as it is on a CPU whose oneDNN
    refuses the call (:data:`_MACHINE_REFUSAL`). autocast lowers oneDNN's own ops: ``nn.LSTM``'s
    ``mkldnn_rnn_layer`` returns bfloat16 with such kernels, refuses without them, and the LSTM
    returns float32 with oneDNN off (``findings/aot_lstm_autocast_onednn_dtype.py``). The verdict
    is then the same on both kinds of CPU; an op that ran in float32 on a CPU without the kernels
    instead of refusing would still differ. The price: nothing else is checked for such a sample
    (nn.LSTM's autocast backward, for one)."""
    if called.precision is not torch.bfloat16 or not _cpu_has_kernels():
        return
    enabled = torch._C._get_mkldnn_enabled()
    torch._C._set_mkldnn_enabled(False)
    try:
        other = _called(opts.pattern, eager, _copies(originals))
    except Exception:
        return  # a call no user of this CPU makes, so no reference
    finally:
        torch._C._set_mkldnn_enabled(enabled)
    here, without = _output_leaves(called.compared), _output_leaves(other.compared)
    for (name, mine), (_, theirs) in zip(here, without):
        if isinstance(mine, torch.Tensor) and isinstance(theirs, torch.Tensor) and mine.dtype != theirs.dtype:
            raise _finding_factory(opts)(
                EagerFailure,
                f"eager {name}.dtype (oneDNN on)",
                _dtype(mine.dtype),
                f"{_dtype(theirs.dtype)}, as with oneDNN off: it depends on the CPU",
                detail="This CPU's oneDNN computes in bfloat16 where another CPU's may not: what compiled code must return "
                "depends on the machine, so no verdict.",
            ) from DependsOnCpu(f"{name}.dtype")


def _cpu_has_kernels() -> bool:
    """This CPU's oneDNN computes in bfloat16 (``torch.ops.mkldnn._is_mkldnn_bf16_supported``:
    AVX-512, or AVX2 with VNNI-2), which another CPU's may not."""
    available: bool = torch.backends.mkldnn.is_available()  # type: ignore[no-untyped-call]
    return available and bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def _check_call(call: _TensorCall, options: CheckOptions) -> list[str]:
    """The check proper: eager vs compiled on the call's inputs, then on randomized data through
    the same compiled function. Raises a :class:`Finding`; returns the notes. Repro scripts run
    this very function: ``_repro.write_standalone`` copies it, with all it uses, into them."""
    opts = _Checking(options, options.context or "", get_pattern(options.pattern))
    if hasattr(opts.pattern, "steps"):  # a sequence of calls on one compiled function
        with _environment_independent():
            return _check_sequence(call, options, opts, _check_once)
    with _environment_independent():
        # Dynamo (which higher-order ops such as map trace their bodies with) keeps compiled frames
        # across calls: without a reset, a check's verdict depends on what ran before it
        torch._dynamo.reset()
        if hasattr(opts.pattern, "fallback_random"):  # rng: inductor draws as eager under fallback_random
            opts.pattern.fallback_random = _is_inductor(options.backend)
        body = getattr(opts.pattern, BODY, None)  # what the pattern wraps around the call, compiled with it
        if body is not None:
            call = call.within(body)
        compiled = _compile(call, opts)
        originals = list(call.tensors)
        try:
            gradients = _check_once(call, compiled, originals, opts)
        except Finding as f:
            f.inputs = call.rebuild(originals)
            raise
        # In-tree randomizes only when checking gradients; we also do for forward-only checks.
        if not options.try_check_data_specialization or not (gradients or options.randomize_without_gradients):
            return opts.notes
        donor = _donor_values(call, options.randomized_sample)
        with _seeded(originals, _RANDOM_DATA_SEED):  # the same random data on every run and worker
            randomized = _copies(originals, randomize=True, values=donor)
        data = "the sample drawn again under another seed" if donor is not None else "uniform [0, 1) noise"
        before = len(opts.notes)
        try:
            _check_once(call, compiled, randomized, opts)
        except EagerFailure:
            return opts.notes[:before]  # the op may have preconditions on values that random data breaks
        except Finding as f:
            finding = RandomizedMismatch(
                f.what,
                f.actual,
                f.expected,
                f.context,
                detail=f"[{f.stage}, on randomized inputs: {data}] {f.detail}".rstrip(),
                repro=f.repro,
            )
            finding.inputs = call.rebuild(randomized)
            raise finding from f
        opts.notes[before:] = [f"randomized {note}" for note in opts.notes[before:]]
    return opts.notes


def _environment_independent() -> contextlib.AbstractContextManager[Any]:
    """torch 2.13's AOTAutograd checks custom-op aliasing itself: an error when the CI
    environment variable is set, a warning otherwise. Pin the warning, so a verdict does not
    depend on the environment; our metadata check reports the aliasing either way."""
    from torch._functorch import config

    if hasattr(config, "error_on_custom_op_aliasing"):
        return config.patch(error_on_custom_op_aliasing=False)  # type: ignore[no-any-return]
    return contextlib.nullcontext()
