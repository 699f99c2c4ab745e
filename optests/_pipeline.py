"""One pipeline from a selection to verdicts, plan -> run -> judge, for every entry point: the
sweep (``_case.collect`` plans, ``Sweep.check`` runs and judges, ``_execute.execute`` is its
child's side), ``optests check``, ``check_op`` and ``op_test`` (``_author.plan`` plans,
``_author.run_planned`` runs, :func:`judge` judges).

*Plan* (:func:`plan`). Every key a selection implies, in the one order every entry point runs
them (:func:`keys`: mode, then backend, then each sample followed by the samples derived from
it). A dtype whose samples cannot be made gives keys without a sample (:class:`Unmade`): not
applicable (the op does not support the dtype, or makes no samples for it) or broken (its sample
generator raised: an eager-stage failure). A :class:`Base` is a sample as it was made, an
OpInfo's, a module's (``module_db``: the module called through ``functional_call``,
:mod:`optests._modules`) or a given ``(args, kwargs)``, with the settings its origin asks for;
:func:`suffixes` names the samples the input transforms and call patterns derive from it, without
making them (so without calling the op).

*Run*. In the entry point's process, in this order (:func:`settle`): a broken key, a not
applicable one, the registry's ``skip`` entry (a sample that hangs is never started), then (the
sweep's ``--optests-resume`` only) the record of the run it resumes, then a derived sample whose
base died (:class:`DeadBases`). Everything else runs in the isolated child
(:func:`run_child`, which :func:`check` does the work of), so that nothing that calls the op
runs in the entry point's process:

1. derive the key's sample from the base (its transform, one draw of ``resized``), and the
   base's redraw (the randomized rerun's data) alike;
2. choose ``check_gradients`` (a derived sample with no input requiring grad checks none) and the
   dtype that is judged (the one ``dtypes`` cast to, or a pattern computes in, else the sample's);
3. the OpInfo's own skips and tolerances for that judged dtype, as the in-tree test the backend
   stands for reads them (``Backend.opinfo_test``), and whether output strides are compared
   (``Backend.free_strides``);
4. the check, with the key's mode and backend;
5. a derived sample whose eager call fails is not applicable; the tolerance the record keeps is the
   OpInfo's override and what the check noted.

The child returns a :class:`Ran`: the result, the full report, and where asked the inputs it
checked and the callable it compiled (detached, so they cross the process boundary), for a repro.
:func:`died` is the record of a check whose process died.

*Judge* (:func:`judge`). One function from a record and the registry to a verdict, its entry and
the message (:class:`Judged`: ``what=actual, but expected ... [context]``, the registry's reason,
the report); each entry point adds how to record it as expected in its own words (an accept
command, a registry line). :func:`load_registry` reads a registry the same way for all (a
missing file is refused), :func:`stale` names the entries that match nothing the run planned.

*Seams for what comes next.* :func:`check` is the one place a key becomes a check:

- a check over an ordered sequence of calls on one compiled function plugs in as a call
  pattern (:class:`optests._patterns.CallPattern`) whose derived sample carries the sequence;
  the key, the plan, the run order and the judgement stay as they are (a sequence is one key, one
  record);
- checking a failure again in a fresh process, to tell flaky from deterministic, is a second
  :func:`run_child` of the same key in a fresh child (``IsolatedRunner.run(..., fresh=True)``),
  made by :func:`judge_again` between run and judge where the first record's verdict would fail
  the run (:func:`rerun_due`), up to ``--optests-reruns`` times; every check's answer reaches
  :func:`judge` on the record (its ``reruns``), and the registry's judge decides ``flaky``
  (:meth:`optests._registry.Registry.judge`), so a results file is judged alike later.

Every entry point runs checks with one intra-op thread
(:func:`optests._check.one_intra_op_thread`), in a forked child where it can.
"""

from __future__ import annotations

import dataclasses
import hashlib
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ._causes import by_name, said
from ._findings import CheckResult, Outcome, Stage, Verdict
from ._key import SampleKey, Scope, op_id, transform_name
from .errors import DerivationError as DerivationError
from .errors import RegistryMissing as RegistryMissing

if TYPE_CHECKING:
    from ._registry import Entry, Registry
    from ._results import SampleResult, Try
    from ._runner import Died
    from ._transforms import Derived

Sample = tuple[Sequence[Any], Mapping[str, Any]]
#: A sample as it crosses back from the isolated child (:class:`Ran`).
Inputs = tuple[list[Any], dict[str, Any]]


@dataclass(frozen=True)
class Base:
    """A sample as it was made, before any transform."""

    #: The callable the check compiles.
    func: Callable[..., Any]
    args: Sequence[Any]
    kwargs: Mapping[str, Any]
    #: As the check takes it: an OpInfo's ``supports_autograd``; ``"auto"`` for a given sample.
    check_gradients: bool | Literal["auto"]
    #: The OpInfo asks for outputs not to be compared.
    skip_correctness_check: bool = False
    #: The same call drawn with other data, for the randomized rerun (None: it reruns on noise).
    redraw: Sample | None = None
    #: The OpInfo whose decorations (skips, tolerance overrides) judge it; None for a given sample.
    opinfo: Any = None
    #: Script lines that rebuild the sample (and its redraw) by name, for a finding's repro.
    setup: str | None = None
    #: The op's first sample only: the samples after it that call the same callable, in order
    #: (at most :data:`FOLLOWING`): the ``sequence`` pattern calls one compiled function over them.
    following: tuple[Sample, ...] = ()


#: How many samples after the first a sequence over an op's own samples calls.
FOLLOWING = 8


def following(bases: Sequence[tuple[Callable[..., Any], Sequence[Any], Mapping[str, Any]]]) -> tuple[Sample, ...]:
    """Of an op's samples in order, as ``(func, args, kwargs)``, those after the first that call
    the same callable (at most :data:`FOLLOWING`): what :attr:`Base.following` holds."""
    if not bases:
        return ()
    first = bases[0][0]
    return tuple((args, kwargs) for func, args, kwargs in bases[1:] if func is first)[:FOLLOWING]


def _derivation_error(transform: str, where: str, e: Exception) -> DerivationError:
    first = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
    return DerivationError(f"the {transform} transform raised {type(e).__name__} deriving from {where}: {first}")


def suffixes(base: Base, transforms: Sequence[str], where: str = "a sample") -> list[str]:
    """The suffixes of the samples ``transforms`` (input transforms and call patterns) derive from
    ``base``, in ``transforms``' order (``resized``: one draw); none from a sample a transform
    cannot take apart. A transform that raises is a :class:`DerivationError` naming it and
    ``where`` (the sample, as messages name it)."""
    if not transforms:
        return []
    from ._transforms import suffixes as of

    found: list[str] = []
    for t in transforms:
        try:
            found += of(t, base.args, base.kwargs, origin=base)
        except Exception as e:
            raise _derivation_error(t, where, e) from e
    return found


def transforms_for(entry: object, transforms: Sequence[str]) -> Sequence[str]:
    """The transforms that derive samples from the samples of ``entry`` (an OpInfo, or None for
    given samples: all of ``transforms``; a module's, :class:`optests._modules.ModuleEntry`: all but
    those of :data:`optests._modules.NOT_FOR_MODULES`)."""
    if not transforms or entry is None:
        return transforms
    from ._modules import NOT_FOR_MODULES, ModuleEntry

    return [t for t in transforms if t not in NOT_FOR_MODULES] if isinstance(entry, ModuleEntry) else transforms


#: How many of an op's samples a run checks (``--optests-select``, ``optests check --select``).
SELECTIONS = ("all", "first:N", "signature")


@dataclass(frozen=True)
class Selection:
    """Which of an op's samples (of one dtype) a run checks: ``all``; the ``first:N``; or
    ``signature``, the first of each distinct signature (every tensor's dtype, shape, strides,
    layout, device and ``requires_grad``, every other argument's value, and for a module's sample
    the module's configuration, as its ``repr`` shows it). The samples keep the
    indices they have in the full sweep, so their ids and registry entries mean the same."""

    kind: Literal["all", "first", "signature"] = "all"
    count: int = 0

    @classmethod
    def parse(cls, value: str) -> Selection:
        """``all``, ``first:N`` (N >= 1) or ``signature``; a ``ValueError`` saying what is valid."""
        text = value.strip()
        if text in ("all", "signature"):
            return cls(text)  # type: ignore[arg-type]
        head, _, count = text.partition(":")
        if head == "first" and count.isascii() and count.isdigit() and int(count) >= 1:
            return cls("first", int(count))
        raise ValueError(f"{value!r}, but expected one of {', '.join(SELECTIONS)} (N a whole number >= 1)")

    def __str__(self) -> str:
        return f"first:{self.count}" if self.kind == "first" else self.kind

    def indices(self, samples: Sequence[Sample], funcs: Sequence[Any] = ()) -> list[int]:
        """The indices of the samples checked, in order; ``funcs``, where given, what each sample
        calls (a module's sample calls its own module)."""
        if self.kind == "all":
            return list(range(len(samples)))
        if self.kind == "first":
            return list(range(min(self.count, len(samples))))
        seen: dict[str, int] = {}
        for i, sample in enumerate(samples):
            seen.setdefault(signature(sample, funcs[i] if funcs else None), i)
        return sorted(seen.values())


def signature(sample: Sample, func: Any = None) -> str:
    """What :class:`Selection` ``signature`` tells samples apart by: each tensor's metadata (not
    its values), each other argument's value, the structure they are in, and where ``func`` is a
    module's call (:class:`optests._modules.ModuleCall`), the module's ``repr``: its constructor's
    arguments (a convolution's stride, a norm's ``eps``) that no input shows."""
    import torch
    import torch.utils._pytree as pytree

    leaves, spec = pytree.tree_flatten((tuple(sample[0]), dict(sample[1])))
    module = getattr(func, "module", None)
    parts = [repr(module) if isinstance(module, torch.nn.Module) else "", str(spec)]
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            try:
                stride: object = leaf.stride()
            except (RuntimeError, NotImplementedError):
                stride = None
            parts.append(f"T({leaf.dtype}, {tuple(leaf.shape)}, {stride}, {leaf.layout}, {leaf.device}, {leaf.requires_grad})")
        else:
            parts.append(f"{type(leaf).__name__}({leaf!r:.200})")
    return "; ".join(parts)


def keys(
    op: str,
    variant: str,
    dtype: str,
    device: str,
    modes: Sequence[str],
    backends: Sequence[str],
    derived: Sequence[Sequence[str]] | Mapping[int, Sequence[str]],
) -> list[SampleKey]:
    """The checks of an op's samples of one dtype (``derived[i]``: the suffixes of sample ``i``),
    in the one order every entry point runs them: mode, then backend, then each sample followed
    by the samples derived from it."""
    from ._key import Mode

    by_index = derived if isinstance(derived, Mapping) else dict(enumerate(derived))
    return [
        SampleKey(op, variant, Mode(mode), dtype, device, i, transform=suffix, backend=backend)
        for mode in modes
        for backend in backends
        for i, suffix_list in by_index.items()
        for suffix in ("", *suffix_list)
    ]


@dataclass(frozen=True)
class Unmade:
    """Why an op's samples of one dtype are not checked: none can be made for it (not
    applicable), or its sample generator raised (``broken``: an eager-stage failure)."""

    reason: str
    broken: bool = False


def made(op: str, dtype: str, device: str, supported: bool, make: Callable[[], Sequence[Base]]) -> Sequence[Base] | Unmade:
    """The samples ``make`` makes of op ``op`` (its id) for ``dtype`` on ``device``, or why there
    are none: ``supported`` false, none made, or ``make`` raised (whatever it raised but Ctrl-C)."""
    if not supported:
        return Unmade(f"{op} does not support {dtype} on {device}")
    try:
        bases = make()
    except KeyboardInterrupt:  # Ctrl-C, in the planning process
        raise
    except BaseException as e:  # the generator's, SystemExit too: a broken key
        first = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
        return Unmade(f"sample_inputs raised {type(e).__name__}: {first}", broken=True)
    return bases if bases else Unmade(f"{op} has no samples for {dtype} on {device}")


@dataclass(frozen=True)
class Planned:
    """One key a selection implies and the sample (as it was made) that it or its transform
    checks; a key without a sample has none (``reason`` says why)."""

    key: SampleKey
    base: Base | None = None
    reason: str = ""


def plan(
    op: str,
    variant: str,
    device: str,
    modes: Sequence[str],
    backends: Sequence[str],
    samples: Mapping[str, Mapping[int, Base] | Unmade],
    transforms: Sequence[str],
    selection: Selection,
) -> list[Planned]:
    """Every key of an op's samples on one device (``samples``: by dtype, the samples by index, or
    why there are none), in the order :func:`keys` gives, by dtype as ``samples`` lists them:
    ``selection`` picks which samples are checked (they keep their indices), ``transforms``
    derive more from each. A dtype without samples gives one key without a sample per mode and
    backend."""
    from ._key import Mode

    planned: list[Planned] = []
    for dtype, bases in samples.items():
        if isinstance(bases, Unmade):
            planned += [
                Planned(
                    SampleKey(op, variant, Mode(mode), dtype, device, None, bases.broken, backend=backend), None, bases.reason
                )
                for mode in modes
                for backend in backends
            ]
            continue
        order = sorted(bases)
        if order and transforms:  # the first sample carries the ones after it (the sequence over them)
            after = following([(bases[i].func, bases[i].args, bases[i].kwargs) for i in order])
            bases = {**bases, order[0]: dataclasses.replace(bases[order[0]], following=after)} if after else bases
        chosen = selection.indices([(bases[i].args, bases[i].kwargs) for i in order], [bases[i].func for i in order])
        picked = [order[j] for j in chosen]
        where = f"{op_id(op, variant)} {dtype} {device} sample"
        derived = {i: suffixes(bases[i], transforms, f"{where} {i}") for i in picked}
        planned += [
            Planned(key, bases[key.sample])
            for key in keys(op, variant, dtype, device, modes, backends, derived)
            if key.sample is not None
        ]
    return planned


def derive(key: SampleKey, base: Base, sample: Sample | None = None) -> Derived | None:
    """The sample ``key``'s transform derives from ``base`` (or from ``sample``, the same call
    with other data: its redraw); None if it derives no such one. A transform that raises is a
    :class:`DerivationError` naming it and the key."""
    from ._transforms import derive as derive_all

    assert key.sample is not None
    args, kwargs = sample if sample is not None else (base.args, base.kwargs)
    name = transform_name(key.transform)
    try:
        found = derive_all(name, args, kwargs, draws=1, seed=key.sample, origin=base)
    except Exception as e:
        raise _derivation_error(name, f"{key.id}{' (its redraw)' if sample is not None else ''}", e) from e
    return next((d for d in found if d.suffix == key.transform), None)


@dataclass(frozen=True)
class Checked:
    """What :func:`check` found: the result (its ``notes`` are the tolerance the record keeps)
    and the inputs it checked (a derived sample's, or the base's)."""

    result: CheckResult
    inputs: Sample
    check_gradients: bool | Literal["auto"]
    #: The callable the check compiled (``inplace``: the in-place variant; else the base's).
    func: Callable[..., Any] | None = None

    @property
    def tolerance(self) -> str:
        return tolerance(self.result)


def tolerance(result: CheckResult) -> str:
    """The tolerance a record keeps of a check's result: the OpInfo's override and what the
    check noted, in that order."""
    return "; ".join(result.notes)


def check(key: SampleKey, base: Base) -> Checked:
    """Check ``key`` (a sample of ``base``, or one its transform derives) in its mode and backend."""
    import torch

    from . import _opinfo
    from ._api import run_check
    from ._backends import get_backend
    from ._check import assert_close_equal_nan
    from ._patterns import DEFAULT_PATTERN, DependsOnCpu, Unsupported
    from ._transforms import judged_dtype, not_applicable

    dtype = getattr(torch, key.dtype)
    backend = get_backend(key.backend)
    judged, context = dtype, key.context
    func, args, kwargs = base.func, base.args, base.kwargs
    check_gradients, redraw, setup = base.check_gradients, base.redraw, base.setup
    pattern, lower = DEFAULT_PATTERN, None
    if key.transform:  # the OpInfo's code makes the sample, not the derived one: a repro writes the derived tensors
        derived = derive(key, base)
        if derived is None:
            message = f"{key.transform} derives no such sample [{context}]"
            return Checked(CheckResult(Outcome.NOT_APPLICABLE, message=message), (args, kwargs), check_gradients)
        args, kwargs, context = list(derived.args), derived.kwargs, f"{context}: {derived.description}"
        check_gradients = derived.check_gradients(check_gradients)
        func, pattern, lower = derived.func or func, derived.pattern or pattern, derived.judged
        again = derive(key, base, redraw) if redraw is not None else None  # the redraw, transformed alike
        redraw = (list(again.args), again.kwargs) if again is not None else None
        judged, setup = judged_dtype(derived, dtype), None
    assert_equals: Callable[..., Any] = assert_close_equal_nan
    tolerance: tuple[str, ...] = ()
    if base.opinfo is not None:  # the OpInfo's own skips and tolerances, for the dtype judged
        deco = _opinfo.decorations(base.opinfo, key.mode.dynamic, key.device, judged, backend.opinfo_test)
        if deco.skip:
            return Checked(CheckResult(Outcome.SKIPPED, message=deco.skip_message), (args, kwargs), check_gradients, func)
        # a pattern's lower precision (autocast): the override is for that dtype's results only
        assert_equals = deco.assert_equals(judged, leaves_of_dtype=lower is not None)
        tolerance = tuple(t for t in (deco.tolerance,) if t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ops warn about deprecated arguments etc.; not findings
        result = run_check(
            func,
            args,
            kwargs,
            key.mode.dynamic,
            assert_equals_fn=assert_equals,
            check_gradients=check_gradients,
            try_check_data_specialization=True,
            skip_correctness_check=base.skip_correctness_check,
            disable_functionalization=not key.mode.functionalized,
            randomized_sample=redraw,
            context=context,
            repro=setup,
            backend=key.backend,
            compare_strides=key.op_id not in backend.free_strides,
            pattern=pattern,
        )
    if key.transform and result.error is not None and isinstance(result.error.__cause__, (Unsupported, DependsOnCpu)):
        # what PyTorch does not support for any op; what eager returns on this CPU alone
        message = f"{key.transform} does not apply: {result.message}"
        result = CheckResult(Outcome.NOT_APPLICABLE, message=message, duration=result.duration)
    elif key.transform and result.stage is Stage.EAGER:  # the derived sample is not a valid call
        message = not_applicable(key.transform, result.message, context)
        result = CheckResult(Outcome.NOT_APPLICABLE, message=message, duration=result.duration)
    else:
        result = CheckResult(
            result.outcome,
            result.stage,
            result.message,
            result.detail,
            result.repro,
            result.duration,
            result.error,
            tolerance + result.notes,
        )
    return Checked(result, (args, kwargs), check_gradients, func)


def died(key: SampleKey, answer: Died, duration: float) -> CheckResult:
    """The result of a check whose process died (``crash``) or ran past its time (``timeout``)."""
    message = f"{answer.message.splitlines()[0]} [{key.context}]"
    return CheckResult(Outcome.FAILED, answer.stage, message, detail=answer.message, duration=duration)


@dataclass(frozen=True)
class Settled:
    """A key decided without a check (:func:`settle`): its result, its verdict, and what a test
    runner says of it in one line."""

    result: CheckResult
    verdict: Verdict
    said: str


def settle(key: SampleKey, reason: str, registry: Registry) -> Settled | None:
    """What the entry point's process decides of ``key`` before any check, in this order: a broken
    key (its samples cannot be made: an eager-stage failure that no entry expects), a key without a sample (not
    applicable, ``reason`` says why), the registry's ``skip`` entry; None: run it."""
    if key.broken:
        result = CheckResult(Outcome.FAILED, Stage.EAGER, f"{reason} [{key.op_id} {key.dtype} {key.device}]")
        return Settled(result, Verdict.UNEXPECTED_FAILURE, f"[eager] the OpInfo's samples cannot be made: {reason}")
    if key.sample is None:
        return Settled(CheckResult(Outcome.NOT_APPLICABLE, message=reason), Verdict.NOT_APPLICABLE, f"not applicable: {reason}")
    entry = registry.skip_entry(key.scope, key.sample)  # it crashes or hangs
    if entry is not None:
        result = CheckResult(Outcome.SKIPPED, entry.stage, entry.reason)
        return Settled(result, Verdict.SKIPPED, f"expected-failures registry: skip ({entry.stage}): {entry.reason}")
    return None


def record(
    key: SampleKey, db: str, result: CheckResult, verdict: Verdict | None = None, reruns: tuple[Try, ...] = ()
) -> SampleResult:
    """The record of ``key``'s check, as every entry point writes it (``reruns``: what checking it
    again found, :func:`judge_again`)."""
    from ._results import SampleResult

    r = result
    return SampleResult(key, db, r.outcome, r.stage, r.message, r.duration, verdict, tolerance(r), reruns=reruns)


@dataclass(frozen=True)
class Ran:
    """What the isolated child returns of one key (:func:`run_child`): all the entry point's
    process needs, so that it never derives (or calls the op) itself."""

    #: The check's result; with the inputs, a finding's inputs and options detached (:func:`portable`).
    result: CheckResult
    #: The finding's full report ("" on a pass).
    report: str
    #: As the check was called: ``True``, ``False`` or ``"auto"``.
    check_gradients: bool | Literal["auto"]
    #: The inputs checked (a derived sample's, or the base's), detached; None where not asked
    #: for, or where they do not cross the process boundary (a closure among them): the caller
    #: has the base sample's.
    inputs: Inputs | None = None
    #: The callable the check compiled where it is not the base's (``inplace``: the in-place
    #: variant), if it crosses the process boundary; None: the base's.
    func: Callable[..., Any] | None = None
    #: A ``resized`` finding's smallest failing inputs and their sizes, where asked for.
    shrunk: tuple[Inputs, str] | None = None


def run_child(
    key: SampleKey,
    base: Base,
    *,
    inputs: bool = False,
    shrink: Callable[[SampleKey, Base, CheckResult], tuple[Inputs, str] | None] | None = None,
) -> Ran:
    """:func:`check` of ``key``, on the side that runs it (the isolated child, or the only
    process), and what its caller needs of it: with ``inputs``, the inputs checked and the
    callable compiled; with ``shrink``, a failure's smallest inputs as ``shrink`` finds them."""
    import pickle

    checked = check(key, base)
    report = str(checked.result.error) if checked.result.error is not None else ""
    smallest = shrink(key, base, checked.result) if shrink is not None and checked.result.outcome is Outcome.FAILED else None
    if not inputs:  # the caller keeps the record and the report: the finding stays where it is
        return Ran(checked.result, report, checked.check_gradients, shrunk=smallest)
    result = portable(checked.result)
    checked_inputs: Inputs | None = portable_value((list(checked.inputs[0]), dict(checked.inputs[1])))
    func = checked.func if checked.func is not base.func else None
    for value in (checked_inputs, func, smallest):
        try:
            pickle.dumps(value)
        except Exception:  # a closure among them: the caller falls back to the base sample's
            checked_inputs, func, smallest = (
                None if value is checked_inputs else checked_inputs,
                None if value is func else func,
                None if value is smallest else smallest,
            )
    return Ran(result, report, checked.check_gradients, checked_inputs, func, smallest)


def input_elements(inputs: Any) -> int:
    """How many elements the tensors among ``inputs`` hold (a tensor passed twice counts once):
    how big a sample is, to pick the smallest of a cause's samples."""
    import torch
    import torch.utils._pytree as pytree

    seen = {id(x): int(x.numel()) for x in pytree.tree_leaves(inputs) if isinstance(x, torch.Tensor)}
    return sum(seen.values())


def portable_value(value: Any) -> Any:
    """``value`` with its tensors detached (autograd does not cross processes), keeping
    ``requires_grad``, a tensor passed twice, and a tensor that autograd made (a non-leaf, or a
    view of one: an in-place variant's input) as a :class:`NonLeaf` that :func:`rebuilt` makes a
    non-leaf again, so that a repro rebuilds it as it was checked."""
    import torch
    import torch.utils._pytree as pytree

    detached: dict[int, Any] = {}
    bases: dict[int, torch.Tensor] = {}

    def detach(x: Any) -> Any:
        if not isinstance(x, torch.Tensor):
            return x
        if id(x) not in detached:
            if x.grad_fn is not None:
                base = x._base if x._is_view() and x._base is not None and x._base.grad_fn is not None else None
                if base is None:
                    detached[id(x)] = NonLeaf(x.detach(), None)
                else:  # one data tensor a base: views of one base stay views of one rebuilt base
                    data = bases.setdefault(id(base), base.detach())
                    offset = int(x.storage_offset()) - int(base.storage_offset())
                    detached[id(x)] = NonLeaf(data, (tuple(x.shape), tuple(x.stride()), offset))
            else:
                detached[id(x)] = x.detach().requires_grad_(x.requires_grad) if x.requires_grad else x.detach()
        return detached[id(x)]

    return pytree.tree_map(detach, value)


@dataclass(frozen=True)
class NonLeaf:
    """A tensor autograd made, as it crosses processes (:func:`portable_value`): its data (a
    view's: its base's), and a view's size, strides and offset in its base."""

    data: Any
    view: tuple[tuple[int, ...], tuple[int, ...], int] | None


def rebuilt(value: Any) -> Any:
    """``value`` (from :func:`portable_value`) with each :class:`NonLeaf` a non-leaf again: a
    clone of a leaf that requires grad, a view of one such clone per base."""
    import torch
    import torch.utils._pytree as pytree

    clones: dict[int, torch.Tensor] = {}

    def rebuild(x: Any) -> Any:
        if not isinstance(x, NonLeaf):
            return x
        if id(x.data) not in clones:
            clones[id(x.data)] = x.data.detach().requires_grad_().clone(memory_format=torch.preserve_format)
        whole = clones[id(x.data)]
        if x.view is None:
            return whole
        size, stride, offset = x.view
        return whole.as_strided(size, stride, whole.storage_offset() + offset)

    return pytree.tree_map(rebuild, value, is_leaf=lambda x: isinstance(x, NonLeaf))


def portable(result: CheckResult) -> CheckResult:
    """``result`` as it can cross from the runner's child: a finding's inputs and options (its
    ``randomized_sample``) detached (:func:`portable_value`); either is dropped (None) if it does
    not pickle."""
    import pickle

    error = result.error
    if error is None:
        return result
    for field in ("inputs", "options"):
        value = getattr(error, field)
        if value is not None:
            value = portable_value(value)
            try:
                pickle.dumps(value)
            except Exception:  # e.g. a closure among the arguments: the repro falls back to the sample's
                value = None
            setattr(error, field, value)
    return result


# -- judging --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Judged:
    """A record judged by the registry (:func:`judge`): the record with its verdict, the entry
    that judged it, and where the verdict is not as expected, the message (without how to record
    it, which each entry point says in its own words: :attr:`how`)."""

    record: SampleResult
    entry: Entry | None
    #: ``what=actual, but expected ... [context]``, the registry's reason, the report; "" when ok.
    message: str = ""
    #: The first words of how to record it as expected (each entry point ends them its way).
    how: str = ""

    @property
    def verdict(self) -> Verdict:
        assert self.record.verdict is not None
        return self.record.verdict


def judge(record: SampleResult, report: str, registry: Registry, registry_name: str) -> Judged:
    """``record`` judged by ``registry`` (``registry_name``: how messages name it): its verdict
    and, where the verdict is not as expected, one message shape for every entry point."""
    verdict, entry = registry.judge(record)
    judged = dataclasses.replace(record, verdict=verdict)
    if verdict.ok or verdict is Verdict.XFAILED:
        return Judged(judged, entry)
    context = f"[{record.key.context}]"
    if verdict is Verdict.UNEXPECTED_PASS:
        assert entry is not None
        head = f"outcome=passed, but expected a failure at stage {entry.stage} {context}\nThe registry says: {entry.reason}"
        how = "It passes now: remove it from the registry"
    elif verdict is Verdict.STAGE_CHANGED:
        assert entry is not None
        head = f"stage={record.stage}, but expected {entry.stage} {context}\nThe registry says: {entry.reason}\n{report}"
        how = "If the new stage is expected, record it"
    else:
        head = report
        how = f"Not in the expected-failures registry ({registry_name}). If this failure is expected, record it"
    if by_name(record.cause) is not None:
        head = f"{head}\n{said(record.cause)}"
    if record.reruns:
        head += f"\n{reproduced(record)}"
    return Judged(judged, entry, head, how)


def reproduced(record: SampleResult) -> str:
    """What checking ``record`` again found, where every check's verdict would fail the run."""
    n = len(record.reruns)
    again = "checked again in a fresh process" if n == 1 else f"checked again {n} times, each in a fresh process"
    return f"It reproduced: {again}, it found {', '.join(t.label for t in record.reruns)}."


def settled_line(again: Sequence[SampleResult], count: int) -> str:
    """What checking ``again``, some of the ``count`` samples of one cause, found, where the
    others were not checked again (:class:`Reruns`)."""
    found = sorted({t.label for r in again for t in r.reruns})
    rest = count - len(again)
    return (
        f"It reproduced: {len(again)} of its samples checked again in a fresh process found {', '.join(found)}; "
        f"the other {rest} were not checked again."
    )


def flaky_line(record: SampleResult) -> str:
    """How every entry point names a flaky record, in one line."""
    return f"flaky: {record.id}: its checks found {', '.join(t.label for t in record.tries)} [{record.key.context}]"


def rerun_due(judged: Judged) -> bool:
    """Whether the entry point checks ``judged``'s sample again (:func:`judge_again`): its verdict
    would fail the run (an unexpected failure or stage, or an unexpected pass, which a flaky
    failure listed as ``xfail`` gives as often), and its first check did not time out (it would
    cost its time limit again) or end in an internal error of optests."""
    r = judged.record
    return not judged.verdict.ok and r.stage is not Stage.TIMEOUT and not (r.outcome is Outcome.FAILED and r.stage is None)


def judge_again(
    record: SampleResult,
    report: str,
    registry: Registry,
    registry_name: str,
    reruns: int,
    again: Callable[[], SampleResult],
) -> Judged:
    """:func:`judge` of ``record``, where it is :func:`rerun_due` after checking the sample again
    up to ``reruns`` times (``again``: one more check of its key in a fresh process, its record),
    until a check's verdict would not fail the run (then the record is ``flaky``). The record
    keeps its first check's outcome, stage and message, and what each rerun found (``reruns``)."""
    from ._results import Try

    judged = judge(record, report, registry, registry_name)
    tries: list[Try] = []
    while len(tries) < reruns and rerun_due(judged):
        tries.append(Try.of(again()))
        judged = judge(dataclasses.replace(record, reruns=tuple(tries)), report, registry, registry_name)
    return judged


#: After this many samples of one cause each reproduced when checked again, the cause's other
#: samples are not checked again (:class:`Reruns`).
SETTLED_AFTER = 3


class Reruns:
    """When an entry point checks a sample again (:func:`judge_again`): up to ``times`` times,
    until ``settled_after`` samples of its cause have each reproduced. The cause is then
    deterministic here, and its other samples keep their first check: the 482 samples of one
    fake-kernel bug cost three checks in fresh processes, not 482. A cause with a flaky sample is
    checked again for every sample. One a run (a command, a sweep's worker)."""

    def __init__(self, times: int, settled_after: int = SETTLED_AFTER) -> None:
        self.times = times
        self.settled_after = settled_after
        self._reproduced: Counter[str] = Counter()
        self._flaky: set[str] = set()

    def settled(self, cause: str) -> bool:
        """Whether ``cause``'s samples are no longer checked again."""
        return cause not in self._flaky and self._reproduced[cause] >= self.settled_after

    def judge(
        self, record: SampleResult, report: str, registry: Registry, registry_name: str, again: Callable[[], SampleResult]
    ) -> Judged:
        """:func:`judge_again` of ``record``, checking it again unless its cause is settled."""
        cause = record.cause if record.outcome is Outcome.FAILED else ""  # an unexpected pass: always again
        times = 0 if cause and self.settled(cause) else self.times
        judged = judge_again(record, report, registry, registry_name, times, again)
        if cause and judged.record.reruns:
            if judged.verdict is Verdict.FLAKY:
                self._flaky.add(cause)
            else:
                self._reproduced[cause] += 1
        return judged


def load_registry(path: str | Path) -> list[Entry]:
    """The entries of the registry at ``path`` (relative to the working directory, as every
    command takes it); a :class:`RegistryMissing` if there is no file there."""
    from ._registry import load

    where = Path(path)
    if not where.is_file():
        raise RegistryMissing(f"{where}: no registry there")
    return load(where)


def stale_entries(
    entries: Sequence[Entry], planned: Sequence[SampleKey], transforms: Sequence[str], torch_version: str
) -> list[Entry]:
    """The entries of ``entries`` that lie inside what ``planned`` (every key of a run that
    checks each of its ops' samples) covers, its ops, modes, dtypes, devices, backends and
    transforms, and match none of its keys: they are stale."""
    from ._registry import stale

    collected: dict[Scope, set[int]] = {}
    runs: set[tuple[str, str, str, str, str]] = set()
    for key in planned:
        samples = collected.setdefault(key.scope, set())
        if key.sample is not None:
            samples.add(key.sample)
        runs.add(key.run)

    def in_selection(e: Entry) -> bool:
        run = (e.op_id, e.mode, e.dtype, e.device, e.backend)
        return run in runs and (not e.transform or transform_name(e.transform) in transforms)

    return stale(entries, collected, in_selection, torch_version)


def stale_line(e: Entry) -> str:
    """How every entry point reports a stale entry, in one line."""
    return f"stale registry entry (matches no collected sample): {e.label} samples={list(e.samples) if e.samples else 'all'}"


#: How the message of a derived sample that :class:`DeadBases` keeps from being run starts.
NOT_RUN = "not run: "


@dataclass
class DeadBases:
    """The base samples whose check died (``timeout`` or ``crash``) in this run, by id: a sample
    derived from one of them is not run by default (each would likely cost its timeout, or a
    crash, again), and is recorded ``skipped``, saying why. ``option`` names how the caller
    runs them anyway (``--optests-derived-after-death``). ``directory``, where given, is shared
    with the run's other processes (the sweep's xdist workers): a death is noted there too, so
    that a derived sample checked on another worker after its base died is not run either."""

    option: str
    directory: Path | None = None
    _dead: dict[str, Stage] = dataclasses.field(default_factory=dict)

    def note(self, key: SampleKey, stage: Stage | None) -> None:
        """``key`` was checked and its check ended at ``stage``."""
        if key.transform or key.sample is None or stage not in (Stage.TIMEOUT, Stage.CRASH):
            return
        self._dead[key.id] = stage
        if self.directory is not None:
            from ._files import WriteError, write_atomic

            try:
                write_atomic(self.directory / _marker(key.id), stage.value.encode())
            except WriteError:  # this process still knows it
                pass

    def not_run(self, key: SampleKey) -> CheckResult | None:
        """The record of derived sample ``key`` if its base died: ``skipped``; else None (run it)."""
        if not key.transform:
            return None
        base = dataclasses.replace(key, transform="")
        stage = self._dead.get(base.id)
        if stage is None and self.directory is not None:
            try:
                stage = Stage((self.directory / _marker(base.id)).read_text())
            except (OSError, ValueError):
                stage = None
        if stage is None:
            return None
        self._dead[base.id] = stage
        how = "timed out" if stage is Stage.TIMEOUT else "crashed"
        message = f"{NOT_RUN}the sample it derives from, {base.id}, {how}; {self.option} runs it [{key.context}]"
        return CheckResult(Outcome.SKIPPED, message=message)


def _marker(sample_id: str) -> str:
    """A file name for a sample id (which may hold any character an op's name holds)."""
    return hashlib.sha256(sample_id.encode()).hexdigest()[:32]
