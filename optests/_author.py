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
from typing import Any

import torch

from . import _opinfo, _registry, _runner
from ._check import assert_close_equal_nan, one_intra_op_thread, run_check
from ._findings import CheckResult, Outcome
from ._results import SampleResult
from ._settings import DEFAULT_TIMEOUT, MODES

Sample = tuple[list[Any], dict[str, Any]]


class AuthorError(ValueError):
    """Bad input from the author (an unknown op, samples that cannot be made): one line."""


@dataclass(frozen=True)
class Target:
    """What to check: a name for messages, the callable, and where its samples come from."""

    name: str
    func: Callable[..., Any]
    opinfo: Any = None  # an OpInfo; None for a custom op or a callable whose samples are given

    @property
    def variant(self) -> str:
        """The OpInfo's variant (``name`` is ``OP.VARIANT``); empty for anything else."""
        return str(self.opinfo.variant_test_name or "") if self.opinfo is not None else ""


@dataclass(frozen=True)
class SampleCheck:
    """One sample of one op in one mode and dtype, as the author API returns it."""

    op: str
    mode: str
    dtype: str
    device: str
    sample: int
    result: CheckResult
    inputs: Sample
    check_gradients: object = True  # as the check was called: True, False or "auto"
    #: The OpInfo's variant: ``op`` is ``NAME.VARIANT`` then (empty for custom ops and callables).
    variant: str = ""

    @property
    def id(self) -> str:
        return f"{self.mode}-{self.dtype}-{self.device}-{self.op}-sample{self.sample}"

    def record(self) -> SampleResult:
        # never split the name at a dot: nn.functional.dropout is one op with no variant
        name = self.op.removesuffix(f".{self.variant}") if self.variant else self.op
        return SampleResult(
            id=self.id, op=name, variant=self.variant, db="", mode=self.mode, dtype=self.dtype, device=self.device,
            sample=self.sample, outcome=self.result.outcome, stage=self.result.stage, message=self.result.message,
            duration=self.result.duration, tolerance="; ".join(self.result.notes),
        )  # fmt: skip


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
        targets.extend(Target(r.id, _opinfo.opinfo(r).op, _opinfo.opinfo(r)) for r in matched)
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


def _dtype_of(sample: Sample) -> str:
    for leaf in torch.utils._pytree.tree_leaves(sample):
        if isinstance(leaf, torch.Tensor):
            return str(leaf.dtype).removeprefix("torch.")
    return "none"


def check_target(
    target: Target,
    samples: Sequence[Sample] | None,
    *,
    modes: Sequence[str] = ("static", "dynamic"),
    dtypes: Sequence[str] = ("float32",),
    device: str = "cpu",
    timeout: float = DEFAULT_TIMEOUT,  # as the sweep's --optests-timeout
    isolated: bool = True,
) -> list[SampleCheck]:
    """Check every sample in every mode. With ``isolated`` (POSIX), the checks run in a forked
    child, as in the sweep: a sample that kills it is a ``crash`` finding, one that runs past
    ``timeout`` seconds a ``timeout`` finding, and the next sample gets a fresh child. Where a
    child cannot be forked (CUDA is initialized), the checks run in this process."""
    for mode in modes:
        if mode not in MODES:
            raise AuthorError(f"unknown mode {mode!r}; valid: {', '.join(MODES)}")
    plans: list[tuple[str, Sample, dict[str, Any]]] = []
    if samples is not None:
        for s in samples:
            plans.append((_dtype_of(s), s, {"check_gradients": "auto", "try_check_data_specialization": True}))
    elif target.opinfo is not None:
        for dtype_name in dtypes:
            dtype = getattr(torch, dtype_name, None)
            if not isinstance(dtype, torch.dtype):
                raise AuthorError(f"unknown dtype {dtype_name!r}")
            if not target.opinfo.supports_dtype(dtype, device):
                continue
            redrawn = _opinfo.redrawn(target.opinfo, device, dtype)
            for i, sc in enumerate(_opinfo.samples_of(target.opinfo, device, dtype)):
                plans.append(
                    (
                        dtype_name,
                        (sc.args, sc.kwargs),
                        {
                            "check_gradients": sc.check_gradients,
                            "try_check_data_specialization": True,
                            "skip_correctness_check": sc.skip_correctness_check,
                            "randomized_sample": (redrawn[i].args, redrawn[i].kwargs) if i < len(redrawn) else None,
                        },
                    )
                )
    else:
        raise AuthorError(f"{target.name} has no OpInfo: give its samples (--samples MODULE:FUNC, or samples=...)")
    numbered: list[tuple[str, int, Sample, dict[str, Any]]] = []
    counters: dict[str, int] = {}
    for position, (dtype_name, sample, options) in enumerate(plans):
        # given samples are numbered by position; an OpInfo's, within each dtype (as in the sweep)
        index = position if samples is not None else counters.get(dtype_name, 0)
        counters[dtype_name] = index + 1
        numbered.append((dtype_name, index, sample, options))

    def work(task: tuple[int, str]) -> CheckResult:
        dtype_name, index, (args, kwargs), options = numbered[task[0]]
        mode = task[1]
        notes: tuple[str, ...] = ()
        if target.opinfo is not None:  # the OpInfo's own skips and tolerances, as in the sweep
            dtype = getattr(torch, dtype_name)
            deco = _opinfo.decorations(target.opinfo, mode.startswith("dynamic"), device, dtype)
            if deco.skip:
                return CheckResult(Outcome.SKIPPED, message=deco.skip_message)
            if deco.tolerance:
                options = {**options, "assert_equals_fn": deco.assert_equals(dtype)}
                notes = (deco.tolerance,)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = run_check(
                target.func, args, kwargs, mode.startswith("dynamic"), disable_functionalization=mode.endswith("-nofunc"),
                context=f"{target.name} {mode} {dtype_name} {device} sample {index}",
                **{"assert_equals_fn": assert_close_equal_nan, **options},
            )  # fmt: skip
        return _portable(dataclasses.replace(result, notes=notes + result.notes))

    runner = _runner.IsolatedRunner(_one_thread(work)) if isolated and _runner.fork_is_safe() else None
    out: list[SampleCheck] = []
    try:
        for position, (dtype_name, index, (args, kwargs), options) in enumerate(numbered):
            for mode in modes:
                start = time.perf_counter()
                result = work((position, mode)) if runner is None else runner.run((position, mode), timeout)
                if isinstance(result, _runner.Died):
                    first = result.message.splitlines()[0]
                    message = f"{first} [{target.name} {mode} {dtype_name} {device} sample {index}]"
                    result = CheckResult(
                        Outcome.FAILED, result.stage, message, detail=result.message, duration=time.perf_counter() - start
                    )
                out.append(
                    SampleCheck(
                        target.name,
                        mode,
                        dtype_name,
                        device,
                        index,
                        result,
                        (list(args), dict(kwargs)),
                        options["check_gradients"],
                        target.variant,
                    )
                )
    finally:
        if runner is not None:
            runner.close()
    return out


def _one_thread(work: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``work`` with one intra-op thread, as in the sweep's runner child."""

    def run(task: Any) -> Any:
        one_intra_op_thread()
        return work(task)

    return run


def _portable(result: CheckResult) -> CheckResult:
    """``result`` as it can cross from the runner's child: a finding's inputs detached (autograd
    does not cross processes), keeping ``requires_grad``."""
    error = result.error
    if error is not None and error.inputs is not None:

        def detach(x: Any) -> Any:
            if isinstance(x, torch.Tensor):
                return x.detach().requires_grad_(x.requires_grad) if x.requires_grad else x.detach()
            return x

        error.inputs = torch.utils._pytree.tree_map(detach, error.inputs)
        try:
            pickle.dumps(error.inputs)
        except Exception:  # e.g. a closure among the arguments: the repro falls back to the sample's
            error.inputs = None
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
) -> list[SampleCheck]:
    """Check one op over its samples in each mode; one :class:`SampleCheck` per sample and mode.

    ``op`` is an OpInfo name (``"sin"``), a qualified custom op (``"mylib::myop"``), an
    OpInfo, or any callable (a ``torch.library.custom_op``, an ``OpOverload``, a function).
    ``samples`` (SampleInputs or ``(args, kwargs)`` pairs) is required when the op has no OpInfo.
    """
    target = _target(op)
    given = to_samples(samples, f"samples for {target.name}") if samples is not None else None
    return check_target(target, given, modes=modes, dtypes=dtypes, device=device)


def op_test(
    op: Any,
    samples: Iterable[Any] | Callable[[], Iterable[Any]] | None = None,
    *,
    modes: Sequence[str] = ("static", "dynamic"),
    registry: str | Path | None = None,
) -> Callable[..., None]:
    """A pytest test function over ``op``'s samples and modes, one test per pair, judged against
    an expected-failures registry of optests' format. In a test module::

        test_myop = optests.op_test(mylib.myop, samples=my_samples, registry="expected_failures.json")
    """
    import pytest

    made = samples() if callable(samples) else samples
    given = to_samples(made, "samples") if made is not None else None
    checks_by_id: dict[str, SampleCheck] = {}

    def run_all() -> None:
        if not checks_by_id:
            checks_by_id.update((c.id, c) for c in check_op(op, given, modes=modes))

    if given is None:  # an OpInfo: its samples are only known by making them
        run_all()
        ids = list(checks_by_id)
    else:
        name = _target(op).name
        ids = [f"{m}-{_dtype_of(s)}-cpu-{name}-sample{i}" for i, s in enumerate(given) for m in modes]
    entries = _registry.load(Path(registry)) if registry is not None else []

    @pytest.mark.parametrize("optests_sample_id", ids)
    def test(optests_sample_id: str) -> None:
        run_all()
        check = checks_by_id[optests_sample_id]
        verdict, entry = _registry.Registry(entries, str(torch.__version__)).judge(check.record())
        if verdict is _registry.Verdict.XFAILED:
            pytest.xfail(f"expected ({entry.stage if entry else ''}): {entry.reason if entry else ''}")
        if not verdict.ok:
            error = check.result.error
            raise AssertionError(f"{verdict.value}: {error if error is not None else check.result.message or 'passed'}")

    return test


__all__ = ["AuthorError", "SampleCheck", "check_op", "op_test"]
