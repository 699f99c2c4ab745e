"""For operator authors: check one op (an OpInfo or a ``torch.library`` custom op) over its
samples and modes, from Python (:func:`check_op`), from pytest (:func:`op_test`) or from the
command line (``optests check``)."""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import pickle
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from . import _opinfo, _registry, _runner
from ._check import assert_close_equal_nan, one_intra_op_thread, run_check
from ._errors import InputError
from ._findings import CheckResult, Outcome, Stage, Verdict
from ._key import DTYPES, MODES, Mode, SampleKey, op_id
from ._results import SampleResult
from ._settings import DEFAULT_TIMEOUT

if TYPE_CHECKING:
    from ._transforms import Derived

Sample = tuple[list[Any], dict[str, Any]]


class AuthorError(InputError):
    """Bad input from the author (an unknown op, samples that cannot be made): one line."""


@dataclass(frozen=True)
class Target:
    """What to check: the op's name and variant, the callable, and where its samples come from."""

    op: str  # an OpInfo's name, a custom op's qualified name, or a callable's
    func: Callable[..., Any]
    opinfo: Any = None  # an OpInfo; None for a custom op or a callable whose samples are given

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
    def sample(self) -> int:
        assert self.key.sample is not None
        return self.key.sample

    def record(self) -> SampleResult:
        r = self.result
        return SampleResult(self.key, "", r.outcome, r.stage, r.message, r.duration, tolerance="; ".join(r.notes))


# -- resolving ------------------------------------------------------------------------------------


def import_modules(names: Iterable[str]) -> None:
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as e:
            raise AuthorError(f"--import {name}: importing it failed: {type(e).__name__}: {e}") from None


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
    """Targets for OpInfo names or globs (``sin``, ``nn.functional.conv*``) and qualified custom
    ops (``mylib::myop``). An unknown name is an :class:`AuthorError` with close matches."""
    targets: list[Target] = []
    refs = None
    for name in names:
        if "::" in name:
            targets.append(Target(name, _custom_op(name)))
            continue
        refs = refs if refs is not None else _opinfo.all_ops()
        matched = _opinfo.select(refs, [name])
        if not matched:
            close = difflib.get_close_matches(name, sorted({r.id for r in refs}), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise AuthorError(f"unknown op {name!r}: no OpInfo in {', '.join(_opinfo.DATABASES)} matches{hint}")
        targets.extend(Target(r.name, _opinfo.opinfo(r).op, _opinfo.opinfo(r)) for r in matched)
    return targets


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
    except AuthorError:
        raise
    except Exception as e:
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


@dataclass(frozen=True)
class _Planned:
    """One check to make: a sample in one mode, with the check's options for it."""

    key: SampleKey
    sample: Sample
    options: dict[str, Any]
    #: What a transform changed (``args[1] is args[0]``); empty for a sample as it was given.
    derived: str = ""
    #: The sample it was derived from (None for a sample as it was given).
    base: Sample | None = None
    #: The dtype whose OpInfo decorations judge it, where a transform cast it to another.
    judged: torch.dtype | None = None

    @property
    def context(self) -> str:
        return f"{self.key.context}: {self.derived}" if self.derived else self.key.context


#: How many size mappings ``resized`` draws per sample for an author (the sweep draws one).
RESIZED_DRAWS = 3
#: At most this many checks shrink a ``resized`` finding (each compiles: about 0.1 s for a small op).
SHRINK_EXAMPLES = 30


def transforms_of(value: str | Sequence[str]) -> tuple[str, ...]:
    """``"all"``, ``"none"``, a comma-separated string or a sequence of transform names."""
    from ._transforms import parse_transforms

    try:
        return parse_transforms(value if isinstance(value, str) else ",".join(value) or "none")
    except ValueError as e:
        raise AuthorError(f"transforms: {e}") from None


def plan(
    target: Target,
    samples: Sequence[Sample] | None,
    *,
    modes: Sequence[str] = ("static", "dynamic"),
    dtypes: Sequence[str] = ("float32",),
    device: str = "cpu",
    transforms: str | Sequence[str] = "all",
) -> list[_Planned]:
    """The checks :func:`check_target` makes, sample by sample (each followed by the samples
    every transform derives from it) and mode by mode, without making them. Given samples are
    numbered by position; an OpInfo's within each dtype, as in the sweep."""
    from ._transforms import judged_dtype

    for mode in modes:
        if mode not in MODES:
            raise AuthorError(f"unknown mode {mode!r}; valid: {', '.join(MODES)}")
    chosen = transforms_of(transforms)
    found: list[tuple[str, Sample, dict[str, Any]]] = []
    variants: list[tuple[str, Sample, dict[str, Any], str, torch.dtype | None]]
    if samples is not None:
        for i, s in enumerate(samples):
            found.append((_dtype_of(s, i), s, {"check_gradients": "auto", "try_check_data_specialization": True}))
    elif target.opinfo is not None:
        for dtype_name in dtypes:
            dtype = getattr(torch, dtype_name, None)
            if not isinstance(dtype, torch.dtype):
                raise AuthorError(f"unknown dtype {dtype_name!r}")
            if not target.opinfo.supports_dtype(dtype, device):
                continue
            redrawn = _opinfo.redrawn(target.opinfo, device, dtype)
            for i, sc in enumerate(_opinfo.samples_of(target.opinfo, device, dtype)):
                options: dict[str, Any] = {
                    "check_gradients": sc.check_gradients,
                    "try_check_data_specialization": True,
                    "skip_correctness_check": sc.skip_correctness_check,
                    "randomized_sample": (redrawn[i].args, redrawn[i].kwargs) if i < len(redrawn) else None,
                }
                found.append((dtype_name, (sc.args, sc.kwargs), options))
    else:
        raise AuthorError(f"{target.name} has no OpInfo: give its samples (--samples MODULE:FUNC, or samples=...)")
    planned: list[_Planned] = []
    counters: dict[str, int] = {}
    for position, (dtype_name, sample, options) in enumerate(found):
        index = position if samples is not None else counters.get(dtype_name, 0)
        counters[dtype_name] = index + 1
        base_dtype = getattr(torch, dtype_name)
        variants = [("", sample, options, "", None)]
        redraw = options.get("randomized_sample")
        for transform in chosen:
            again = {}  # the OpInfo's redraw, transformed alike, for the randomized rerun
            if redraw is not None:
                again = {d.suffix: (list(d.args), d.kwargs) for d in _derive(transform, redraw, index)}
            for d in _derive(transform, sample, index):
                check_gradients = d.check_gradients(options["check_gradients"])
                judged = judged_dtype(d, base_dtype)
                opts = {**options, "check_gradients": check_gradients}
                if redraw is not None:
                    opts["randomized_sample"] = again.get(d.suffix)
                variants.append(
                    (d.suffix, (list(d.args), d.kwargs), opts, d.description, None if judged is base_dtype else judged)
                )
        for suffix, inputs, opts, description, cast in variants:
            for mode in modes:
                key = SampleKey(target.op, target.variant, Mode(mode), dtype_name, device, index, transform=suffix)
                planned.append(_Planned(key, inputs, opts, description, sample if suffix else None, cast))
    return planned


def _derive(transform: str, sample: Sample, index: int) -> list[Derived]:
    """What ``transform`` derives from ``sample``; nothing from a sample it cannot take apart (an
    argument it cannot copy, say), as in the sweep."""
    from ._transforms import derive

    try:
        return derive(transform, sample[0], sample[1], draws=RESIZED_DRAWS, seed=index)
    except Exception:
        return []


def run_planned(
    target: Target,
    planned: Sequence[_Planned],
    *,
    timeout: float = DEFAULT_TIMEOUT,  # as the sweep's --optests-timeout
    isolated: bool = True,
) -> list[SampleCheck]:
    """Make the planned checks. With ``isolated`` (POSIX), they run in a forked child, as in the
    sweep: a sample that kills it is a ``crash`` finding, one that runs past ``timeout`` seconds a
    ``timeout`` finding, and the next sample gets a fresh child. Where a child cannot be forked
    (CUDA is initialized), the checks run in this process."""

    def work(position: int) -> tuple[CheckResult, Sample | None]:
        """The check of one planned sample, and the inputs it ended on where they are not the
        planned ones (a ``resized`` finding shrunk to its smallest sizes)."""
        p = planned[position]
        key, options = p.key, p.options
        notes: tuple[str, ...] = ()
        if target.opinfo is not None:  # the OpInfo's own skips and tolerances, as in the sweep
            dtype = p.judged or getattr(torch, key.dtype)
            deco = _opinfo.decorations(target.opinfo, key.mode.dynamic, key.device, dtype)
            if deco.skip:
                return CheckResult(Outcome.SKIPPED, message=deco.skip_message), None
            if deco.tolerance:
                options = {**options, "assert_equals_fn": deco.assert_equals(dtype)}
                notes = (deco.tolerance,)

        def check(inputs: Sample, context: str) -> CheckResult:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return run_check(
                    target.func, inputs[0], inputs[1], key.mode.dynamic, disable_functionalization=not key.mode.functionalized,
                    context=context, **{"assert_equals_fn": assert_close_equal_nan, **options},
                )  # fmt: skip

        result, shrunk = check(p.sample, p.context), None
        if key.transform and result.stage is Stage.EAGER:  # the derived sample is not a valid call
            from ._transforms import not_applicable

            message = not_applicable(key.transform, result.message, p.context)
            return CheckResult(Outcome.NOT_APPLICABLE, message=message, duration=result.duration), None
        if key.transform.startswith("resized") and result.outcome is Outcome.FAILED:
            shrunk, result = _shrink(p, result, check)
        return _portable(dataclasses.replace(result, notes=notes + result.notes)), shrunk

    runner = _runner.IsolatedRunner(_one_thread(work)) if isolated and _runner.fork_is_safe() else None
    out: list[SampleCheck] = []
    try:
        for position, p in enumerate(planned):
            start = time.perf_counter()
            answer = work(position) if runner is None else runner.run(position, timeout)
            if isinstance(answer, _runner.Died):
                message = f"{answer.message.splitlines()[0]} [{p.context}]"
                answer = (
                    CheckResult(
                        Outcome.FAILED, answer.stage, message, detail=answer.message, duration=time.perf_counter() - start
                    ),
                    None,
                )
            result, shrunk = answer
            args, kwargs = shrunk if shrunk is not None else p.sample
            out.append(SampleCheck(p.key, result, (list(args), dict(kwargs)), p.options["check_gradients"]))
    finally:
        if runner is not None:
            runner.close()
    return out


def _shrink(p: _Planned, result: CheckResult, check: Callable[[Sample, str], CheckResult]) -> tuple[Sample, CheckResult]:
    """A ``resized`` finding shrunk to the smallest sizes that fail at the same stage (hypothesis,
    derandomized), and the check of those; the finding as it is if none smaller is found."""
    from ._transforms import shrink_resized

    base = p.base if p.base is not None else p.sample  # the given sample, as its author wrote it
    smallest = shrink_resized(
        base[0],
        base[1],
        lambda d: check((list(d.args), d.kwargs), p.context).stage is result.stage,
        seed=p.key.sample or 0,
        max_examples=SHRINK_EXAMPLES,
    )
    if smallest is None or smallest.description == p.derived:
        return p.sample, result
    context = f"{p.key.context}: {smallest.description}, shrunk from {p.derived}"
    again = check((list(smallest.args), smallest.kwargs), context)
    if again.stage is not result.stage:  # not reproducible at those sizes: the finding as it was
        return p.sample, result
    return (list(smallest.args), smallest.kwargs), again


def check_target(
    target: Target,
    samples: Sequence[Sample] | None,
    *,
    modes: Sequence[str] = ("static", "dynamic"),
    dtypes: Sequence[str] = ("float32",),
    device: str = "cpu",
    transforms: str | Sequence[str] = "all",
    timeout: float = DEFAULT_TIMEOUT,
    isolated: bool = True,
) -> list[SampleCheck]:
    """Check every sample, and every sample each transform derives, in every mode (see
    :func:`plan` and :func:`run_planned`)."""
    planned = plan(target, samples, modes=modes, dtypes=dtypes, device=device, transforms=transforms)
    return run_planned(target, planned, timeout=timeout, isolated=isolated)


def _one_thread(work: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``work`` with one intra-op thread, as in the sweep's runner child."""

    def run(task: Any) -> Any:
        one_intra_op_thread()
        return work(task)

    return run


def _portable(result: CheckResult) -> CheckResult:
    """``result`` as it can cross from the runner's child: a finding's inputs and options (its
    ``randomized_sample``) detached (autograd does not cross processes), keeping
    ``requires_grad`` and a tensor passed twice; either is dropped (None) if it does not pickle."""
    error = result.error
    if error is None:
        return result
    detached: dict[int, torch.Tensor] = {}

    def detach(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            if id(x) not in detached:
                detached[id(x)] = x.detach().requires_grad_(x.requires_grad) if x.requires_grad else x.detach()
            return detached[id(x)]
        return x

    for field in ("inputs", "options"):
        value = getattr(error, field)
        if value is not None:
            value = torch.utils._pytree.tree_map(detach, value)
            try:
                pickle.dumps(value)
            except Exception:  # e.g. a closure among the arguments: the repro falls back to the sample's
                value = None
            setattr(error, field, value)
    return result


def _target(op: Any) -> Target:
    if isinstance(op, str):
        (target, *more) = resolve([op])
        if more:
            raise AuthorError(f"{op!r} matches {len(more) + 1} ops; name one")
        return target
    if hasattr(op, "sample_inputs") and hasattr(op, "op"):  # an OpInfo
        return Target(op.name, op.op, op)
    if callable(op):
        from ._repro import func_name

        return Target(func_name(op), op)
    raise TypeError(f"op must be an op name, an OpInfo or a callable, got {type(op).__name__}")


def check_op(
    op: Any,
    samples: Iterable[Any] | None = None,
    *,
    modes: Sequence[str] = ("static", "dynamic"),
    dtypes: Sequence[str] = ("float32",),
    device: str = "cpu",
    transforms: str | Sequence[str] = "all",
) -> list[SampleCheck]:
    """Check one op over its samples in each mode; one :class:`SampleCheck` per sample and mode.

    ``op`` is an OpInfo name (``"sin"``), a qualified custom op (``"mylib::myop"``), an
    OpInfo, or any callable (a ``torch.library.custom_op``, an ``OpOverload``, a function).
    ``samples`` (SampleInputs or ``(args, kwargs)`` pairs) is required when the op has no OpInfo.
    ``transforms`` (``"all"``, ``"none"``, or names such as ``["transposed", "duplicated"]``)
    derive more samples from each: other layouts, one tensor passed twice, views of one
    storage, fewer inputs requiring grad, other dtypes, other sizes. A derived sample whose
    eager call fails is ``not_applicable``, never a finding.
    """
    target = _target(op)
    given = to_samples(samples, f"samples for {target.name}") if samples is not None else None
    return check_target(target, given, modes=modes, dtypes=dtypes, device=device, transforms=transforms)


def op_test(
    op: Any,
    samples: Iterable[Any] | Callable[[], Iterable[Any]] | None = None,
    *,
    modes: Sequence[str] = ("static", "dynamic"),
    registry: str | Path | None = None,
    transforms: str | Sequence[str] = "all",
) -> Callable[..., None]:
    """A pytest test function over ``op``'s samples (and the samples ``transforms`` derive, as in
    :func:`check_op`) and modes, one test per pair, judged against an expected-failures registry
    of optests' format. A derived sample that is not a valid call is skipped. In a test module::

        test_myop = optests.op_test(mylib.myop, samples=my_samples, registry="expected_failures.json")
    """
    import pytest

    made = samples() if callable(samples) else samples
    given = to_samples(made, "samples") if made is not None else None
    target = _target(op)
    planned = {p.key.id: p for p in plan(target, given, modes=modes, transforms=transforms)}  # checks nothing yet
    entries = _registry.load(Path(registry)) if registry is not None else []

    @pytest.mark.parametrize("optests_sample_id", list(planned))
    def test(optests_sample_id: str) -> None:
        # each test checks its own sample, on the process (xdist worker) that runs it
        (check,) = run_planned(target, [planned[optests_sample_id]])
        verdict, entry = _registry.Registry(entries, str(torch.__version__)).judge(check.record())
        if verdict is Verdict.XFAILED:
            pytest.xfail(f"expected ({entry.stage if entry else ''}): {entry.reason if entry else ''}")
        if verdict in (Verdict.NOT_APPLICABLE, Verdict.SKIPPED):
            pytest.skip(check.result.message)
        if not verdict.ok:
            error = check.result.error
            raise AssertionError(f"{verdict.value}: {error if error is not None else check.result.message or 'passed'}")

    return test


__all__ = ["AuthorError", "SampleCheck", "check_op", "op_test"]
