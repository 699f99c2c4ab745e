"""One sweep case through the check, on the side that runs it: the isolated runner's child."""

from __future__ import annotations

import warnings
from typing import Any

from ._case import Case
from ._results import SampleResult


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

    key = case.key
    assert key.sample is not None
    dtype = getattr(torch, key.dtype)
    sample = _opinfo.cached_samples(case.ref, key.device, dtype)[key.sample]
    deco = _opinfo.decorations(_opinfo.opinfo(case.ref), key.mode.dynamic, key.device, dtype)
    randomized = _randomized_sample(case, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ops warn about deprecated arguments etc.; not findings
        checked = run_check(
            sample.func,
            sample.args,
            sample.kwargs,
            key.mode.dynamic,
            assert_equals_fn=deco.assert_equals(dtype),
            check_gradients=sample.check_gradients,
            try_check_data_specialization=True,
            skip_correctness_check=sample.skip_correctness_check,
            disable_functionalization=not key.mode.functionalized,
            randomized_sample=randomized,
            context=key.context,
            repro=_opinfo.repro_setup(case.ref, key.device, dtype, key.sample, redraw=randomized is not None),
        )
    tolerance = "; ".join(t for t in (deco.tolerance, *checked.notes) if t)
    record = case.result(checked.outcome, checked.stage, checked.message, checked.duration, tolerance=tolerance)
    report = str(checked.error) if checked.error is not None else ""
    return record, report


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
