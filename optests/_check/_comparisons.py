"""The comparisons of eager and compiled, in the order they run (:data:`COMPARISONS`)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.utils._pytree as pytree

from .._backends import get_backend
from .._backends.dynamo import Dynamo
from .._findings import BackwardMismatch, Finding, ForwardMismatch, MetadataMismatch, MutationMismatch, TraceFailure, error_line
from .._patterns import Unsupported
from .._patterns.base import UNCHANGED
from ._copies import _copies, _identical, _storage_groups
from ._float64 import _Float64Reference, _rounding_only
from ._messages import _difference, _dtype, _error_excerpt, _finding_factory, _grad_fn, _listed, _names
from ._metadata import _agree, _is_alias_of, _Meta, _meta, _significant_strides
from ._options import CheckOptions, _Checking
from ._running import _SEED, _called, _compile, _draws_as_eager, _DrawsRandom, _random_draws, _Run
from ._trace import _output_leaves, _TensorCall

__all__ = ["COMPARISONS"]

#: The detail of a finding whose compiled call raised what PyTorch documents as not supported for
#: every op (:class:`optests._patterns.Unsupported`): a derived sample is then not applicable.
_UNSUPPORTED = "PyTorch documents this as not supported (for every op), not a bug of this op."

#: What autograd's saved-tensor version check raises: an input saved for the backward was changed
#: in place after the forward.
_VERSION_CHECK = "modified by an inplace operation"

#: Where eager's backward accepts an input changed in place after the forward and the compiled
#: one's version check refuses it: the compiled graph saved the input itself where eager saved
#: what it computed from it. It is loud and uses no stale value, so under a pattern that changes
#: inputs between the forward and the backward (``inplace-between``, whose finding is a compiled
#: backward that silently computes with the new values) the derived sample is not applicable,
#: and says why.
_STRICTER_REFUSAL = (
    "refused an input changed in place after the forward, which eager's backward does not need "
    "(the compiled graph saved the input itself)"
)


@dataclass(frozen=True)
class _Compared:
    """What a comparison of eager and compiled looks at: the call, the inputs both runs started
    from, each run, whether gradients were taken, the float64 reference (None: none), and what
    eager's call draws (:attr:`eager_draws`)."""

    call: _TensorCall
    originals: list[torch.Tensor]
    eager: _Run
    comp: _Run
    opts: _Checking
    gradients: bool
    truth: _Float64Reference | None

    @functools.cached_property
    def eager_draws(self) -> _DrawsRandom | None:
        """What eager's call draws, on fresh copies of its inputs (:func:`_random_draws`): run once,
        when first asked, and shared by every comparison of this call that asks."""
        return _random_draws(self.opts.pattern, self.call.eager, _copies(self.originals))


def _trace_metadata(c: _Compared) -> None:
    _check_trace_metadata(c.call, c.originals, c.eager, c.comp, c.opts)


def _errors(c: _Compared) -> None:
    _raise_errors(c.comp, c.call, c.gradients, c.opts)


def _compiled_metadata(c: _Compared) -> None:
    _check_compiled_metadata(c.call, c.eager, c.comp, c.opts)


def _autograd_metadata(c: _Compared) -> None:
    """Each output's ``is_leaf``, whether it has a ``grad_fn``, and the other outputs it shares a
    storage with, eager vs compiled: what a user's code that inspects outputs sees."""
    make = _finding_factory(c.opts)
    e_leaves = [(n, t) for n, t in _output_leaves(c.eager.out) if isinstance(t, torch.Tensor)]
    c_leaves = [(n, t) for n, t in _output_leaves(c.comp.out) if isinstance(t, torch.Tensor)]
    if [n for n, _ in e_leaves] != [n for n, _ in c_leaves]:
        return  # the compiled metadata's comparison names that difference
    detail = "Eager and the compiled call disagree."
    for i, ((name, e), (_, comp)) in enumerate(zip(e_leaves, c_leaves)):
        if e.is_leaf != comp.is_leaf:
            raise make(MetadataMismatch, f"compiled {name}.is_leaf", comp.is_leaf, e.is_leaf, detail=detail)
        if (e.grad_fn is None) != (comp.grad_fn is None):
            raise make(MetadataMismatch, f"compiled {name}.grad_fn", _grad_fn(comp), _grad_fn(e), detail=detail)
        shares = [
            [other for j, (other, t) in enumerate(leaves) if j != i and _is_alias_of(leaves[i][1], t)]
            for leaves in (e_leaves, c_leaves)
        ]
        if shares[0] != shares[1]:
            what = f"compiled {name} shares a storage with"
            raise make(
                MetadataMismatch, what, _listed(shares[1]), _listed(shares[0]), detail=detail + " (views among the outputs)"
            )


def _mutations(c: _Compared) -> None:
    with _unless_random(c):
        _check_mutations(c.call, c.originals, c.eager, c.comp, c.opts, c.truth)


@contextlib.contextmanager
def _unless_random(c: _Compared) -> Iterator[None]:
    """Values that differ are no finding (noted once) where the backend draws random numbers
    otherwise than eager (:func:`._running._draws_as_eager`) and eager's call runs an op tagged
    ``nondeterministic_seeded``: asked only of a difference, so eager's runs are as they are."""
    try:
        yield
    except (ForwardMismatch, BackwardMismatch, MutationMismatch) as f:
        of_values = not isinstance(f, MutationMismatch) or f.what.endswith(" after the call")  # not "... mutated"
        if _draws_as_eager(c.opts.options.backend, c.comp.called) or not of_values:
            raise
        op = _random_op(c)
        if op is None:
            raise
        note = (
            f"values not compared: the call draws random numbers ({op}, nondeterministic_seeded) "
            f"and {c.opts.options.backend} draws them otherwise"
        )
        if note not in c.opts.notes:
            c.opts.notes.append(note)


def _random_op(c: _Compared) -> str | None:
    """The first op tagged ``nondeterministic_seeded`` that eager's call runs (on fresh copies of
    its inputs, forward only), or None."""
    draws = c.eager_draws
    return None if draws is None else draws.found


def _refusals(c: _Compared) -> None:
    """What the pattern did with the outputs after the call: each step must raise in the compiled
    call exactly where it raises in eager (an in-place on a view that autograd forbids)."""
    assert c.eager.called is not None and c.comp.called is not None
    make = _finding_factory(c.opts)
    for e, c_ in zip(c.eager.called.refused, c.comp.called.refused):
        if e.error and e.must_succeed:  # the op's bug, whatever compiled code (which restrides) does
            raise make(
                BackwardMismatch if e.backward else ForwardMismatch,
                f"eager {e.step}",
                f"raised {e.message or e.error}",
                "no error",
                detail="Autograd takes a tangent of any layout: the op's backward must accept it in eager too.",
            )
        if e.error != c_.error:
            raise make(
                BackwardMismatch if e.backward else ForwardMismatch,
                e.step,
                f"raised {c_.message or c_.error}" if c_.error else "no error",
                f"raised {e.message or e.error} (as eager)" if e.error else "no error (as eager does)",
                detail="Eager and the compiled call differ in which of them raises.",
            )


def _specials(c: _Compared) -> bool:
    """Whether the call's inputs hold special values (:attr:`Called.specials`)."""
    return c.eager.called is not None and c.eager.called.specials


def _special_values(c: _Compared) -> None:
    """Where the inputs hold special values (:attr:`Called.specials`): each output holds NaN
    exactly where eager's does, and each of its zeros has the sign of eager's."""
    if not _specials(c):
        return
    assert c.comp.called is not None and c.eager.called is not None
    make = _finding_factory(c.opts)
    e_leaves, c_leaves = _output_leaves(c.eager.called.compared), _output_leaves(c.comp.called.compared)
    if [n for n, _ in e_leaves] != [n for n, _ in c_leaves]:
        return  # the compiled metadata's comparison names that difference
    for (name, e), (_, a) in zip(e_leaves, c_leaves):
        if not (isinstance(e, torch.Tensor) and isinstance(a, torch.Tensor)) or e.shape != a.shape or e.dtype != a.dtype:
            continue
        if not (e.is_floating_point() or e.is_complex()) or e.layout != torch.strided or a.layout != torch.strided:
            continue
        with torch.no_grad():
            x, y = e.detach().cpu(), a.detach().cpu()
            nan = x.isnan() != y.isnan()
            sign = (x == 0) & (y == 0) & (x.signbit() != y.signbit()) if not x.is_complex() else torch.zeros_like(nan)
        for differ, why in (
            (nan, "Eager has NaN where the compiled call has not, or the reverse."),
            (sign, "Both are zero, of different signs (inputs with special values compare the sign of zeros)."),
        ):
            if bool(differ.any()):
                index = tuple(int(i) for i in differ.nonzero()[0]) if differ.dim() else ()
                where = f"{name} at {list(index)}" if index else name
                raise make(ForwardMismatch, where, _special(y[index]), f"{_special(x[index])} (as eager)", detail=why)


def _special(t: torch.Tensor) -> str:
    """One element as a special-values message shows it: ``nan``, ``-0.0``, ``inf``, ``0.5``."""
    v = t.item()
    if isinstance(v, float) and v == 0:
        return "-0.0" if t.signbit() else "0.0"
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _nan_free(expected: Any, actual: Any) -> tuple[Any, Any]:
    """``expected`` and ``actual`` with the NaN they share (the same element of the same output)
    set to 0, so that any ``assert_equals_fn`` takes NaN as equal to NaN; a NaN in one alone stays."""
    e_leaves, e_spec = pytree.tree_flatten(expected)
    a_leaves, a_spec = pytree.tree_flatten(actual)
    if len(e_leaves) != len(a_leaves):  # (a tuple and a list of outputs are compared leaf by leaf)
        return expected, actual
    e_new, a_new = [], []
    for e, a in zip(e_leaves, a_leaves):
        if (
            isinstance(e, torch.Tensor)
            and isinstance(a, torch.Tensor)
            and e.shape == a.shape
            and (e.is_floating_point() or e.is_complex())
            and e.layout == a.layout == torch.strided
            and e.device == a.device
        ):
            with torch.no_grad():
                both = e.isnan() & a.isnan()
                e, a = e.detach().masked_fill(both, 0), a.detach().masked_fill(both, 0)
        e_new.append(e)
        a_new.append(a)
    return pytree.tree_unflatten(e_new, e_spec), pytree.tree_unflatten(a_new, a_spec)


def _outputs(c: _Compared) -> None:
    truth = c.truth.out if c.truth is not None else None
    assert c.eager.called is not None and c.comp.called is not None
    with _unless_random(c):
        precision = c.eager.called.precision
        expected, actual = c.eager.called.compared, c.comp.called.compared
        if _specials(c):
            expected, actual = _nan_free(expected, actual)
        _compare(ForwardMismatch, "out", expected, actual, c.opts, truth=truth, precision=precision)


def _gradients(c: _Compared) -> None:
    if not c.gradients:
        return
    names = [n for n, t in zip(c.call.names, c.comp.inputs) if t.requires_grad]
    rounds = c.comp.called.rounds if c.comp.called is not None else ()
    if rounds:  # several rounds of gradients (one per output, first and second order)
        names = [f"{n} ({r})" for r in rounds for n in names]
    truth = c.truth.grads if c.truth is not None else None
    precision = c.eager.called.precision if c.eager.called is not None else None
    weighed = c.eager.called is not None and c.eager.called.tangents is not None
    expected, actual = (_nan_free(c.eager.grads, c.comp.grads)) if _specials(c) else (c.eager.grads, c.comp.grads)
    with _unless_random(c):
        _compare(
            BackwardMismatch,
            "grad",
            expected,
            actual,
            c.opts,
            names=names,
            truth=truth,
            precision=precision,
            weighed=weighed,
        )


def _observed(c: _Compared) -> None:
    """What the pattern saw beside the outputs and gradients (:attr:`Called.observed`: the RNG
    state after the call, what a hook was called with), eager's against the compiled call's."""
    if c.eager.called is None or c.comp.called is None:
        return
    make = _finding_factory(c.opts)
    seen = [o for o in c.comp.called.observed if not o.backward or c.gradients]
    wanted = [o for o in c.eager.called.observed if not o.backward or c.gradients]
    detail = "Eager and the compiled call disagree on what the call pattern saw beside the outputs."
    if [o.what for o in seen] != [o.what for o in wanted]:
        names, expected = [o.what for o in seen], [o.what for o in wanted]
        stage = BackwardMismatch if any(o.backward for o in wanted + seen) else ForwardMismatch
        raise make(stage, "observed", _listed(names), f"{_listed(expected)} (as eager)", detail=detail)
    with _unless_random(c):
        for mine, theirs in zip(seen, wanted):
            cls = BackwardMismatch if theirs.backward else ForwardMismatch
            if theirs.random_state:
                # a call eager makes without drawing must not draw compiled, whatever the backend
                if not torch.equal(mine.value, theirs.value) and (
                    _draws_as_eager(c.opts.options.backend, c.comp.called) or _random_op(c) is None
                ):
                    if _restores_the_generator(c, theirs.what, theirs.value):
                        continue
                    raise make(
                        cls,
                        theirs.what,
                        "another state",
                        "eager's (the same seed before each call)",
                        detail="The compiled call drew from the global generator otherwise than eager: "
                        "random numbers drawn after it differ.",
                    )
                continue
            if isinstance(theirs.value, torch.Tensor) and isinstance(mine.value, torch.Tensor):
                try:
                    c.opts.options.assert_equals_fn(mine.value, theirs.value)
                except Exception as e:
                    got, wanted_txt = _difference(mine.value, theirs.value)
                    raise make(cls, theirs.what, got, wanted_txt, detail=_error_excerpt(e)) from e
            elif type(mine.value) is not type(theirs.value) or mine.value != theirs.value:
                raise make(cls, theirs.what, _short_value(mine.value), f"{_short_value(theirs.value)} (as eager)", detail=detail)


def _restores_the_generator(c: _Compared, what: str, eager_state: torch.Tensor) -> bool:
    """Whether eager's call draws from the global CPU generator and yet leaves it as the seed made
    it: Python code around the op seeds, and restores the state after it (OpInfo's
    ``wrapper_set_seed`` does, for ``fractional_max_pool2d`` and the like). AOTAutograd traces
    tensor ops and runs such Python once, at trace time, so what the compiled call leaves says
    nothing about the compiler: the state is not compared (noted). Not under a Dynamo backend,
    which runs the Python as it is written."""
    if isinstance(get_backend(c.opts.options.backend), Dynamo):
        return False
    draws = c.eager_draws
    if draws is None or not draws.drew_globally or not torch.equal(eager_state, torch.Generator().manual_seed(_SEED).get_state()):
        return False
    note = (
        f"{what} not compared: eager's call draws random numbers ({draws.found}) and restores the "
        "generator after it, in Python code that a trace runs once"
    )
    if note not in c.opts.notes:
        c.opts.notes.append(note)
    return True


def _short_value(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor {_dtype(value.dtype)}{list(value.shape)}"
    return "None" if value is None else str(value)


def _compares(o: CheckOptions) -> bool:
    return not o.skip_correctness_check


#: The comparisons of eager and compiled, in the order they run: (name, whether it runs under
#: these options, the comparison). Each raises a :class:`Finding` on a difference. The first
#: finding wins, so what explains most comes first: what the trace predicted, then errors (a
#: compiled call that raised has nothing to compare), metadata, mutations, values. A new
#: comparison is a function here and a row in this table.
COMPARISONS: tuple[tuple[str, Callable[[CheckOptions], bool], Callable[[_Compared], None]], ...] = (
    ("trace metadata", lambda o: _compares(o) and o.check_metadata, _trace_metadata),
    ("errors", lambda o: True, _errors),
    ("compiled metadata", lambda o: _compares(o) and o.check_metadata, _compiled_metadata),
    ("autograd metadata", lambda o: _compares(o) and o.check_autograd_metadata, _autograd_metadata),
    ("mutations", lambda o: _compares(o) and o.check_mutations, _mutations),
    ("refusals", _compares, _refusals),
    ("special values", _compares, _special_values),
    ("outputs", _compares, _outputs),
    ("gradients", _compares, _gradients),
    ("observed", _compares, _observed),
)


def _raise_errors(comp: _Run, call: _TensorCall, gradients: bool, opts: _Checking) -> None:
    make = _finding_factory(opts)
    if comp.error is not None:
        e = comp.error
        if gradients and _forward_only_compiles(call, opts):
            raise make(
                BackwardMismatch,
                "compiled call",
                f"raised {error_line(e)}",
                "no error",
                detail="The forward alone compiles (inputs detached), so tracing the backward failed: "
                "check that the backward formula is traceable (no numpy, no .item(), no Python branch on tensor values).",
            ) from e
        raise make(TraceFailure, "compiled call", f"raised {error_line(e)}", "no error (eager succeeded)") from e
    if comp.backward_error is not None:
        e = comp.backward_error
        if isinstance(e, Unsupported):
            raise make(BackwardMismatch, "compiled backward", f"raised {error_line(e)}", "no error", detail=_UNSUPPORTED) from e
        if getattr(opts.pattern, UNCHANGED, None) is not None and _VERSION_CHECK in str(e):
            # stricter than eager, and loud: no stale value is used (what the pattern looks for)
            stricter = Unsupported(error_line(e))
            stricter.__cause__ = e
            raise make(
                BackwardMismatch,
                "compiled backward",
                _STRICTER_REFUSAL,
                "no error (eager backward succeeded)",
                detail=error_line(e),
            ) from stricter
        raise make(BackwardMismatch, "compiled backward", f"raised {error_line(e)}", "no error (eager backward succeeded)") from e


def _forward_only_compiles(call: _TensorCall, opts: _Checking) -> bool:
    probe = _TensorCall(call.func, *pytree.tree_unflatten(call.leaves, call.spec))
    probe.body = call.body
    inputs = [t.detach() for t in _copies(call.tensors)]
    try:
        _called(opts.pattern, _compile(probe, opts), inputs)
    except Exception:
        return False
    return True


def _check_trace_metadata(call: _TensorCall, originals: list[torch.Tensor], eager: _Run, comp: _Run, opts: _Checking) -> None:
    """What the trace predicted (fake/meta kernels) vs what the real kernels returned."""
    trace = call.trace
    if trace is None:
        return
    make = _finding_factory(opts)
    error = comp.error or comp.backward_error
    failed = f"; the compiled call then raised {error_line(error)}" if error is not None else ""
    note = "The trace (fake/meta kernels) predicted this; the real kernel disagrees" + failed + "."
    real = [
        (name, _meta(leaf, eager.inputs) if isinstance(leaf, torch.Tensor) else None) for name, leaf in _output_leaves(eager.out)
    ]
    if [n for n, _ in real] != [n for n, _ in trace.outputs]:
        raise make(MetadataMismatch, "traced outputs", [n for n, _ in trace.outputs], [n for n, _ in real], detail=note)
    groups = _storage_groups(eager.inputs)
    overlapping = _storage_groups(eager.inputs, overlap=True)
    for (name, traced), (_, actual) in zip(trace.outputs, real):
        if traced is not None:  # the trace knows views of inputs; the storages they share are the real run's
            traced = dataclasses.replace(traced, aliases=frozenset(j for i in traced.aliases for j in groups[i]))
        if traced is None or actual is None:
            if (traced is None) != (actual is None):
                raise make(MetadataMismatch, f"traced {name} is tensor", traced is not None, actual is not None, detail=note)
            continue
        _compare_meta(make, f"traced {name}", traced, actual, call, note, check_requires_grad=False)
    if eager.called is not None and eager.called.touched:
        return  # the pattern changed outputs after the call, and inputs they view: not the trace's doing
    for i, (name, traced_mut, orig, after) in enumerate(zip(call.names, trace.mutated, originals, eager.inputs)):
        through_another = any(trace.written[j] for j in overlapping[i] if j != i)  # a write to memory it shares
        if traced_mut is False and not through_another and after is not orig and not _identical(after, orig):
            raise make(
                MutationMismatch,
                f"traced mutation of {name}",
                "none",
                "a mutation (eager mutates it)",
                detail="Eager changed this input, but the traced graph does not write to it: the op's schema does not "
                "declare the mutation (mutates_args / `Tensor(a!)`), so a compiler may reorder or drop it.",
            )


def _compare_meta(
    make: Callable[..., Finding],
    what: str,
    actual: _Meta,
    expected: _Meta,
    call: _TensorCall,
    detail: str,
    *,
    check_requires_grad: bool,
) -> None:
    if actual.dtype != expected.dtype:
        raise make(MetadataMismatch, f"{what}.dtype", _dtype(actual.dtype), _dtype(expected.dtype), detail=detail)
    if not _agree(actual.shape, expected.shape):
        raise make(MetadataMismatch, f"{what}.shape", list(actual.shape), list(expected.shape), detail=detail)
    sig_a, sig_e = _significant_strides(actual), _significant_strides(expected)
    if sig_a is not None and sig_e is not None and not _agree(sig_a, sig_e):
        raise make(
            MetadataMismatch,
            f"{what}.stride()",
            actual.stride,
            expected.stride,
            detail=detail + f" (shape {list(expected.shape)}; dims of size <= 1 are not compared)",
        )
    if check_requires_grad and actual.requires_grad != expected.requires_grad:
        raise make(MetadataMismatch, f"{what}.requires_grad", actual.requires_grad, expected.requires_grad, detail=detail)
    if actual.aliases != expected.aliases:
        raise make(
            MetadataMismatch, f"{what} aliases", _names(actual.aliases, call), _names(expected.aliases, call), detail=detail
        )


def _check_compiled_metadata(call: _TensorCall, eager: _Run, comp: _Run, opts: _Checking) -> None:
    make = _finding_factory(opts)
    e_leaves, c_leaves = _output_leaves(eager.out), _output_leaves(comp.out)
    if [n for n, _ in e_leaves] != [n for n, _ in c_leaves]:
        raise make(MetadataMismatch, "compiled outputs", [n for n, _ in c_leaves], [n for n, _ in e_leaves])
    for (name, e), (_, c) in zip(e_leaves, c_leaves):
        if not (isinstance(e, torch.Tensor) and isinstance(c, torch.Tensor)):
            continue
        em, cm = _meta(e, eager.inputs), _meta(c, comp.inputs)
        if em.aliases or not opts.options.compare_strides:
            # a view of an input: AOTAutograd regenerates it, its strides follow the input's
            em = _Meta(em.dtype, em.shape, None, em.requires_grad, em.aliases)
        _compare_meta(make, f"compiled {name}", cm, em, call, "Eager and the compiled call disagree.", check_requires_grad=True)


def _check_mutations(
    call: _TensorCall,
    originals: list[torch.Tensor],
    eager: _Run,
    comp: _Run,
    opts: _Checking,
    truth: _Float64Reference | None,
) -> None:
    """Which inputs each run mutated, and the values written: a difference within rounding of
    what the float64 call wrote there (``truth``) is noted, as for outputs."""
    make = _finding_factory(opts)
    precision = eager.called.precision if eager.called is not None else None
    for i, (name, orig, e, c) in enumerate(zip(call.names, originals, eager.inputs, comp.inputs)):
        e_mut, c_mut = not _identical(e, orig), not _identical(c, orig)
        if e_mut != c_mut:
            raise make(
                MutationMismatch,
                f"{name} mutated",
                "yes" if c_mut else "no",
                "yes (eager mutates it)" if e_mut else "no (eager leaves it unchanged)",
                detail=" ".join(
                    filter(None, ("Each call ran on its own fresh copy of the inputs.", _raised_only_compiled(eager, comp)))
                ),
            )
        if e_mut:
            written = functools.partial(truth.after, i) if truth is not None else None
            expected, actual = _nan_free(e, c) if eager.called is not None and eager.called.specials else (e, c)
            _compare(
                MutationMismatch, name, expected, actual, opts, what_suffix=" after the call", truth=written, precision=precision
            )


def _raised_only_compiled(eager: _Run, comp: _Run) -> str:
    """The first step of the pattern's call that raised in the compiled run but not in eager's,
    as a sentence ("": none). A mutation that differs is then that error's doing, which the
    later comparison of refusals would name: say it with the mutation."""
    if eager.called is None or comp.called is None:
        return ""
    for e, c in zip(eager.called.refused, comp.called.refused):
        if c.error and not e.error:
            return f"In the compiled run, {c.step} raised {c.message or c.error}; in eager it did not."
    return ""


def _compare(
    cls: type[Finding],
    what: str,
    expected: Any,
    actual: Any,
    opts: _Checking,
    *,
    names: list[str] | None = None,
    what_suffix: str = "",
    truth: Callable[[], Any] | None = None,
    precision: torch.dtype | None = None,
    weighed: bool = False,
) -> None:
    """Compare with ``assert_equals_fn``; on a difference, name the first differing leaf.
    ``truth`` gives the float64 result (or None): a difference within rounding of it is noted in
    ``opts.notes``, not raised; ``precision`` is the lower precision the call computed in
    (:attr:`Called.precision`); ``weighed``: gradients of tangents the pattern drew
    (:attr:`Called.tangents`), as :func:`_rounding_only` takes it."""
    try:
        opts.options.assert_equals_fn(actual, expected)
        return
    except Exception as e:
        whole_error = e
    reference = truth() if truth is not None else None
    if reference is not None:
        why = _rounding_only(actual, expected, reference, opts, grads=what == "grad", precision=precision, weighed=weighed)
        if why is not None:
            opts.notes.append(f"{what}{what_suffix}: {why}")
            return
    make = _finding_factory(opts)
    a_leaves, e_leaves = pytree.tree_leaves(actual), pytree.tree_leaves(expected)
    if names is None:
        names = [n for n, _ in _output_leaves(expected)] if what == "out" else [what] * len(e_leaves)
    if isinstance(expected, tuple) and what == "grad":
        a_leaves, e_leaves = list(actual), list(expected)
    if len(a_leaves) == len(e_leaves):
        for i, (a, x) in enumerate(zip(a_leaves, e_leaves)):
            name = names[i] if i < len(names) else f"{what}[{i}]"
            if what == "grad":
                name = f"grad of {name}"
            try:
                opts.options.assert_equals_fn(a, x)
            except Exception as leaf_error:
                actual_txt, expected_txt = _difference(a, x)
                raise make(cls, name + what_suffix, actual_txt, expected_txt, detail=_error_excerpt(leaf_error)) from leaf_error
    raise make(cls, what + what_suffix, "differs", "equal to eager", detail=_error_excerpt(whole_error)) from whole_error
