"""The entry points: :func:`aot_autograd_check` and its non-raising form :func:`run_check`."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import torch

from .. import _script
from .._findings import CheckResult, Finding, Outcome
from ._intree import assert_raises_regex, mode_name
from ._options import CheckOptions
from ._orchestration import _check_call
from ._trace import _TensorCall

__all__ = ["aot_autograd_check", "run_check"]


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
