"""One path from a sample to its record, for every entry point: the sweep (``_case.collect`` names
the keys, ``_execute.execute`` checks one in the runner's child), ``optests check``, ``check_op``
and ``op_test`` (``_author.plan`` names them, ``_author.run_planned`` checks them).

A :class:`Base` is a sample as it was made, an OpInfo's, a module's (``module_db``: the module
called through ``functional_call``, :mod:`optests._modules`) or a given ``(args, kwargs)``, with the
settings its origin asks for. :func:`suffixes` names the samples the input transforms derive from
it; :func:`keys` orders the checks; :func:`check` makes one check of one key, in this order:

1. derive the key's sample from the base (its transform, one draw of ``resized``), and the
   base's redraw (the randomized rerun's data) alike;
2. choose ``check_gradients`` (a derived sample with no input requiring grad checks none) and the
   dtype that is judged (the one ``dtypes`` cast to, else the sample's);
3. the OpInfo's own skips and tolerances for that dtype, as the in-tree test the backend stands
   for reads them (``Backend.opinfo_test``), and whether output strides are compared
   (``Backend.free_strides``);
4. the check, with the key's mode and backend;
5. a derived sample whose eager call fails is not applicable; the tolerance the record keeps is the
   OpInfo's override and what the check noted.

:func:`died` is the record of a check whose process died; :class:`DeadBases` keeps, for every
entry point alike, the samples derived from a base sample whose check died from being run (each
would cost its timeout again). Every entry point runs checks with one
intra-op thread (:func:`optests._check.one_intra_op_thread`), in a forked child where it can.
"""

from __future__ import annotations

import dataclasses
import hashlib
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ._findings import CheckResult, Outcome, Stage
from ._key import SampleKey, transform_name

if TYPE_CHECKING:
    from ._runner import Died
    from ._transforms import Derived

Sample = tuple[Sequence[Any], Mapping[str, Any]]


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


def suffixes(base: Base, transforms: Sequence[str]) -> list[str]:
    """The suffixes of the samples ``transforms`` (input transforms and call patterns) derive from
    ``base``, in ``transforms``' order (``resized``: one draw); none from a sample a transform
    cannot take apart."""
    if not transforms:
        return []
    from ._transforms import suffixes as of

    found: list[str] = []
    for t in transforms:
        try:
            found += of(t, base.args, base.kwargs, origin=base)
        except Exception:  # a sample a transform cannot take apart: nothing derived from it
            pass
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


def derive(key: SampleKey, base: Base, sample: Sample | None = None) -> Derived | None:
    """The sample ``key``'s transform derives from ``base`` (or from ``sample``, the same call
    with other data: its redraw); None if it derives no such one."""
    from ._transforms import derive as derive_all

    assert key.sample is not None
    args, kwargs = sample if sample is not None else (base.args, base.kwargs)
    try:
        found = derive_all(transform_name(key.transform), args, kwargs, draws=1, seed=key.sample, origin=base)
    except Exception:
        return None
    return next((d for d in found if d.suffix == key.transform), None)


@dataclass(frozen=True)
class Checked:
    """What :func:`check` found: the result (its ``notes`` are the tolerance the record keeps)
    and the inputs it checked (a derived sample's, or the base's)."""

    result: CheckResult
    inputs: Sample
    check_gradients: bool | Literal["auto"]

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
            return Checked(CheckResult(Outcome.SKIPPED, message=deco.skip_message), (args, kwargs), check_gradients)
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
    return Checked(result, (args, kwargs), check_gradients)


def died(key: SampleKey, answer: Died, duration: float) -> CheckResult:
    """The result of a check whose process died (``crash``) or ran past its time (``timeout``)."""
    message = f"{answer.message.splitlines()[0]} [{key.context}]"
    return CheckResult(Outcome.FAILED, answer.stage, message, detail=answer.message, duration=duration)


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
