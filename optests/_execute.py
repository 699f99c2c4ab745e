"""One sweep case through the check, on the side that runs it: the isolated runner's child."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Literal

from ._case import Case
from ._findings import Outcome, Stage, Verdict
from ._key import SampleKey, transform_name
from ._results import SampleResult

if TYPE_CHECKING:
    from ._transforms import Derived


def decoration_skip(case: Case) -> str:
    """Why the OpInfo's own decorations skip this case's test (PyTorch skips it too); "" if not."""
    import torch

    from . import _opinfo

    deco = _opinfo.decorations(_opinfo.opinfo(case.ref), case.key.mode.dynamic, case.key.device, getattr(torch, case.key.dtype))
    return deco.skip_message


def execute(case: Case) -> tuple[SampleResult, str]:
    """Check one case. Returns the record and the full report."""
    import torch

    from . import _opinfo
    from ._check import run_check
    from ._transforms import judged_dtype, not_applicable

    key = case.key
    assert key.sample is not None
    dtype = getattr(torch, key.dtype)
    sample = _opinfo.cached_samples(case.ref, key.device, dtype)[key.sample]
    judged = dtype
    randomized = _randomized_sample(case, dtype)
    args, kwargs, context = sample.args, sample.kwargs, key.context
    check_gradients: bool | Literal["auto"] = sample.check_gradients
    repro: str | None = None
    if not key.transform:
        repro = _opinfo.repro_setup(case.ref, key.device, dtype, key.sample, redraw=randomized is not None)
    else:  # the OpInfo's code makes the sample, not the derived one: a repro writes the derived tensors
        derived = _derived(key, (args, kwargs))
        if derived is None:
            return case.result(Outcome.NOT_APPLICABLE, message=f"{key.transform} derives no such sample [{context}]"), ""
        args, kwargs, context = list(derived.args), derived.kwargs, f"{context}: {derived.description}"
        check_gradients = derived.check_gradients(check_gradients)
        again = _derived(key, randomized) if randomized is not None else None  # the redraw, transformed alike
        randomized = (list(again.args), again.kwargs) if again is not None else None
        judged = judged_dtype(derived, dtype)
    deco = _opinfo.decorations(_opinfo.opinfo(case.ref), key.mode.dynamic, key.device, judged)
    if judged is not dtype and deco.skip:  # the OpInfo's own skip for the dtype a sample was cast to
        return case.result(Outcome.SKIPPED, message=deco.skip_message, verdict=Verdict.SKIPPED), ""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ops warn about deprecated arguments etc.; not findings
        checked = run_check(
            sample.func,
            args,
            kwargs,
            key.mode.dynamic,
            assert_equals_fn=deco.assert_equals(judged),
            check_gradients=check_gradients,
            try_check_data_specialization=True,
            skip_correctness_check=sample.skip_correctness_check,
            disable_functionalization=not key.mode.functionalized,
            randomized_sample=randomized,
            context=context,
            repro=repro,
        )
    if key.transform and checked.stage is Stage.EAGER:  # the derived sample is not a valid call
        message = not_applicable(key.transform, checked.message, context)
        return case.result(Outcome.NOT_APPLICABLE, message=message, duration=checked.duration), ""
    tolerance = "; ".join(t for t in (deco.tolerance, *checked.notes) if t)
    record = case.result(checked.outcome, checked.stage, checked.message, checked.duration, tolerance=tolerance)
    report = str(checked.error) if checked.error is not None else ""
    return record, report


def _derived(key: SampleKey, sample: tuple[Any, Any]) -> Derived | None:
    """The sample ``key``'s transform derives from ``sample`` (None if it derives no such one)."""
    from ._transforms import derive

    assert key.sample is not None
    try:
        found = derive(transform_name(key.transform), sample[0], sample[1], draws=1, seed=key.sample)
    except Exception:
        return None
    return next((d for d in found if d.suffix == key.transform), None)


def _randomized_sample(case: Case, dtype: Any) -> tuple[list[Any], dict[str, Any]] | None:
    """The case's sample drawn again under the randomized rerun's seed (None if it cannot be)."""
    from . import _opinfo

    again = _opinfo.randomized_samples(case.ref, case.key.device, dtype)
    if case.key.sample is None or case.key.sample >= len(again):
        return None
    return again[case.key.sample].args, again[case.key.sample].kwargs


def execute_in_child(case: Case) -> tuple[SampleResult, str]:
    """:func:`execute` with one intra-op thread, as every check runs."""
    from ._check import one_intra_op_thread

    one_intra_op_thread()
    return execute(case)


def prepare_child(dbs: tuple[str, ...]) -> None:
    """What a runner child started as a fresh interpreter (not forked) loads before its first task."""
    from . import _check, _opinfo  # noqa: F401  (torch, and AOTAutograd through the check)

    _opinfo.all_ops(dbs)
