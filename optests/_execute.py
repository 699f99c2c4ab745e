"""One sweep case through the check, on the side that runs it: the isolated runner's child."""

from __future__ import annotations

from typing import Any

from ._case import Case
from ._findings import Outcome, Verdict
from ._results import SampleResult


def execute(case: Case) -> tuple[SampleResult, str]:
    """Check one case (:func:`optests._pipeline.run_child`: derive, the OpInfo's decorations at
    the judged dtype, the check). Returns the record and the full report."""
    import torch

    from . import _opinfo
    from ._pipeline import Base, following, record, run_child

    key = case.key
    assert key.sample is not None
    dtype = getattr(torch, key.dtype)
    cached = _opinfo.cached_samples(case.ref, key.device, dtype)
    sample = cached[key.sample]
    redraw = _randomized_sample(case, dtype)
    setup = None if key.transform else _opinfo.repro_setup(case.ref, key.device, dtype, key.sample, redraw=redraw is not None)
    base = Base(
        sample.func,
        sample.args,
        sample.kwargs,
        sample.check_gradients,
        sample.skip_correctness_check,
        redraw,
        _opinfo.opinfo(case.ref),
        setup,
        following([(s.func, s.args, s.kwargs) for s in cached]) if key.sample == 0 and key.transform else (),
    )
    ran = run_child(key, base)
    verdict = Verdict.SKIPPED if ran.result.outcome is Outcome.SKIPPED else None
    return record(key, case.ref.db, ran.result, verdict), ran.report


def _randomized_sample(case: Case, dtype: Any) -> tuple[list[Any], dict[str, Any]] | None:
    """The case's sample drawn again under the randomized rerun's seed (None if it cannot be)."""
    from . import _opinfo

    again = _opinfo.randomized_samples(case.ref, case.key.device, dtype)
    if case.key.sample is None or case.key.sample >= len(again):
        return None
    return again[case.key.sample].args, again[case.key.sample].kwargs


def execute_in_child(case: Case) -> tuple[SampleResult, str]:
    """:func:`execute` with one intra-op thread, as every check runs, and the process state it
    started from set back after it (:func:`optests._state.kept`)."""
    from ._check import one_intra_op_thread
    from ._runner import serving
    from ._state import kept

    one_intra_op_thread()
    with kept(since_last=serving()):  # a runner's child: the last task set the state back
        return execute(case)


def child_fit() -> bool:
    """Whether the runner's child may check another case: the last left no state behind that
    could not be set back (:func:`optests._state.fit`); if not, the runner replaces the child."""
    from ._state import fit

    return fit()


def prepare_child(dbs: tuple[str, ...]) -> None:
    """What the runner's child needs before its first task: it runs in the sweep's process before
    the first fork, so that every forked child inherits it (a child replaced for its memory too),
    or first thing in a child started as a fresh interpreter."""
    from . import _check, _opinfo  # noqa: F401  (torch, and AOTAutograd through the check: 1.8 s)

    _opinfo.all_ops(dbs)
