"""For operator authors: check one op (an OpInfo or a ``torch.library`` custom op) over its
samples and modes, from Python (:func:`check_op`), from pytest (:func:`op_test`) or from the
command line (``optests check``)."""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
import json
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from . import _opinfo, _registry, _runner, _state
from ._backends import refuse_modes
from ._check import one_intra_op_thread
from ._env import CompileCache, parse_compile_cache
from ._findings import CheckResult, Verdict
from ._key import DEFAULT_BACKEND, DTYPES, MODES, Mode, SampleKey, op_id
from ._pipeline import (
    Base,
    DeadBases,
    Planned,
    Ran,
    RegistryMissing,
    Reruns,
    Selection,
    Unmade,
    check,
    died,
    load_registry,
    made,
    portable_value,
    rebuilt,
    record,
    run_child,
    settle,
    stale_entries,
    stale_line,
    transforms_for,
)
from ._pipeline import plan as plan_keys
from ._results import SampleResult, Try
from ._settings import AUTHOR_DEFAULTS, KNOWN_DBS, MODULE_DBS
from .errors import AuthorError as AuthorError
from .errors import StaleEntryWarning as StaleEntryWarning

if TYPE_CHECKING:
    from ._transforms import Derived

Sample = tuple[list[Any], dict[str, Any]]


@dataclass(frozen=True)
class Target:
    """What to check: the op's name and variant, the callable, and where its samples come from."""

    op: str  # an OpInfo's name, a custom op's qualified name, or a callable's
    func: Callable[..., Any]
    opinfo: Any = None  # an OpInfo; None for a custom op or a callable whose samples are given
    db: str = ""  # the database the OpInfo comes from, as the sweep's records name it; "" for any other

    @property
    def variant(self) -> str:
        """The OpInfo's variant; empty for anything else."""
        return str(self.opinfo.variant_test_name or "") if self.opinfo is not None else ""

    @property
    def name(self) -> str:
        """``NAME.VARIANT`` for an OpInfo with a variant, else ``op``."""
        return op_id(self.op, self.variant)


@dataclass(frozen=True)
class SampleCheck:
    """One sample of one op in one mode and dtype, as the author API returns it."""

    key: SampleKey
    result: CheckResult
    inputs: Sample
    check_gradients: object = True  # as the check was called: True, False or "auto"
    #: A ``resized`` finding's smallest failing inputs and their sizes, where asked for (``shrink``).
    shrunk: tuple[Sample, str] | None = None
    #: The callable the check compiled (a module's sample has its own); None: the target's.
    func: Callable[..., Any] | None = None
    #: The database the op comes from, as the sweep's records name it ("" for an author's op).
    db: str = ""
    #: How the registry (none: an empty one) judges it (:func:`optests._pipeline.judge`).
    verdict: Verdict | None = None
    #: Where the verdict is not as expected, why, in the sweep's words ("" otherwise).
    judgement: str = ""
    #: What checking it again, in a fresh process, found (:attr:`optests._results.SampleResult.reruns`).
    reruns: tuple[Try, ...] = ()

    @property
    def id(self) -> str:
        return self.key.id

    @property
    def op(self) -> str:
        """The op as the author names it: ``NAME.VARIANT`` for an OpInfo with a variant."""
        return self.key.op_id

    @property
    def mode(self) -> Mode:
        return self.key.mode

    @property
    def dtype(self) -> str:
        return self.key.dtype

    @property
    def device(self) -> str:
        return self.key.device

    @property
    def sample(self) -> int | None:
        """The sample's index; None where the op has no sample for the dtype (not applicable) or
        its samples cannot be made (broken)."""
        return self.key.sample

    def record(self) -> SampleResult:
        """The record, as the sweep writes it for the same sample."""
        return record(self.key, self.db, self.result, self.verdict, self.reruns)


# -- resolving ------------------------------------------------------------------------------------


def import_modules(names: Iterable[str]) -> None:
    from ._imports import ImportFailed, import_module

    for name in names:
        try:
            import_module(name)
        except ImportFailed as e:  # whatever it raised, sys.exit too
            raise AuthorError(f"--import {name}: importing it failed: {e.summary}") from None


def _custom_op(qualname: str) -> Callable[..., Any]:
    ns, _, name = qualname.partition("::")
    packet = getattr(getattr(torch.ops, ns), name, None) if ns.isidentifier() and name.isidentifier() else None
    if packet is None:
        known = [str(op).replace(".", "::", 1) for op in _registered(ns)]
        close = difflib.get_close_matches(qualname, known, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; is the module that registers it imported (--import MODULE)?"
        raise AuthorError(f"unknown custom op {qualname!r}{hint}")
    overloads = packet.overloads()
    overload: Callable[..., Any] = getattr(packet, "default" if "default" in overloads else overloads[0])
    return overload


def _registered(ns: str) -> list[str]:
    """The ops registered in namespace ``ns`` (``ns.name``)."""
    space = getattr(torch.ops, ns, None)
    names = [n for n in dir(space) if not n.startswith("_")] if space is not None else []
    return [f"{ns}.{n}" for n in names if isinstance(getattr(space, n, None), torch._ops.OpOverloadPacket)]


def resolve(names: Sequence[str]) -> list[Target]:
    """Targets for OpInfo names or globs (``sin``, ``nn.functional.conv*``), module names
    (``nn.Linear``: each of its training modes; ``nn.BatchNorm2d.eval``: one), a ModuleInfo or an
    ``nn.Module`` instance of your own (``MODULE:ATTRIBUTE``) and qualified custom ops (``mylib::myop``). An unknown name is an
    :class:`AuthorError` with close matches. An op named twice is checked once; two ops of one
    name (``NAME.VARIANT``), whose results would clash, are an :class:`AuthorError` naming both."""
    found: list[tuple[Target, str]] = []
    refs = None
    for name in names:
        if "::" in name:
            found.append((Target(name, _custom_op(name)), f"custom op {name}"))
            continue
        if ":" in name:
            found.extend((t, name) for t in _module_info(name))
            continue
        refs = refs if refs is not None else _opinfo.all_ops(KNOWN_DBS)
        matched = _opinfo.select(refs, [name])
        if not matched:
            known = {r.id for r in refs} | {r.name for r in refs if r.db in MODULE_DBS}  # a module's name, too
            close = difflib.get_close_matches(name, sorted(known), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise AuthorError(f"unknown op {name!r}: no OpInfo or ModuleInfo in {', '.join(KNOWN_DBS)} matches{hint}")
        found.extend((Target(r.name, _opinfo.opinfo(r).op, _opinfo.opinfo(r), r.db), r.source) for r in matched)
    return _unique(found)


def _unique(found: Sequence[tuple[Target, str]]) -> list[Target]:
    """The targets without repeats; an :class:`AuthorError` where two are other ops of one name."""
    first: dict[str, tuple[Target, str]] = {}
    targets = []
    for target, source in found:
        seen = first.get(target.name)
        if seen is None:
            first[target.name] = (target, source)
            targets.append(target)
        elif seen[1] != source and (seen[0].func is not target.func or seen[0].opinfo is not target.opinfo):
            raise AuthorError(f"two ops have the id {target.name!r}: {seen[1]} and {source}; their results would clash, name one")
    return targets


def _module_info(spec: str) -> list[Target]:
    """``MODULE:ATTRIBUTE`` naming a ModuleInfo: its ops."""
    from ._modules import is_module_info

    try:
        found = _opinfo.import_attribute(spec)
    except ValueError as e:
        raise AuthorError(f"{spec}: {e}") from None
    if isinstance(found, torch.nn.Module):
        return [_instance_target(found)]
    if not is_module_info(found):
        raise AuthorError(f"{spec} is a {type(found).__name__}, not a ModuleInfo")
    return _targets(found)


def load_samples(spec: str) -> list[Sample]:
    """``MODULE:FUNC``: FUNC() returns SampleInputs or ``(args, kwargs)`` pairs."""
    try:
        func = _opinfo.import_attribute(spec)
    except ValueError as e:
        raise AuthorError(f"--samples {spec}: {e}") from None
    func_name = spec.partition(":")[2]
    if not callable(func):
        raise AuthorError(f"--samples {spec}: {func_name} is not a function")
    try:
        return to_samples(func(), spec)
    except (AuthorError, KeyboardInterrupt):  # here, in the command's process, that is Ctrl-C
        raise
    except BaseException as e:  # SystemExit too: the generator's failure, not the command's end
        raise AuthorError(f"--samples {spec}: {func_name}() raised {type(e).__name__}: {e}") from None


def to_samples(items: Iterable[Any], source: str) -> list[Sample]:
    out: list[Sample] = []
    for i, item in enumerate(items):
        if hasattr(item, "input") and hasattr(item, "args") and hasattr(item, "kwargs"):  # a SampleInput
            out.append(([item.input, *item.args], dict(item.kwargs)))
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], (list, tuple)) and isinstance(item[1], dict):
            out.append((list(item[0]), dict(item[1])))
        else:
            raise AuthorError(f"{source}: item {i} is a {type(item).__name__}; expected a SampleInput or an (args, kwargs) pair")
    if not out:
        raise AuthorError(f"{source}: gave no samples")
    return out


# -- checking -------------------------------------------------------------------------------------


def _dtype_of(sample: Sample, position: int) -> str:
    """The dtype a given sample is recorded under: that of its first tensor."""
    for leaf in torch.utils._pytree.tree_leaves(sample):
        if isinstance(leaf, torch.Tensor):
            name = str(leaf.dtype).removeprefix("torch.")
            if name not in DTYPES:
                raise AuthorError(f"sample {position}: its first tensor is {name}; optests checks {', '.join(DTYPES)}")
            return name
    raise AuthorError(f"sample {position} has no tensor among its arguments: there is nothing to compile")


#: At most this many checks shrink a ``resized`` finding (each compiles: about 0.1 s for a small op).
SHRINK_EXAMPLES = 30


def transforms_of(value: str | Sequence[str]) -> tuple[str, ...]:
    """``"all"``, ``"none"``, a comma-separated string or a sequence of transform names."""
    from ._transforms import parse_transforms

    try:
        return parse_transforms(value if isinstance(value, str) else ",".join(value) or "none")
    except ValueError as e:
        raise AuthorError(f"transforms: {e}") from None


def backends_of(value: str | Sequence[str]) -> tuple[str, ...]:
    """A comma-separated string or a sequence of backend names, each one :func:`optests._backends.get_backend`
    resolves (a registered name, ``dynamo:NAME`` or ``MODULE:ATTRIBUTE``)."""
    from ._backends import parse_backends

    try:
        return parse_backends(value)
    except ValueError as e:
        raise AuthorError(f"backends: {e}") from None


def plan(
    target: Target,
    samples: Sequence[Sample] | None,
    *,
    modes: Sequence[str] = AUTHOR_DEFAULTS.modes,
    dtypes: Sequence[str] = AUTHOR_DEFAULTS.dtypes,
    device: str = AUTHOR_DEFAULTS.device,
    transforms: str | Sequence[str] = AUTHOR_DEFAULTS.transforms,
    backends: str | Sequence[str] = AUTHOR_DEFAULTS.backends,
    select: str = AUTHOR_DEFAULTS.select,
) -> list[Planned]:
    """The checks :func:`check_target` makes, without making them (:func:`optests._pipeline.plan`,
    as the sweep plans them): by dtype, mode and backend, each sample followed by the samples
    every transform derives from it. Given samples are numbered by position (and recorded under
    their first tensor's dtype); an OpInfo's within each dtype, as in the sweep. A dtype the
    OpInfo does not support, or makes no samples for, gives a not-applicable key per mode and
    backend; one whose ``sample_inputs`` raises, a broken key (an eager-stage failure).
    ``select`` (:class:`optests._pipeline.Selection`: ``all``, ``first:N``, ``signature``) picks
    which samples of each dtype are checked; they keep their numbers."""
    try:
        selection = Selection.parse(select)
    except ValueError as e:
        raise AuthorError(f"select={e}") from None
    for mode in modes:
        if mode not in MODES:
            raise AuthorError(f"unknown mode {mode!r}; valid: {', '.join(MODES)}")
    chosen = transforms_for(target.opinfo, transforms_of(transforms))
    instance = _module_instance(target)
    if instance is not None:  # derived as a module_db module's samples are
        from ._modules import NOT_FOR_MODULES

        chosen = [t for t in chosen if t not in NOT_FOR_MODULES]
    compilers = backends_of(backends)
    try:
        refuse_modes(modes, compilers)
    except ValueError as e:
        raise AuthorError(f"modes: {e}") from None
    by_dtype: dict[str, dict[int, Base] | Unmade] = {}
    if samples is not None and _is_module(target):
        raise AuthorError(f"{target.name} is a module: its ModuleInfo makes its samples; give none")
    if samples is not None:
        for i, (args, kwargs) in enumerate(samples):
            if instance is not None:  # the module's parameters and buffers are inputs, as module_db's
                from ._modules import module_state

                args = [*module_state(instance), *args]
            given = by_dtype.setdefault(_dtype_of((args, kwargs), i), {})
            assert not isinstance(given, Unmade)
            given[i] = Base(target.func, args, kwargs, "auto")
    elif target.opinfo is not None:
        for dtype_name in dtypes:
            dtype = getattr(torch, dtype_name, None)
            if not isinstance(dtype, torch.dtype):
                raise AuthorError(f"unknown dtype {dtype_name!r}")
            supported = bool(target.opinfo.supports_dtype(dtype, device))
            bases = made(target.name, dtype_name, device, supported, functools.partial(_bases, target.opinfo, device, dtype))
            by_dtype[dtype_name] = bases if isinstance(bases, Unmade) else dict(enumerate(bases))
    else:
        raise AuthorError(f"{target.name} has no OpInfo: give its samples (--samples MODULE:FUNC, or samples=...)")
    return plan_keys(target.op, target.variant, device, modes, compilers, by_dtype, chosen, selection)


def _bases(op: Any, device: str, dtype: torch.dtype) -> list[Base]:
    """An OpInfo's samples of ``dtype`` as the plan takes them, each with its redraw."""
    redrawn = _opinfo.redrawn(op, device, dtype)
    return [
        Base(
            sc.func,
            sc.args,
            sc.kwargs,
            sc.check_gradients,
            sc.skip_correctness_check,
            (redrawn[i].args, redrawn[i].kwargs) if i < len(redrawn) else None,
            op,
        )
        for i, sc in enumerate(_opinfo.samples_of(op, device, dtype))
    ]


def run_planned(
    target: Target,
    planned: Sequence[Planned],
    *,
    timeout: float = AUTHOR_DEFAULTS.timeout,
    isolated: bool = True,
    shrink: bool = False,
    reruns: int = AUTHOR_DEFAULTS.reruns,
    shrink_alike: bool = False,
    derived_after_death: bool = AUTHOR_DEFAULTS.derived_after_death,
    dead: DeadBases | None = None,
    judged_by: _registry.Registry | None = None,
    registry_name: str = "none given",
) -> list[SampleCheck]:
    """Run and judge the planned checks, in the pipeline's order (:mod:`optests._pipeline`): a
    broken key, a not-applicable one and one a ``skip`` entry of ``judged_by`` covers are decided
    here, without a check; every other key is checked (:func:`optests._pipeline.run_child`) in
    an isolated child process (``isolated``, POSIX), ``timeout`` seconds at most: a check that
    runs longer is a ``timeout``, one whose process dies a ``crash``, and the next check gets a
    fresh child. The child returns the inputs it checked: nothing here derives or calls the op.
    Each record is judged by ``judged_by`` (none: an empty registry; ``registry_name`` is how
    messages name it). A sample derived from one whose check died so is not run, but ``skipped`` (saying
    why), unless ``derived_after_death``; ``dead`` keeps those deaths across calls (else this
    call's alone). Where a child cannot be forked (CUDA is initialized), the checks run in this
    process. With ``shrink``, a ``resized`` finding is also shrunk to the smallest sizes that fail
    at its stage (:attr:`SampleCheck.shrunk`, for a repro script); its result is the finding as
    found. With ``shrink_alike``, a failure of a sample as made (no transform) is shrunk the same
    way to smaller sizes whose failure has the same cause (:func:`_shrink_alike`). A check whose
    verdict would fail the run is made again up to ``reruns`` times, each in a fresh child
    (:func:`optests._pipeline.judge_again`; here where there is no child), until one's verdict would
    not: then it is ``flaky``; once three samples of one cause reproduced, that cause's other
    samples are not made again (:class:`optests._pipeline.Reruns`). First each backend is preflighted (:func:`optests._backends.preflight`): one that
    cannot run on this machine is an :class:`AuthorError`, not a finding on every sample."""
    from ._backends import BackendUnavailable, preflight

    _check_reruns(reruns)
    registry = judged_by if judged_by is not None else _registry.Registry([], str(torch.__version__))
    checked_again = Reruns(reruns)
    to_run = [p for p in planned if p.base is not None]
    try:
        preflight([p.key.backend for p in to_run], timeout)
    except BackendUnavailable as e:
        raise AuthorError(f"backends: {e}") from None

    def work(position: int) -> Ran:
        """The check of one planned sample, and what the caller needs of it."""
        p = planned[position]
        assert p.base is not None
        if shrink and shrinkable(p.key.transform):
            return run_child(p.key, p.base, inputs=True, shrink=_shrink)
        return run_child(p.key, p.base, inputs=True, shrink=_shrink_alike if shrink_alike and not p.key.transform else None)

    dead = dead if dead is not None else DeadBases("--derived-after-death (derived_after_death=True)")
    runner = _runner.IsolatedRunner(_one_thread(work), fit=_state.fit) if isolated and to_run and _runner.fork_is_safe() else None

    def ran(position: int, fresh: bool = False) -> Ran:
        """The check of a planned sample, in the runner's child (``fresh``: a new one) or here."""
        p = planned[position]
        assert p.base is not None
        start = time.perf_counter()
        answer = _kept(work, position) if runner is None else runner.run(position, timeout, fresh=fresh)
        if isinstance(answer, _runner.Died):
            result = died(p.key, answer, time.perf_counter() - start)
            return Ran(result, f"[{result.stage}] {result.detail}", p.base.check_gradients)
        assert isinstance(answer, Ran)
        return answer

    def again(position: int) -> SampleResult:
        """The record of one more check of a planned sample, in a fresh child."""
        return record(planned[position].key, db, ran(position, fresh=True).result)

    out: list[SampleCheck] = []
    db = target.db
    try:
        for position, p in enumerate(planned):
            settled = settle(p.key, p.reason, registry)  # broken, not applicable, a skip entry
            base = p.base
            inputs: Sample = (list(base.args), dict(base.kwargs)) if base is not None else ([], {})
            gradients = base.check_gradients if base is not None else False
            func = base.func if base is not None else None
            if settled is not None:
                said = "" if settled.verdict.ok else settled.said  # a broken key
                out.append(SampleCheck(p.key, settled.result, inputs, gradients, None, func, db, settled.verdict, said))
                continue
            assert base is not None
            not_run = None if derived_after_death else dead.not_run(p.key)
            if not_run is not None:  # its base sample timed out or crashed
                out.append(SampleCheck(p.key, not_run, inputs, gradients, None, func, db, Verdict.SKIPPED))
                continue
            answer = ran(position)
            dead.note(p.key, answer.result.stage)  # a timeout or a crash
            error = answer.result.error
            if error is not None:  # what crossed from the child as it was checked (a non-leaf a non-leaf)
                error.inputs, error.options = rebuilt(error.inputs), rebuilt(error.options)
            first = record(p.key, db, answer.result)
            judged = checked_again.judge(first, answer.report, registry, registry_name, functools.partial(again, position))
            checked_inputs = rebuilt(answer.inputs) if answer.inputs is not None else inputs
            out.append(
                SampleCheck(
                    p.key, answer.result, checked_inputs, answer.check_gradients, rebuilt(answer.shrunk), answer.func or func, db,
                    judged.verdict, f"{judged.message}\n{judged.how}" if judged.message or judged.how else "",
                    judged.record.reruns,
                )
            )  # fmt: skip
    finally:
        if runner is not None:
            runner.close()
    return out


def _check_reruns(reruns: object) -> None:
    """An :class:`AuthorError` unless ``reruns`` is a whole number from 0 to the most allowed."""
    from ._settings import MAX_RERUNS

    if type(reruns) is not int or not 0 <= reruns <= MAX_RERUNS:
        raise AuthorError(f"reruns={reruns!r}, but expected a whole number from 0 to {MAX_RERUNS}")


def shrinkable(suffix: str) -> bool:
    from ._transforms import shrinkable as of

    return bool(suffix) and of(suffix)


def _shrink(key: SampleKey, base: Base, result: CheckResult) -> tuple[Sample, str] | None:
    """A ``resized`` finding's smallest sizes that fail at the same stage (hypothesis,
    derandomized), as inputs and a description (``sizes 3->2, 4->3``); None if none smaller is
    found. Each candidate is a check of the key, as :func:`optests._pipeline.check` makes it.
    Runs where the check ran (the isolated child)."""
    from ._transforms import shrink_resized

    def fails(d: Derived) -> bool:
        candidate = dataclasses.replace(base, args=list(d.args), kwargs=d.kwargs, redraw=None)
        return check(dataclasses.replace(key, transform=""), candidate).result.stage is result.stage

    smallest = shrink_resized(base.args, base.kwargs, fails, seed=key.sample or 0, max_examples=SHRINK_EXAMPLES)
    if smallest is None:
        return None
    args, kwargs = portable_value((list(smallest.args), dict(smallest.kwargs)))
    return (args, kwargs), smallest.description


def _shrink_alike(key: SampleKey, base: Base, result: CheckResult) -> tuple[Sample, str] | None:
    """A failure of a sample as made, shrunk: the smallest sizes (replaced consistently across the
    inputs, as ``resized`` replaces them) whose failure has the same cause
    (:mod:`optests._causes`), as inputs and a description; None if none with fewer input elements
    is found. Runs where the check ran (the isolated child)."""
    from ._causes import cause
    from ._pipeline import input_elements
    from ._transforms import shrink_resized

    wanted = cause(key, result.outcome, result.stage, result.message)

    def fails(d: Derived) -> bool:
        candidate = dataclasses.replace(base, args=list(d.args), kwargs=d.kwargs, redraw=None)
        got = check(key, candidate).result
        return cause(key, got.outcome, got.stage, got.message) == wanted

    smallest = shrink_resized(base.args, base.kwargs, fails, seed=key.sample or 0, max_examples=SHRINK_EXAMPLES)
    if smallest is None or input_elements((smallest.args, smallest.kwargs)) >= input_elements((base.args, base.kwargs)):
        return None
    args, kwargs = portable_value((list(smallest.args), dict(smallest.kwargs)))
    return (args, kwargs), smallest.description


def check_target(
    target: Target,
    samples: Sequence[Sample] | None,
    *,
    modes: Sequence[str] = AUTHOR_DEFAULTS.modes,
    dtypes: Sequence[str] = AUTHOR_DEFAULTS.dtypes,
    device: str = AUTHOR_DEFAULTS.device,
    transforms: str | Sequence[str] = AUTHOR_DEFAULTS.transforms,
    backends: str | Sequence[str] = AUTHOR_DEFAULTS.backends,
    timeout: float = AUTHOR_DEFAULTS.timeout,
    isolated: bool = True,
    shrink: bool = False,
    select: str = AUTHOR_DEFAULTS.select,
    reruns: int = AUTHOR_DEFAULTS.reruns,
    derived_after_death: bool = AUTHOR_DEFAULTS.derived_after_death,
    judged_by: _registry.Registry | None = None,
    registry_name: str = "none given",
) -> list[SampleCheck]:
    """Check every sample (or those ``select`` picks), and every sample each transform derives,
    in every mode and backend, judged by ``judged_by`` (see :func:`plan` and :func:`run_planned`)."""
    planned = plan(
        target, samples, modes=modes, dtypes=dtypes, device=device, transforms=transforms, backends=backends, select=select
    )
    return run_planned(
        target, planned, timeout=timeout, isolated=isolated, shrink=shrink, reruns=reruns,
        derived_after_death=derived_after_death, judged_by=judged_by, registry_name=registry_name,
    )  # fmt: skip


def repro_name(c: SampleCheck) -> str:
    """The file name (without ``.py``) of a check's repro script: its op, mode, dtype, sample,
    transform and backend, as a file name may hold them."""
    name = "".join(ch if ch.isalnum() else "_" for ch in c.op) + f"-{c.mode}-{c.dtype}-sample{c.sample}"
    name += f"-{c.key.transform}" if c.key.transform else ""
    name += "".join(ch if ch.isalnum() else "_" for ch in f"-{c.key.backend}") if c.key.backend != DEFAULT_BACKEND else ""
    return name


def write_repro(directory: Path, target: Target, c: SampleCheck, imports: Sequence[str] = ()) -> Path:
    """Write the standalone repro script of a finding (:func:`optests._repro.write_standalone`)
    into ``directory``: the check's own options, the sample as it was checked (a ``resized``
    finding's shrunk sizes, where found), the OpInfo's op found by its source unless the check
    compiled another callable. Returns its path; an ``OSError`` where it cannot be written."""
    from . import _repro

    error = c.result.error
    assert error is not None
    inputs = c.shrunk[0] if c.shrunk is not None else c.inputs
    own = c.func is None or c.func is target.func
    override = _opinfo_func_source(target.opinfo) if own and hasattr(target.opinfo, "sample_inputs") else None
    # the check's own options, and the sample as it was: for a randomized finding the script
    # makes the same random data from it
    options = error.options or {
        "dynamic": c.mode.dynamic,
        "disable_functionalization": not c.mode.functionalized,
        "check_gradients": c.check_gradients,
    }
    return _repro.write_standalone(
        directory, repro_name(c), c.func or target.func, inputs, options, summary=f"[{error.stage}] {error.summary}",
        imports=imports, func_expr=override,
    )  # fmt: skip


def _opinfo_func_source(op: Any) -> str:
    """An expression that finds an OpInfo's op in op_db (its ``op`` may be a lambda)."""
    return (
        "next(o for o in __import__('torch.testing._internal.common_methods_invocations', fromlist=['op_db']).op_db "
        f"if (o.name, o.variant_test_name) == ({op.name!r}, {op.variant_test_name!r})).op"
    )


def registry_of(path: str | Path | None) -> tuple[list[_registry.Entry], str]:
    """The entries of the registry at ``path`` (relative to the working directory, as ``optests
    judge`` takes it) and how messages name it; none for no path. A missing file is an
    :class:`AuthorError`."""
    if path is None:
        return [], "none given"
    try:
        return load_registry(path), str(path)
    except RegistryMissing as e:
        raise AuthorError(str(e)) from None


def _one_thread(work: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``work`` with one intra-op thread, as in the sweep's runner child, and the process state it
    started from set back after it (:func:`optests._state.kept`)."""

    def run(task: Any) -> Any:
        one_intra_op_thread()
        with _state.kept():
            return work(task)

    return run


def _kept(work: Callable[[Any], Any], task: Any) -> Any:
    """``work(task)`` in this process, with the process state set back after it."""
    with _state.kept():
        return work(task)


def _is_module(target: Target) -> bool:
    from ._modules import ModuleEntry

    return isinstance(target.opinfo, ModuleEntry)


def _instance_target(module: torch.nn.Module) -> Target:
    """A module instance as a target, named by its class: called as ``module_db`` calls a module
    (:class:`optests._modules.ModuleCall`), its parameters and buffers inputs of each sample."""
    from ._modules import ModuleCall

    return Target(type(module).__name__, ModuleCall(module))


def _module_instance(target: Target) -> torch.nn.Module | None:
    """The module a module instance's target calls (:func:`_instance_target`); None for any other."""
    from ._modules import ModuleCall

    return target.func.module if isinstance(target.func, ModuleCall) and target.opinfo is None else None


def _targets(op: Any) -> list[Target]:
    """What ``op`` names: one op, or a module's ops (one per training mode)."""
    from . import _modules

    if isinstance(op, str):
        targets = resolve([op])
        if len({t.op if _is_module(t) else t.name for t in targets}) > 1:
            raise AuthorError(f"{op!r} matches {len(targets)} ops; name one")
        return targets
    if hasattr(op, "sample_inputs") and hasattr(op, "op"):  # an OpInfo
        return [Target(op.name, op.op, op)]
    if _modules.is_module_info(op):  # a ModuleInfo: its train op, and its eval op where they differ
        located = _modules.locate(op)
        return [Target(e.name, e.op, e) for e in _modules.entries([op], lambda i: located)]
    if isinstance(op, torch.nn.Module):
        return [_instance_target(op)]
    if callable(op):
        from ._repro import func_name

        return [Target(func_name(op), op)]
    raise TypeError(f"op must be an op name, an OpInfo, a ModuleInfo or a callable, got {type(op).__name__}")


def check_op(
    op: Any,
    samples: Iterable[Any] | None = None,
    *,
    modes: Sequence[str] = AUTHOR_DEFAULTS.modes,
    dtypes: Sequence[str] = AUTHOR_DEFAULTS.dtypes,
    device: str = AUTHOR_DEFAULTS.device,
    transforms: str | Sequence[str] = AUTHOR_DEFAULTS.transforms,
    backends: str | Sequence[str] = AUTHOR_DEFAULTS.backends,
    select: str = AUTHOR_DEFAULTS.select,
    reruns: int = AUTHOR_DEFAULTS.reruns,
    derived_after_death: bool = AUTHOR_DEFAULTS.derived_after_death,
    compile_cache: str = AUTHOR_DEFAULTS.compile_cache,
    registry: str | Path | None = AUTHOR_DEFAULTS.registry,
) -> list[SampleCheck]:
    """Check one op over its samples in each mode; one :class:`SampleCheck` per sample and mode.

    ``op`` is an OpInfo name (``"sin"``), a module name of ``module_db`` (``"nn.Linear"``), a
    qualified custom op (``"mylib::myop"``), an OpInfo, a ``ModuleInfo`` (a module and its inputs:
    checked in train mode, and in eval mode where they differ), an ``nn.Module`` instance (called as
    ``module_db``'s modules are, through ``torch.func.functional_call``: its parameters and buffers
    are inputs of each sample, so their gradients and a buffer's in-place update are compared like
    any input's; its training mode is as you left it), or any callable (a
    ``torch.library.custom_op``, an ``OpOverload``, a function).
    ``samples`` (SampleInputs or ``(args, kwargs)`` pairs) is required when the op has no OpInfo
    (and refused for a module).
    ``transforms`` (``"all"``, ``"none"``, or names such as ``["transposed", "duplicated"]``)
    derive more samples from each: other layouts, one tensor passed twice, views of one
    storage, fewer inputs requiring grad, other dtypes, other sizes. A derived sample whose
    eager call fails is ``not_applicable``, never a finding. ``backends`` name the compile steps
    (``aot_eager``, the default; ``aot_eager_decomp_partition``; ``inductor``; ``dynamo:NAME``;
    ``MODULE:ATTRIBUTE``, a ``torch.compile`` backend of yours; or one registered with
    ``optests.register_backend``). ``select`` checks some of the samples (``first:N``,
    ``signature``), which keep their numbers. A check whose verdict would fail is made again up to
    ``reruns`` times, each in a fresh process: if one's verdict would not, the check is ``flaky``
    (its :attr:`SampleCheck.reruns` say what each found), not a failure; 0: never. A sample
    derived from one whose check timed out or crashed is not run (``skipped``, saying why), unless ``derived_after_death``. ``compile_cache``
    is where inductor keeps what it compiles: ``fresh`` (an empty folder for this call, removed
    after it), ``shared`` (torch's) or a folder (:class:`optests._env.CompileCache`).
    ``registry``, the path of an expected-failures registry (as ``optests check --registry``
    takes it): its ``skip`` entries are not run, and each :attr:`SampleCheck.verdict` is its
    judgement (without one, an empty registry's). A dtype the op does not support is a
    ``not_applicable`` check, as in the sweep.
    """
    _check_reruns(reruns)
    cache = _compile_cache(compile_cache)
    targets = _targets(op)
    given = to_samples(samples, f"samples for {targets[0].name}") if samples is not None else None
    entries, name = registry_of(registry)
    judged_by = _registry.Registry(entries, str(torch.__version__))
    with cache:
        return [
            c
            for target in targets
            for c in check_target(
                target,
                given,
                modes=modes,
                dtypes=dtypes,
                device=device,
                transforms=transforms,
                backends=backends,
                select=select,
                reruns=reruns,
                derived_after_death=derived_after_death,
                judged_by=judged_by,
                registry_name=name,
            )
        ]


def _compile_cache(choice: str) -> CompileCache:
    """The compile cache ``choice`` names (``compile_cache=``), not entered yet; an
    :class:`AuthorError` for a choice that is not one, or a folder torch could not use."""
    from ._backends.inductor import CacheDirError, check_compile_cache

    try:
        parsed = parse_compile_cache(choice)
    except ValueError as e:
        raise AuthorError(f"compile_cache: {e}") from None
    try:
        check_compile_cache("compile_cache", parsed)
    except CacheDirError as e:
        raise AuthorError(str(e)) from None
    return CompileCache(parsed)


def op_test(
    op: Any,
    samples: Iterable[Any] | Callable[[], Iterable[Any]] | None = None,
    *,
    modes: Sequence[str] = AUTHOR_DEFAULTS.modes,
    registry: str | Path | None = AUTHOR_DEFAULTS.registry,
    transforms: str | Sequence[str] = AUTHOR_DEFAULTS.transforms,
    backends: str | Sequence[str] = AUTHOR_DEFAULTS.backends,
    reruns: int = AUTHOR_DEFAULTS.reruns,
    derived_after_death: bool = AUTHOR_DEFAULTS.derived_after_death,
    compile_cache: str = AUTHOR_DEFAULTS.compile_cache,
) -> Callable[..., None]:
    """A pytest test function over ``op``'s samples (and the samples ``transforms`` derive, as in
    :func:`check_op`) and modes, one test per pair, judged against an expected-failures registry
    of optests' format. A derived sample that is not a valid call is skipped; so is one derived
    from a sample whose check timed out or crashed earlier in the same process (not run), unless
    ``derived_after_death``. ``compile_cache`` and ``reruns`` as :func:`check_op` takes them
    (``fresh``: an empty folder for each test; a flaky sample's test passes, its record saying
    ``flaky``). In a test module::

        test_myop = optests.op_test(mylib.myop, samples=my_samples, registry="expected_failures.json")
    """
    import pytest

    _check_reruns(reruns)
    given_samples = samples() if callable(samples) else samples
    given = to_samples(given_samples, "samples") if given_samples is not None else None
    targets = _targets(op)
    entries, name = registry_of(registry)
    planned = {
        p.key.id: (target, p)
        for target in targets
        for p in plan(target, given, modes=modes, transforms=transforms, backends=backends)
    }  # checks nothing
    judged_by = _registry.Registry(entries, str(torch.__version__))
    chosen = transforms_of(transforms)
    for e in stale_entries(entries, [p.key for _, p in planned.values()], chosen, str(torch.__version__)):
        warnings.warn(StaleEntryWarning(f"{name}: {stale_line(e)}"), stacklevel=2)
    dead = DeadBases("op_test(..., derived_after_death=True)")  # this process's: its tests run in order
    _compile_cache(compile_cache)  # a bad choice fails the module's import, not each test

    @pytest.mark.parametrize("optests_sample_id", list(planned))
    def test(optests_sample_id: str, record_property: Callable[[str, object], None] = _no_property) -> None:
        # each test checks its own sample, on the process (xdist worker) that runs it
        target, p = planned[optests_sample_id]
        with _compile_cache(compile_cache):
            (checked,) = run_planned(
                target, [p], reruns=reruns, derived_after_death=derived_after_death, dead=dead, judged_by=judged_by,
                registry_name=name,
            )  # fmt: skip
        record_property(RECORD_PROPERTY, json.dumps(checked.record().to_json()))  # as the sweep's tests carry theirs
        verdict = checked.verdict
        entry = judged_by.judge(checked.record())[1]
        if verdict is Verdict.XFAILED:
            pytest.xfail(f"expected ({entry.stage if entry else ''}): {entry.reason if entry else ''}")
        if verdict in (Verdict.NOT_APPLICABLE, Verdict.SKIPPED):
            pytest.skip(checked.result.message)
        if verdict is not None and not verdict.ok:
            raise AssertionError(f"{verdict.value}: {checked.judgement}")

    # pytest passes what the signature names without a default: its record_property fixture too
    # (a direct call, test(sample_id), records nowhere)
    signature = inspect.signature(test)
    test.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[p.replace(default=inspect.Parameter.empty) for p in signature.parameters.values()]
    )
    return test


def _no_property(name: str, value: object) -> None:
    """Where an :func:`op_test` test is called directly: its record goes nowhere."""


#: The user property (``record_property``) under which an :func:`op_test` test carries its record.
RECORD_PROPERTY = "optests"


__all__ = ["AuthorError", "SampleCheck", "StaleEntryWarning", "check_op", "op_test"]
