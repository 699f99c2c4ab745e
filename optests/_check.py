"""The AOT-autograd check: run a call eagerly and under AOTAutograd (no-op compilers), compare.

Same call shape and semantics as ``torch.testing._internal.optests.aot_autograd_check``, plus
checks it lacks, each switchable off:

- ``check_metadata``: dtype, shape, significant strides, ``requires_grad`` and aliasing of every
  output, eager vs compiled and trace-predicted (fake/meta kernels) vs real;
- ``check_autograd_metadata``: each output's ``is_leaf``, whether its ``grad_fn`` is None, and
  which other outputs it shares a storage with, eager vs compiled;
- ``check_mutations``: eager and compiled run on their own fresh copies of the inputs; inputs
  must be mutated identically, and a mutation eager makes must be visible in the trace;
- ``randomize_without_gradients``: the randomized rerun also runs for forward-only checks;
- ``float64_reference``: a difference beyond tolerance that is within rounding of the same call
  in float64 is noted, not a finding (verdicts must not depend on how a CPU rounds).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import functorch.compile  # noqa: F401  (the aot_eager backend's, loaded with the check: before a runner forks)
import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from . import _script
from ._backends import DEFAULT_BACKEND, get_backend
from ._findings import (
    BackwardMismatch,
    CheckResult,
    EagerFailure,
    Finding,
    ForwardMismatch,
    MetadataMismatch,
    MutationMismatch,
    Outcome,
    RandomizedMismatch,
    TraceFailure,
    error_line,
    user_code,
)
from ._patterns import DEFAULT_PATTERN, Called, CallPattern, DependsOnCpu, Unsupported, get_pattern

__all__ = ["CheckOptions", "aot_autograd_check", "assert_close_equal_nan", "assert_raises_regex", "mode_name", "run_check"]

_NO_GRAD_FN = "does not require grad and does not have a grad_fn"
#: The detail of a finding whose compiled call raised what PyTorch documents as not supported for
#: every op (:class:`optests._patterns.Unsupported`): a derived sample is then not applicable.
_UNSUPPORTED = "PyTorch documents this as not supported (for every op), not a bug of this op."
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
_SEED = 42
_RANDOM_DATA_SEED = 1234


class assert_raises_regex:  # noqa: N801 - same name and contract as the in-tree helper
    """Context manager: the block must raise ``exception_cls`` with a message matching ``regex``."""

    def __init__(self, exception_cls: type[BaseException], regex: str) -> None:
        self.exception_cls = exception_cls
        self.regex = regex

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool:
        if exc_type is None:
            raise AssertionError(f"expected {self.exception_cls.__name__} matching {self.regex!r}, but nothing was raised")
        if not issubclass(exc_type, self.exception_cls):
            raise AssertionError(
                f"expected {self.exception_cls.__name__} matching {self.regex!r}, but got {exc_type.__name__}: {exc}"
            )
        if not re.search(self.regex, str(exc)):
            raise AssertionError(f"expected {self.exception_cls.__name__} matching {self.regex!r}, but the message was: {exc}")
        return True


def assert_close_equal_nan(actual: Any, expected: Any, **kwargs: Any) -> None:
    """``torch.testing.assert_close`` with NaN equal to NaN: what PyTorch's own OpInfo tests
    compare with (``TestCase.assertEqual``). The sweep and ``optests check`` use it; the
    check's default stays the in-tree check's plain ``assert_close``."""
    torch.testing.assert_close(actual, expected, equal_nan=True, **kwargs)


def tolerant(dtype: torch.dtype, atol: float | None, rtol: float | None, *, leaves_of_dtype: bool = False) -> Callable[..., None]:
    """:func:`assert_close_equal_nan` with tolerances raised as an OpInfo's ``toleranceOverride``
    (or ``precisionOverride``) for ``dtype`` raises them in PyTorch's test framework: each is the
    larger of the override and ``assert_close``'s default for that dtype. ``leaves_of_dtype``:
    for the tensors of ``dtype`` only, the others at their own defaults (``autocast``, whose
    float32 results are not the lower precision's). A ``functools.partial``, so that it pickles
    and a repro script can name it."""
    default_rtol, default_atol = _DEFAULT_TOLERANCES.get(dtype, (0.0, 0.0))
    raised = {"atol": max(atol or 0.0, default_atol), "rtol": max(rtol or 0.0, default_rtol)}
    if leaves_of_dtype:
        return functools.partial(assert_close_for_dtype, dtype=dtype, **raised)
    return functools.partial(assert_close_equal_nan, **raised)


def assert_close_for_dtype(actual: Any, expected: Any, *, dtype: torch.dtype, atol: float, rtol: float) -> None:
    """:func:`assert_close_equal_nan` with ``atol`` and ``rtol`` for the tensors of ``dtype``,
    and ``assert_close``'s defaults for the others."""
    a_leaves, a_spec = pytree.tree_flatten(actual)
    e_leaves, e_spec = pytree.tree_flatten(expected)
    if a_spec != e_spec:
        assert_close_equal_nan(actual, expected)  # says how the structures differ
        return
    for a, e in zip(a_leaves, e_leaves):
        if isinstance(e, torch.Tensor) and e.dtype == dtype:
            assert_close_equal_nan(a, e, atol=atol, rtol=rtol)
        else:
            assert_close_equal_nan(a, e)


def one_intra_op_thread() -> None:
    """Run checks with one intra-op thread, in the sweep's child and in ``optests check``'s: a
    verdict must not depend on the thread count (reductions split across threads round
    otherwise), the sweep's workers already use every core, and GNU OpenMP is not fork-safe."""
    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def mode_name(dynamic: bool, disable_functionalization: bool = False) -> str:
    """The sweep's name for a mode: ``static``, ``dynamic``, ``static-nofunc``, ``dynamic-nofunc``."""
    return ("dynamic" if dynamic else "static") + ("-nofunc" if disable_functionalization else "")


# ---------------------------------------------------------------------------------------------
# Metadata of one tensor, as plain data (never holds a tensor: fake tensors must not escape).


@dataclass(frozen=True)
class _Meta:
    dtype: torch.dtype
    shape: tuple[int | None, ...]
    stride: tuple[int | None, ...] | None  # None: not strided (sparse, nested, ...)
    requires_grad: bool
    aliases: frozenset[int]  # positions of the inputs this tensor shares storage with


def _hint(v: int | torch.SymInt) -> int | None:
    """A concrete int for a possibly symbolic size, without adding a guard (None if unknown)."""
    if isinstance(v, int):
        return v
    node = v.node
    if node.has_hint():
        return int(node.hint)
    value = node.maybe_as_int()
    return None if value is None else int(value)


def _meta(t: torch.Tensor, inputs: Sequence[torch.Tensor]) -> _Meta:
    try:
        stride: tuple[int | None, ...] | None = tuple(_hint(s) for s in t.stride())
    except (RuntimeError, NotImplementedError):
        stride = None
    aliases = frozenset(i for i, inp in enumerate(inputs) if _is_alias_of(t, inp))
    return _Meta(t.dtype, tuple(_hint(s) for s in t.shape), stride, t.requires_grad, aliases)


def _is_alias_of(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether ``a`` and ``b`` share a storage; a traceable wrapper subclass (``TwoTensor``, as
    the ``subclass`` pattern passes) through its inner tensors."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    for x, y in ((a, b), (b, a)):
        if is_traceable_wrapper_subclass(x) and not x.is_nested:  # a nested tensor as before: it has a storage of its own
            try:
                names = x.__tensor_flatten__()[0]
            except Exception:
                return False
            return any(_is_alias_of(getattr(x, name), y) for name in names)
    try:
        return bool(torch._C._is_alias_of(a, b))  # type: ignore[attr-defined]
    except (RuntimeError, NotImplementedError):
        return False


def _significant_strides(m: _Meta) -> tuple[int | None, ...] | None:
    """Strides that carry meaning: skip dims of size <= 1, and empty tensors entirely. A size
    the trace cannot know (data-dependent, unbacked) makes the strides unknown: None."""
    return None if m.stride is None else _strides_that_count(m.shape, m.stride)


def _strides_that_count(shape: Sequence[int | None], stride: Sequence[int | None]) -> tuple[int | None, ...] | None:
    """The strides some element is reached through: those of the dims of size > 1; None for an
    empty tensor (none) or a size the trace cannot know."""
    if any(s == 0 for s in shape) or None in shape:
        return None
    return tuple(st for sz, st in zip(shape, stride) if sz is not None and sz > 1)


def _agree(a: Sequence[int | None], b: Sequence[int | None]) -> bool:
    """Same length and equal wherever both are known (None: unknown to the trace)."""
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


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

    def rebuild(self, tensors: Sequence[torch.Tensor]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``(args, kwargs)`` with these tensors in place of the original ones."""
        leaves = list(self.leaves)
        for pos, t in zip(self.positions, tensors):
            leaves[pos] = t
        args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return args, kwargs

    def eager(self, tensors: Sequence[torch.Tensor]) -> Any:
        args, kwargs = self.rebuild(tensors)
        return self.func(*args, **kwargs)

    def __call__(self, tensors: Sequence[torch.Tensor]) -> Any:
        # Only a backend calls this (our eager runs call `eager`), so the inputs are traced. Dynamo
        # traces the Python itself: it records nothing (it would break the graph), and no trace is kept.
        out = self.eager(tensors)
        if self.trace is None and not torch.compiler.is_dynamo_compiling():
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


# ---------------------------------------------------------------------------------------------
# Fresh input copies.


def _is_plain_strided(t: torch.Tensor) -> bool:
    return (
        type(t) is torch.Tensor
        and t.layout == torch.strided
        and t.device.type != "meta"
        and not t.is_conj()
        and not t.is_neg()
        and not t.is_quantized
    )


def _storage_key(t: torch.Tensor) -> tuple[str, int] | None:
    """What identifies the storage of a plain strided tensor (None: no storage worth sharing)."""
    if not _is_plain_strided(t) or not t.untyped_storage().nbytes():
        return None
    return str(t.device), t.untyped_storage().data_ptr()


def _flat(like: torch.Tensor, storage: torch.UntypedStorage) -> torch.Tensor:
    """All of ``storage`` as a 1-D tensor of ``like``'s dtype and device."""
    return like.new_empty(0).set_(storage, 0, (storage.nbytes() // like.element_size(),), (1,))


#: Where copies of inputs that share a storage find the copy of it: by the storage, and by the
#: dtype where the copies are widened (one storage seen as two dtypes cannot be widened as one).
_Bases = dict[tuple[tuple[str, int], torch.dtype | None], torch.Tensor]


def _copy(
    t: torch.Tensor,
    randomize: bool,
    values: torch.Tensor | None = None,
    bases: _Bases | None = None,
    widen: bool = False,
) -> torch.Tensor:
    """A copy with the same values (or, when ``randomize``, fresh ones for floating tensors:
    ``values`` where given, uniform [0, 1) noise elsewhere), size, strides, storage offset,
    ``requires_grad`` and leaf-ness; with ``widen``, a floating tensor's in float64 (complex128).
    ``bases`` (for a tensor whose storage other inputs share) maps that storage to a flat tensor
    over its copy, made by the first of them: the copies are views of it, so they share memory as
    views of one base do (AOTAutograd's synthetic bases)."""
    with torch.no_grad():
        src = t.detach()
        fresh = randomize and src.dtype.is_floating_point
        dtype = _widened_dtype(src.dtype) if widen else src.dtype
        key = _storage_key(src) if bases is not None else None
        if bases is not None and key is not None:
            shared = (key, src.dtype if widen else None)
            base = bases.get(shared)
            if base is None:
                base = bases[shared] = _flat_copy(src, dtype)
                if fresh:
                    base.uniform_(0, 1)
            if base.dtype == dtype:
                copy = base.as_strided(src.size(), src.stride(), src.storage_offset())
            else:  # one storage seen as two dtypes: shared, but not as views
                copy = src.new_empty(0).set_(base.untyped_storage(), src.storage_offset(), src.size(), src.stride())
        elif _is_plain_strided(src):
            whole = _flat_copy(src, dtype)
            copy = whole.new_empty(0).set_(whole.untyped_storage(), src.storage_offset(), src.size(), src.stride())
            if fresh:
                whole.uniform_(0, 1)
        else:
            copy = src.clone().to(dtype)
            if fresh:
                copy.uniform_(0, 1)
        if fresh and values is not None:
            copy.copy_(values)
    if t.requires_grad:
        copy.requires_grad_(True)
        base = t._base if t._is_view() else None
        if base is not None and base.grad_fn is not None:
            # a view of a non-leaf (autograd allows an in-place on it): a view, at the same size,
            # strides and offset, of a non-leaf copy of the whole storage
            with torch.no_grad():
                whole = _flat(copy, copy.untyped_storage())
            copy = whole.requires_grad_(True).clone().as_strided(copy.size(), copy.stride(), copy.storage_offset())
        elif t.grad_fn is not None:
            copy = copy.view_as(copy) if t._is_view() else copy.clone()
    return copy


def _widened_dtype(dtype: torch.dtype) -> torch.dtype:
    if dtype.is_complex:
        return torch.complex128
    return torch.float64 if dtype.is_floating_point else dtype


def _flat_copy(src: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """All of ``src``'s storage, copied, as a 1-D tensor of ``dtype`` (element for element)."""
    return _flat(src, src.untyped_storage()).to(dtype, copy=True)


def _copies(
    tensors: Sequence[torch.Tensor],
    randomize: bool = False,
    values: Sequence[torch.Tensor] | None = None,
    widen: bool = False,
) -> list[torch.Tensor]:
    """Fresh copies; an input passed twice stays one tensor passed twice, and inputs that share
    a storage (views of one base) are copied as views of one base, so aliasing survives the copy
    (with ``widen``, floating tensors in float64 or complex128, and only inputs of one dtype share
    the widened copy of their storage)."""
    distinct = list({id(t): t for t in tensors}.values())
    keys = [_storage_key(t) for t in distinct]
    shared = {k for k in keys if k is not None and keys.count(k) > 1}
    bases: _Bases = {}
    memo: dict[int, torch.Tensor] = {}
    for i, t in enumerate(tensors):
        if id(t) not in memo:
            value = values[i] if values is not None else None
            memo[id(t)] = _copy(t, randomize, value, bases if _storage_key(t) in shared else None, widen)
    return [memo[id(t)] for t in tensors]


def _donor_values(call: _TensorCall, sample: tuple[Sequence[Any], Mapping[str, Any]] | None) -> list[torch.Tensor] | None:
    """The tensors of ``sample`` (the same call drawn with other data), if they can stand in for
    the inputs: the same structure, shapes and dtypes, and other floating values. None if not."""
    if sample is None:
        return None
    leaves, spec = pytree.tree_flatten((tuple(sample[0]), dict(sample[1])))
    if spec != call.spec:
        return None
    donors = [leaves[i] for i in call.positions]
    if not all(isinstance(d, torch.Tensor) for d in donors):
        return None
    tensor_positions = set(call.positions)
    for i, (mine, theirs) in enumerate(zip(call.leaves, leaves)):
        # everything but floating values must be the original's: dims, scalars, indices, pivots
        if i not in tensor_positions and not _same_leaf(mine, theirs):
            return None
    differs = False
    for d, t in zip(donors, call.tensors):
        if d.shape != t.shape or d.dtype != t.dtype or d.device != t.device or d.layout != t.layout:
            return None
        if not t.dtype.is_floating_point:
            if not _identical(d.detach(), t.detach(), strides=False):
                return None
            continue
        if t.layout != torch.strided or torch._debug_has_internal_overlap(t) != 0:
            return None  # its elements share memory: no copy can give each its own value
        if not differs:
            differs = not _identical(d.detach(), t.detach(), strides=False)
    return [d.detach() for d in donors] if differs else None


def _identical(a: torch.Tensor, b: torch.Tensor, strides: bool = True) -> bool:
    """Same metadata and bitwise-same values (NaN equals NaN). The storage offset always counts;
    strides only where an element is reached through them (:func:`_strides_that_count`, as the
    metadata check compares them): another stride changes no value."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    try:
        if strides and a.layout == torch.strided:
            if a.storage_offset() != b.storage_offset():
                return False
            if _strides_that_count(a.shape, a.stride()) != _strides_that_count(b.shape, b.stride()):
                return False
        if torch.equal(a, b):
            return True
        if a.is_floating_point() or a.is_complex():
            return bool(((a == b) | (a.isnan() & b.isnan())).all())
        return False
    except (RuntimeError, NotImplementedError):
        return True  # cannot compare this kind of tensor: do not claim a mutation


# ---------------------------------------------------------------------------------------------
# Running.


@contextlib.contextmanager
def _seeded(tensors: Sequence[torch.Tensor], seed: int = _SEED) -> Iterator[None]:
    devices = sorted({t.device.index or 0 for t in tensors if t.device.type == "cuda"})
    with torch.random.fork_rng(devices=devices):
        _manual_seed(seed)
        yield


def _manual_seed(seed: int) -> None:
    """``torch.manual_seed(seed)``; where no accelerator is in use, the CPU generator's alone:
    torch's queues a seeding of each accelerator not yet initialized, formatting the caller's
    stack for each (about 2 ms a call, five calls a check), which only an accelerator
    initialized later would run, and the next check seeds it then."""
    if _accelerator_in_use():
        torch.manual_seed(seed)
    else:
        torch.default_generator.manual_seed(seed)


def _accelerator_in_use() -> bool:
    """An accelerator that ``torch.manual_seed`` seeds at once: CUDA, XPU or MTIA initialized, MPS
    built in, or a PrivateUse1 backend registered."""
    return bool(
        torch.cuda.is_initialized()
        or torch.xpu.is_initialized()
        or torch.mtia.is_initialized()
        or torch._C._has_mps
        or torch._C._get_privateuse1_backend_name() != "privateuseone"
    )


def _called(pattern: CallPattern, fn: Callable[..., Any], inputs: list[torch.Tensor], seed: int = _SEED) -> Called:
    """``fn`` (eager, compiled or the float64 reference's eager) called as ``pattern`` calls it,
    under the RNG seed: the same for each, so ops that draw random numbers agree. What the op or
    the backend raises is theirs, ``SystemExit`` too (:func:`optests._findings.user_code`)."""
    with _seeded(inputs, seed), user_code():
        return pattern.call(fn, inputs)


def _user_gradients(pattern: CallPattern, called: Called, inputs: list[torch.Tensor]) -> tuple[torch.Tensor | None, ...]:
    """``pattern``'s gradients of what :func:`_called` made: as user code (the op's backward)."""
    with user_code():
        return pattern.gradients(called, inputs)


@dataclass
class _Run:
    inputs: list[torch.Tensor]
    called: Called | None = None
    grads: tuple[torch.Tensor | None, ...] | None = None
    error: BaseException | None = None  # forward (or trace) error
    backward_error: BaseException | None = None

    @property
    def out(self) -> Any:
        """The function's outputs, as it returned them."""
        return self.called.out if self.called is not None else None


class _DrawsRandom(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Notes the first op tagged ``nondeterministic_seeded`` that runs under it."""

    found: str | None = None

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if self.found is None and torch.Tag.nondeterministic_seeded in func.tags:
            self.found = str(func)
        return func(*args, **(kwargs or {}))


#: A field of :class:`CheckOptions` that a finding's few-line repro does not write out.
_UNRENDERED = {"rendered": False}
#: A field that is not a keyword of :func:`aot_autograd_check` (the ``aot_eager`` check, a
#: contract): where it differs from its default, the repro calls :func:`run_check` with it.
_NOT_KEYWORD = {"rendered": False, "keyword": False}


@dataclass(frozen=True)
class CheckOptions:
    """The check's options, declared once. :func:`aot_autograd_check`'s keywords are these (its
    signature is a contract, written out, and a test holds it to this declaration);
    :func:`run_check` takes them as keywords; a finding keeps them (:attr:`Finding.options`);
    repro scripts write them from here. A new option is a field here (and a keyword there)."""

    #: Trace with symbolic shapes.
    dynamic: bool
    #: Checks that the compiled call raises as eager does (the in-tree helper's contract).
    assert_raises_regex_fn: Callable[..., Any] = dataclasses.field(default=assert_raises_regex, metadata=_UNRENDERED)
    #: Compares eager and compiled values.
    assert_equals_fn: Callable[..., Any] = dataclasses.field(default=torch.testing.assert_close, metadata=_UNRENDERED)
    #: ``True``, ``False`` or ``"auto"`` (only where some input and some output require grad).
    check_gradients: bool | Literal["auto"] = True
    #: Check again on randomized data, through the same compiled function.
    try_check_data_specialization: bool = False
    #: Run everything, compare nothing.
    skip_correctness_check: bool = False
    #: Compile without functionalization (with the default partitioner).
    disable_functionalization: bool = False
    #: Compare output metadata, eager vs compiled and traced vs real.
    check_metadata: bool = True
    #: Compare each output's ``is_leaf``, whether its ``grad_fn`` is None, and which other
    #: outputs it shares a storage with (is a view of), eager vs compiled.
    check_autograd_metadata: bool = True
    #: Run each call on its own copies of the inputs and compare their mutations.
    check_mutations: bool = True
    #: The randomized rerun also runs for forward-only checks.
    randomize_without_gradients: bool = True
    #: A difference within float32 rounding of the float64 result is noted, not a finding.
    float64_reference: bool = True
    #: The same call drawn with other data: the randomized rerun takes its floating values.
    randomized_sample: tuple[Sequence[Any], Mapping[str, Any]] | None = dataclasses.field(default=None, metadata=_UNRENDERED)
    #: What messages end with (default: the function's name and the mode).
    context: str | None = dataclasses.field(default=None, metadata=_UNRENDERED)
    #: Code that defines ``func``, ``args`` and ``kwargs`` for the repro (default: from the values).
    repro: str | None = dataclasses.field(default=None, metadata=_UNRENDERED)
    #: The compile step, by name (``optests._backends``). Not a keyword of
    #: :func:`aot_autograd_check`, which is the ``aot_eager`` check (a contract).
    backend: str = dataclasses.field(default=DEFAULT_BACKEND, metadata=_NOT_KEYWORD)
    #: Compare output strides (``False``: an op whose strides the backend chooses freely,
    #: ``Backend.free_strides``). Not a keyword of :func:`aot_autograd_check` (``aot_eager``
    #: keeps every stride).
    compare_strides: bool = dataclasses.field(default=True, metadata=_NOT_KEYWORD)
    #: How eager and compiled are called and their outputs used, by name (``optests._patterns``).
    #: Not a keyword of :func:`aot_autograd_check`, whose pattern is the in-tree check's (a contract).
    pattern: str = dataclasses.field(default=DEFAULT_PATTERN, metadata=_NOT_KEYWORD)

    def rendered(self) -> dict[str, object]:
        """``dynamic`` and the options a finding's few-line repro writes out: those that differ
        from their defaults."""
        return {"dynamic": self.dynamic} | {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.metadata.get("rendered", True) and getattr(self, f.name) != f.default
        }

    def beyond_keywords(self) -> dict[str, object]:
        """The options that are not keywords of :func:`aot_autograd_check` and differ from their
        defaults (another backend, call pattern...): a repro that has any calls :func:`run_check`."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if not f.metadata.get("keyword", True) and getattr(self, f.name) != f.default
        }


@dataclass(frozen=True)
class _Checking:
    """One run of the check: its options, the label its messages end with, the call pattern
    that calls eager and compiled alike, and what it notes on its way (differences put down to
    rounding), filled as it runs."""

    options: CheckOptions
    context: str
    pattern: CallPattern
    notes: list[str] = dataclasses.field(default_factory=list)


def _compile(call: Callable[..., Any], opts: _Checking) -> Callable[..., Any]:
    options = opts.options
    return get_backend(options.backend).compile(
        call, dynamic=options.dynamic, disable_functionalization=options.disable_functionalization
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
    gradients = _wants_gradients(opts, eager.inputs, eager.out)
    if gradients:
        try:
            eager.grads = _user_gradients(pattern, eager.called, eager.inputs)
        except Exception as e:
            _refused_alike(compiled, originals, opts, None, e)
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


def _refused_alike(
    compiled: Callable[..., Any],
    originals: list[torch.Tensor],
    opts: _Checking,
    call: Exception | None,
    backward: Exception | None,
) -> None:
    """Under a call pattern (not the default call), where eager's call (``call``) or backward
    (``backward``) raised: the compiled function must refuse alike. A compiled call that goes
    through is a finding, as any difference in which one raises; where it raises too, the sample
    is not applicable (the caller's eager failure), as where eager's refusal is this machine's
    (:data:`_MACHINE_REFUSAL`). The default call keeps eager's failure as the sample's precondition:
    a sample eager cannot run is no valid call."""
    if opts.options.pattern == DEFAULT_PATTERN or _MACHINE_REFUSAL.search(str(call or backward)):
        return
    inputs = _copies(originals)
    try:
        called = _called(opts.pattern, compiled, inputs)
        if backward is not None:
            _user_gradients(opts.pattern, called, inputs)
    except Exception:
        return
    make = _finding_factory(opts)
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


@dataclass(frozen=True)
class _Compared:
    """What a comparison of eager and compiled looks at: the call, the inputs both runs started
    from, each run, whether gradients were taken, and the float64 reference (None: none)."""

    call: _TensorCall
    originals: list[torch.Tensor]
    eager: _Run
    comp: _Run
    opts: _Checking
    gradients: bool
    truth: _Float64Reference | None


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


def _grad_fn(t: torch.Tensor) -> str:
    return "None" if t.grad_fn is None else f"a grad_fn ({type(t.grad_fn).__name__})"


def _listed(names: list[str]) -> str:
    return "[" + ", ".join(names) + "]"


def _mutations(c: _Compared) -> None:
    with _unless_random(c):
        _check_mutations(c.call, c.originals, c.eager, c.comp, c.opts, c.truth)


@contextlib.contextmanager
def _unless_random(c: _Compared) -> Iterator[None]:
    """Values that differ are no finding (noted once) where the backend draws random numbers
    otherwise than eager (``Backend.same_random``) and eager's call runs an op tagged
    ``nondeterministic_seeded``: asked only of a difference, so eager's runs are as they are."""
    try:
        yield
    except (ForwardMismatch, BackwardMismatch, MutationMismatch) as f:
        of_values = not isinstance(f, MutationMismatch) or f.what.endswith(" after the call")  # not "... mutated"
        if get_backend(c.opts.options.backend).same_random or not of_values:
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
    draws = _DrawsRandom()  # type: ignore[no-untyped-call]
    try:
        with draws, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _called(c.opts.pattern, c.call.eager, _copies(c.originals))
    except Exception:
        return None
    return draws.found


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


def _outputs(c: _Compared) -> None:
    truth = c.truth.out if c.truth is not None else None
    assert c.eager.called is not None and c.comp.called is not None
    with _unless_random(c):
        precision = c.eager.called.precision
        _compare(
            ForwardMismatch, "out", c.eager.called.compared, c.comp.called.compared, c.opts, truth=truth, precision=precision
        )


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
    with _unless_random(c):
        _compare(
            BackwardMismatch,
            "grad",
            c.eager.grads,
            c.comp.grads,
            c.opts,
            names=names,
            truth=truth,
            precision=precision,
            weighed=weighed,
        )


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
    ("outputs", _compares, _outputs),
    ("gradients", _compares, _gradients),
)


#: A compiled result that differs from eager is put down to float32 rounding when its distance
#: from the float64 result is at most this many times eager's own (plus the dtype's atol), eager's
#: counted as at least the dtype's epsilon times the largest magnitude of that float64 result.
ROUNDING_MULTIPLIER = 3.0


#: What the float64 call gives: the pattern's compared outputs, the gradients (None: none taken),
#: and the inputs as the call left them (None: the two seeds wrote them otherwise).
_Reference = tuple[Any, tuple[torch.Tensor | None, ...] | None, tuple[torch.Tensor, ...] | None]


class _Float64Reference:
    """The same call in float64 on the same values, through the same call pattern, made only
    when a comparison fails: the truth against which eager's and the compiled call's rounding
    errors are measured, for outputs, gradients and what the call wrote into its inputs. None
    (no reference) when the op fails in float64, or draws random numbers (two seeds disagree).
    Where the pattern's backward took tangents it drew (:attr:`Called.tangents`), the float64
    backward takes eager's, widened in their layouts: the gradients of the same tangents."""

    def __init__(
        self,
        call: _TensorCall,
        originals: list[torch.Tensor],
        gradients: bool,
        pattern: CallPattern,
        tangents: list[torch.Tensor] | None = None,
    ) -> None:
        self._call, self._originals, self._gradients, self._pattern = call, originals, gradients, pattern
        self._tangents = tangents
        self._made = False
        self._value: _Reference | None = None

    def _get(self) -> _Reference | None:
        if not self._made:
            self._made = True
            runs = [self._run(seed) for seed in (_SEED, _SEED + 1)]
            if runs[0] is not None and runs[1] is not None and _same_values(runs[0][:2], runs[1][:2]):
                same_inputs = _same_values(runs[0][2], runs[1][2])
                self._value = (runs[0][0], runs[0][1], runs[0][2] if same_inputs else None)
        return self._value

    def _run(self, seed: int) -> _Reference | None:
        inputs = _copies(self._originals, widen=True)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                called = _called(self._pattern, self._call.eager, inputs, seed)
                if self._tangents is not None:
                    called.tangents = _copies(self._tangents, widen=True)
                grads = _user_gradients(self._pattern, called, inputs) if self._gradients else None
        except Exception:
            return None
        return called.compared, grads, tuple(t.detach() for t in inputs)

    def out(self) -> Any:
        value = self._get()
        return None if value is None else value[0]

    def grads(self) -> Any:
        value = self._get()
        return None if value is None else value[1]

    def after(self, i: int) -> torch.Tensor | None:
        """Input ``i`` as the float64 call left it (what it wrote there), or None: no reference,
        or the input's memory overlaps another input's, where what the call leaves depends on
        the order of its writes, which the float64 kernels need not share."""
        alone = len(_storage_groups(self._originals, overlap=True)[i]) == 1
        value = self._get() if alone else None
        return None if value is None or value[2] is None else value[2][i]


def _same_leaf(a: Any, b: Any) -> bool:
    try:
        return a is b or bool(type(a) is type(b) and a == b)
    except Exception:  # e.g. an array, whose == is elementwise
        return False


def _same_values(a: Any, b: Any) -> bool:
    """Bitwise the same (NaN equal to NaN); False where the tensors cannot be compared (sparse,
    nested): a reference that cannot be shown reproducible is not one."""
    a_leaves, b_leaves = pytree.tree_leaves(a), pytree.tree_leaves(b)
    if len(a_leaves) != len(b_leaves):
        return False
    for x, y in zip(a_leaves, b_leaves):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            try:
                if (
                    x.layout != torch.strided
                    or y.layout != torch.strided
                    or not _identical(x.detach(), y.detach(), strides=False)
                ):
                    return False
            except (RuntimeError, NotImplementedError):
                return False
        elif isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor) or not (x == y or (x != x and y != y)):
            return False
    return True


def _rounding_only(
    actual: Any,
    expected: Any,
    truth: Any,
    opts: _Checking,
    grads: bool,
    precision: torch.dtype | None = None,
    weighed: bool = False,
) -> str | None:
    """Why the difference between ``actual`` (compiled) and ``expected`` (eager) is rounding, or
    None: every differing leaf is floating, finite where they differ, and each differing element
    no further from the float64 ``truth`` than ``ROUNDING_MULTIPLIER`` times eager's (plus atol),
    eager's error counted as at least the dtype's epsilon times the leaf's largest finite float64
    magnitude: an element of a sum rounds at its terms' scale, not its own, so eager landing on the
    truth for one element does not hold compiled code to a precision its dtype lacks there. (An
    error below that, times ``ROUNDING_MULTIPLIER``, plus atol, is always put down to rounding.)
    Where the call computed in a lower ``precision`` (autocast) and eager's leaf shows that
    precision's rounding (:func:`_lower_rounding`), an element's own error counts as at least
    the leaf's relative error times the element's size: whether one element of a bfloat16 result
    lands on the truth is chance, and compiled code may round it otherwise. A leaf eager computed
    at its own precision keeps the element-by-element rule: a compiled result computed in
    bfloat16 beside it is a finding (pytorch/pytorch#153044). Where the gradients are of tangents a
    pattern drew (``weighed``, :attr:`Called.tangents`), eager's error counts as at least the
    median of its errors over the leaf's differing elements: each element sums rounding errors
    the random tangents weigh, so one of eager's landing near the truth is chance (layer norm of
    data far from zero: the per-row mean's rounding, weighed by each row's tangent, in the weight's
    gradient). A median, not the largest: one ill-conditioned element excuses no other."""
    flatten: Callable[[Any], list[Any]] = list if grads else pytree.tree_leaves
    a_l, e_l, r_l = flatten(actual), flatten(expected), flatten(truth)
    if not len(a_l) == len(e_l) == len(r_l):
        return None
    worst, lowest = (0.0, 0.0), 0.0  # the largest errors; the largest lower-precision level used
    floor = 0.0  # the largest least error eager's counted as, where it decided
    median = 0.0  # the largest median eager's error counted as, where it decided (``weighed``)
    for a, e, r in zip(a_l, e_l, r_l):
        try:
            opts.options.assert_equals_fn(a, e)
            continue
        except Exception:
            pass
        if not (isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor) and isinstance(r, torch.Tensor)):
            return None
        if not (e.is_floating_point() or e.is_complex()) or a.dtype != e.dtype or not a.shape == e.shape == r.shape:
            return None
        if a.device != e.device or a.layout != e.layout:
            return None
        with torch.no_grad():
            try:
                wide = torch.complex128 if e.is_complex() else torch.float64
                got, eager, exact = (x.detach().cpu().to_dense().to(wide) for x in (a, e, r))
            except (RuntimeError, NotImplementedError):
                return None
            differ = ~((got == eager) | (got.isnan() & eager.isnan()))
            if not bool(differ.any()):  # the values agree: what assert_equals_fn saw is not rounding
                return None
            finite = torch.isfinite(got[differ]).all() & torch.isfinite(eager[differ]).all() & torch.isfinite(exact[differ]).all()
            if not bool(finite):
                return None
            level = _lower_rounding(eager, exact, e.dtype, precision)
            c_dist, e_dist = (got - exact).abs()[differ], (eager - exact).abs()[differ]
            # element by element: a large rounding error on one element must not excuse another;
            # but eager's counts as at least epsilon times the leaf's largest finite magnitude (a
            # sum rounds at its terms' scale, not its own). Not empty: the differing elements are
            # finite in both.
            scale = exact.abs()[torch.isfinite(exact) & torch.isfinite(eager)].max()
            step = torch.finfo(e.dtype).eps * float(scale)
            own = torch.maximum(e_dist, level * exact.abs()[differ])
            atol = _DEFAULT_TOLERANCES.get(e.dtype, (0.0, 0.0))[1]
            typical = float(e_dist.median()) if weighed else 0.0
            if not bool((c_dist <= ROUNDING_MULTIPLIER * own.clamp(min=max(step, typical)) + atol).all()):
                return None
            if not bool((c_dist <= ROUNDING_MULTIPLIER * own.clamp(min=step) + atol).all()):
                median = max(median, typical)
            elif not bool((c_dist <= ROUNDING_MULTIPLIER * own + atol).all()):
                floor = max(floor, step)
            worst, lowest = max(worst, (float(c_dist.max()), float(e_dist.max()))), max(lowest, level)
    lower = ""
    if lowest and precision is not None:
        lower = f"; eager rounds at {str(precision).removeprefix('torch.')}'s precision, {lowest:.2g} relative"
    if floor:
        lower += f"; eager's error counted as at least {floor:.3g}, epsilon times the largest magnitude"
    if median:
        lower += f"; eager's error counted as at least {median:.3g}, its median, the tangents weighing each term"
    return (
        f"rounding: compiled is {worst[0]:.3g} from the float64 result, eager {worst[1]:.3g} "
        f"(each element within {ROUNDING_MULTIPLIER:g}x{lower})"
    )


#: Eager's leaf shows a lower precision's rounding when the median of its elements' errors
#: relative to the float64 result is at least this fraction of that precision's machine epsilon
#: (bfloat16: 2**-7 / 16, about 5e-4; float32 results are some thousand times closer, and one
#: ill-conditioned element does not move a median), or when each of its values is one of that
#: precision's and the float64 result's are not all (one bfloat16 element may land on the truth
#: by chance; a result that is exact in float32, ones, shows nothing).
LOWER_ROUNDING_FRACTION = 1 / 16


def _lower_rounding(eager: torch.Tensor, exact: torch.Tensor, dtype: torch.dtype, precision: torch.dtype | None) -> float:
    """The relative error each element of eager's leaf (of ``dtype``, widened, as ``exact``)
    counts as having, where the call computed in ``precision``, coarser than ``dtype``, and the
    leaf shows that precision's rounding (``LOWER_ROUNDING_FRACTION``): the leaf's
    ``max |eager - exact| / max |exact|`` over its finite elements, at least the precision's unit
    roundoff. Else 0: the element-by-element rule."""
    if precision is None or torch.finfo(precision).eps <= torch.finfo(dtype).eps:
        return 0.0
    finite = torch.isfinite(eager) & torch.isfinite(exact)
    nonzero = finite & (exact != 0)
    if not bool(nonzero.any()):
        return 0.0
    eps = torch.finfo(precision).eps
    e, x = eager[nonzero], exact[nonzero]
    typical = float(((e - x).abs() / x.abs()).median())
    shown = typical >= LOWER_ROUNDING_FRACTION * eps or (not e.is_complex() and _in(e, precision) and not _in(x, precision))
    if not shown:
        return 0.0
    return max(float((eager - exact).abs()[finite].max()) / float(exact.abs()[finite].max()), eps / 2)


def _in(values: torch.Tensor, precision: torch.dtype) -> bool:
    """Each of ``values`` (real) is one of ``precision``'s."""
    return bool((values == values.to(precision).to(values.dtype)).all())


#: ``torch.testing.assert_close``'s default (rtol, atol) by dtype (its documentation).
_DEFAULT_TOLERANCES = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex32: (1e-3, 1e-5),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}


def _finding_factory(opts: _Checking) -> Callable[..., Finding]:
    def make(cls: type[Finding], what: str, actual: object, expected: object, detail: str = "") -> Finding:
        return cls(what, actual, expected, opts.context, detail=detail)

    return make


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
        raise make(BackwardMismatch, "compiled backward", f"raised {error_line(e)}", "no error (eager backward succeeded)") from e


def _forward_only_compiles(call: _TensorCall, opts: _Checking) -> bool:
    probe = _TensorCall(call.func, *pytree.tree_unflatten(call.leaves, call.spec))
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


def _storage_groups(inputs: Sequence[torch.Tensor], overlap: bool = False) -> list[frozenset[int]]:
    """For each input, the positions of the inputs that share its storage (itself included); with
    ``overlap``, only those whose memory overlaps its own (two halves of one storage do not)."""
    keys = [_storage_key(t) or id(t) for t in inputs]

    def span(t: torch.Tensor) -> tuple[int, int]:
        extent = 1 + sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride())) if t.numel() else 0
        start = int(t.storage_offset())
        return start * t.element_size(), (start + int(extent)) * t.element_size()

    def shares(i: int, j: int) -> bool:
        if keys[i] != keys[j]:
            return False
        if not overlap or i == j:
            return True
        (a0, a1), (b0, b1) = span(inputs[i]), span(inputs[j])
        return a0 < b1 and b0 < a1

    return [frozenset(j for j in range(len(inputs)) if shares(i, j)) for i in range(len(inputs))]


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


def _names(positions: frozenset[int], call: _TensorCall) -> str:
    return "[" + ", ".join(call.names[i] for i in sorted(positions)) + "]"


def _dtype(d: torch.dtype) -> str:
    return str(d).removeprefix("torch.")


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
            _compare(MutationMismatch, name, e, c, opts, what_suffix=" after the call", truth=written, precision=precision)


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


def _error_excerpt(e: BaseException) -> str:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()][:6]
    return "assert_equals_fn said: " + "\n  ".join(lines)


def _difference(actual: Any, expected: Any) -> tuple[str, str]:
    """(actual, expected) phrases: max abs/rel difference for tensors of one shape, else values."""
    if not (isinstance(actual, torch.Tensor) and isinstance(expected, torch.Tensor)):
        return _short(actual), _short(expected)
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return f"{_dtype(actual.dtype)}{list(actual.shape)}", f"{_dtype(expected.dtype)}{list(expected.shape)}"
    with torch.no_grad():
        a, x = actual.detach().cpu(), expected.detach().cpu()
        if a.layout != torch.strided:
            a, x = a.to_dense(), x.to_dense()
        wide = torch.complex128 if (a.is_complex() or x.is_complex()) else torch.float64
        a, x = a.to(wide), x.to(wide)
        nan_mismatch = int((a.isnan() != x.isnan()).sum())
        diff = (a - x).abs().nan_to_num(0.0, posinf=float("inf"))
        if diff.numel() == 0:
            return "differs", "equal to eager"
        flat = int(diff.argmax())
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), diff.shape)) if diff.dim() else ()
        max_abs = float(diff.max())
        rel = diff / x.abs()
        max_rel = float(rel.nan_to_num(0.0, posinf=float("inf")).max())
        count = int((diff > 0).sum()) + nan_mismatch
    where = f" at {list(index)}" if index else ""
    nan = f", {nan_mismatch} NaN mismatches" if nan_mismatch else ""
    actual_txt = f"max abs diff {max_abs:.6g}{where} (got {_scalar(a, index)}, eager {_scalar(x, index)}), max rel diff {max_rel:.6g}, {count} of {diff.numel()} elements differ{nan}"
    return actual_txt, "equal to eager within tolerance"


def _scalar(t: torch.Tensor, index: tuple[int, ...]) -> str:
    v = t[index].item() if index else t.item()
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


# ---------------------------------------------------------------------------------------------
# Entry points.


def _validate(func: object, args: object, kwargs: object, dynamic: object, check_gradients: object) -> None:
    if not callable(func):
        raise TypeError(f"func must be callable, got {type(func).__name__}: {func!r:.80}")
    if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
        raise TypeError(f"args must be a list or tuple of positional arguments, got {type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise TypeError(f"kwargs must be a dict of keyword arguments, got {type(kwargs).__name__}")
    if not isinstance(dynamic, bool):
        raise TypeError(f"dynamic must be True or False, got {dynamic!r}")
    if check_gradients not in (True, False, "auto") or not isinstance(check_gradients, (bool, str)):
        raise ValueError(f"check_gradients must be True, False or 'auto', got {check_gradients!r}")


def aot_autograd_check(
    func: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any] | None,
    dynamic: bool,
    assert_raises_regex_fn: Callable[..., Any] = assert_raises_regex,
    assert_equals_fn: Callable[..., Any] = torch.testing.assert_close,
    check_gradients: bool | Literal["auto"] = True,
    try_check_data_specialization: bool = False,
    skip_correctness_check: bool = False,
    disable_functionalization: bool = False,
    *,
    check_metadata: bool = True,
    check_autograd_metadata: bool = True,
    check_mutations: bool = True,
    randomize_without_gradients: bool = True,
    float64_reference: bool = True,
    randomized_sample: tuple[Sequence[Any], Mapping[str, Any]] | None = None,
    context: str | None = None,
    repro: str | None = None,
) -> None:
    """Check that ``func(*args, **kwargs)`` behaves the same under AOTAutograd as in eager.

    Drop-in for ``torch.testing._internal.optests.aot_autograd_check`` (same positional
    arguments and semantics). Returns ``None``; raises a :class:`optests.Finding` subclass whose
    ``stage`` says what went wrong. The keyword-only switches turn our additional checks off:
    with all five ``False`` the behaviour is the in-tree check's.

    ``float64_reference``: a compiled output or gradient that differs from eager beyond
    tolerance is not a finding when it is no further from the same call in float64 than
    ``ROUNDING_MULTIPLIER`` times eager is, eager's error counted as at least the dtype's epsilon
    times the result's largest magnitude (float32 rounding on ill-conditioned data, which another
    CPU rounds otherwise). ``randomized_sample`` is the same call drawn with other data
    (an OpInfo's sample generator under another seed): the randomized rerun takes its floating
    values, so the data keeps the op's preconditions; without it (or where its structure,
    shapes or dtypes differ) the rerun uses uniform [0, 1) noise.

    ``context`` labels messages (default: the function's name and the mode); ``repro`` is code
    that defines ``func``, ``args`` and ``kwargs`` (and ``randomized_sample``, if given) for the
    repro script (default: rendered from the values).

    Each call resets Dynamo (``torch._dynamo.reset()``) before it compiles, so that its verdict
    does not depend on what the process compiled before: the caller's compiled frames are
    dropped, and recompiled when next called.
    """
    options = {name: value for name, value in locals().items() if name not in ("func", "args", "kwargs")}
    _check(func, args, kwargs, CheckOptions(**options))


def _check(func: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any] | None, options: CheckOptions) -> list[str]:
    """:func:`aot_autograd_check`; returns its notes (differences put down to rounding). A
    finding gets its repro (rendered here: only a finding needs it) and its options."""
    _validate(func, args, kwargs, options.dynamic, options.check_gradients)
    kwargs = {} if kwargs is None else kwargs
    mode = mode_name(options.dynamic, options.disable_functionalization)
    options = dataclasses.replace(options, context=options.context or f"{_script.func_name(func)} {mode}")
    # with check_mutations off, the runs use the caller's tensors, which the call may mutate:
    # the repro is written from the values as they were before it
    early = None if options.check_mutations else _render(func, args, kwargs, options)
    call = _TensorCall(func, args, kwargs)
    try:
        return _check_call(call, options)
    except Finding as f:
        f.options = {field.name: getattr(options, field.name) for field in dataclasses.fields(options) if field.name != "repro"}
        repro = early if early is not None else _render(func, args, kwargs, options)
        finding: BaseException | None = f
        while isinstance(finding, Finding):  # and the finding it was made from (a randomized one's)
            finding.repro = repro
            finding = finding.__cause__
        raise


def _render(func: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any], options: CheckOptions) -> str:
    return _script.render(
        func,
        args,
        kwargs,
        options.rendered(),
        randomized_sample=options.randomized_sample,
        setup=options.repro,
        beyond=options.beyond_keywords(),
    )


def _check_call(call: _TensorCall, options: CheckOptions) -> list[str]:
    """The check proper: eager vs compiled on the call's inputs, then on randomized data through
    the same compiled function. Raises a :class:`Finding`; returns the notes. Repro scripts run
    this very function: ``_repro.write_standalone`` copies it, with all it uses, into them."""
    opts = _Checking(options, options.context or "", get_pattern(options.pattern))
    with _environment_independent():
        # Dynamo (which higher-order ops such as map trace their bodies with) keeps compiled frames
        # across calls: without a reset, a check's verdict depends on what ran before it
        torch._dynamo.reset()
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


def run_check(
    func: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any] | None, dynamic: bool, **options: Any
) -> CheckResult:
    """The non-raising form of :func:`aot_autograd_check`: same arguments, returns a
    :class:`optests.CheckResult`. Bad arguments still raise ``TypeError``/``ValueError``."""
    start = time.perf_counter()
    checked = CheckOptions(dynamic=dynamic, **options)
    try:
        notes = _check(func, args, kwargs, checked)
    except Finding as f:
        return CheckResult(Outcome.FAILED, f.stage, f.summary, f.detail, f.repro, time.perf_counter() - start, f)
    return CheckResult(Outcome.PASSED, duration=time.perf_counter() - start, notes=tuple(notes))
