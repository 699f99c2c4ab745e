"""What users wrap around the compiled call (issue 51, item 2): each planted bug of
``wrap_corpus.py`` flagged by its pattern, at its stage, in static and dynamic mode, and the
correct case of the same shape left clean; the seams the patterns use (a body compiled in place
of the call, what a pattern observes beside the outputs)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch
import wrap_corpus as corpus

import optests
from optests._key import CALL_PATTERNS, transform_name
from optests._patterns import get_pattern
from optests._patterns.base import BODY
from optests._transforms import derive

NEW = ("func", "checkpoint", "hooks", "inplace-between", "rng")


def _failed(checks: list[optests.SampleCheck]) -> dict[str, tuple[str, str]]:
    return {
        c.key.transform: (str(c.result.stage), c.result.message) for c in checks if c.result.outcome is optests.Outcome.FAILED
    }


@pytest.mark.parametrize("mode", ["static", "dynamic"])
@pytest.mark.parametrize("name", sorted(corpus.BUGS))
def test_each_pattern_flags_its_planted_bug_and_leaves_the_correct_case_clean(name: str, mode: str) -> None:
    bug, good = corpus.BUGS[name], corpus.CORRECT[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flagged = _failed(optests.check_op(bug.func, [bug.make()], modes=[mode], transforms=bug.pattern, backends=[bug.backend]))
        clean = _failed(
            optests.check_op(good.func, [good.make()], modes=[mode], transforms=good.pattern, backends=[good.backend])
        )
    assert "" not in flagged, flagged[""]  # the plain check passes: only the pattern shows the bug
    assert any(transform_name(t) == bug.pattern and stage == bug.stage for t, (stage, _) in flagged.items()), flagged
    assert not clean, clean


def test_messages_name_the_pattern_and_what_differs() -> None:
    bug = corpus.BUGS["rng_seed_draw"]
    (check,) = [c for c in optests.check_op(bug.func, [bug.make()], modes=["static"], transforms="rng") if c.key.transform]
    first = check.result.message.splitlines()[0]
    assert first == (
        "torch.get_rng_state() after the call=another state, but expected eager's (the same seed before each call) "
        "[seeded_double static float32 cpu sample 0 rng: the global RNG state after the call compared (under inductor, fallback_random=True)]"
    ), first
    bug = corpus.BUGS["inplace_unversioned"]
    checks = optests.check_op(bug.func, [bug.make()], modes=["static"], transforms="inplace-between", backends=[bug.backend])
    (check,) = [c for c in checks if c.key.transform]
    first = check.result.message.splitlines()[0]
    assert first.startswith(
        "compiled backward=no error, and gradients other than those of the values before the change, "
        "but expected raised RuntimeError: one of the variables needed"
    ), first
    assert "inplace-between @wrap_corpus:unversioned_saves: args[0], args[1] changed in place (add_(1))" in first, first


@pytest.mark.slow
def test_the_author_default_runs_every_new_pattern_and_flags_the_planted_op() -> None:
    """``check_op`` with its defaults (transforms "all") over the two AOTAutograd backends: the
    RNG draw is flagged under both (eager's call draws nothing: the state is compared whatever
    the backend), and by vmap too (a random op under ``randomness="error"`` where eager has
    none), the correct random op under neither."""
    bug, good = corpus.BUGS["rng_seed_draw"], corpus.CORRECT["rng_seed_draw"]
    backends = ["aot_eager", "aot_eager_decomp_partition"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        checks = optests.check_op(bug.func, [bug.make()], backends=backends)
        clean = _failed(optests.check_op(good.func, [good.make()], modes=["static"], backends=backends, transforms=NEW))
    assert {transform_name(c.key.transform) for c in checks} >= set(NEW)
    failed = [c for c in checks if c.result.outcome is optests.Outcome.FAILED]
    assert {(c.key.transform, c.key.backend, c.key.mode.value) for c in failed if c.key.transform == "rng"} == {
        ("rng", b, m) for b in backends for m in ("static", "dynamic")
    }, [c.result.message for c in failed]
    assert {c.key.transform for c in failed} <= {"rng", "func-1", "func-3"}, [c.result.message for c in failed]
    assert not clean, clean


@pytest.mark.slow
def test_inductor_compares_random_values_under_fallback_random_and_flags_the_rng_draw() -> None:
    bug, good = corpus.BUGS["rng_seed_draw"], corpus.CORRECT["rng_seed_draw"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flagged = _failed(optests.check_op(bug.func, [bug.make()], modes=["static"], transforms="rng", backends=["inductor"]))
        clean = _failed(optests.check_op(good.func, [good.make()], modes=["static"], transforms="rng", backends=["inductor"]))
    assert flagged.get("rng", ("", ""))[0] == "forward", flagged
    assert not clean, clean


def test_the_patterns_are_declared_and_each_suffix_names_its_pattern() -> None:
    assert set(NEW) <= set(CALL_PATTERNS)
    x = torch.randn(3, 4, requires_grad=True)
    suffixes = {name: [d.suffix for d in derive(name, [x], {})] for name in NEW}
    assert suffixes == {
        "func": ["func-0", "func-1", "func-2", "func-3"],
        "checkpoint": ["checkpoint-0", "checkpoint-1"],
        "hooks": ["hooks-0", "hooks-1"],
        "inplace-between": ["inplace-between"],
        "rng": ["rng"],
    }
    # the patterns that change what is compiled say so; those around the call do not
    bodies = {s for ss in suffixes.values() for s in ss if hasattr(get_pattern(s), BODY)}
    assert bodies == {"func-2", "func-3", "checkpoint-1"}
    # without autograd, only rng applies
    y = torch.randn(3, 4)
    assert [d.suffix for name in NEW for d in derive(name, [y], {})] == ["rng"]
    (vmapped,) = [d for d in derive("func", [x], {}) if d.suffix == "func-1"]
    assert vmapped.args[0].shape == (2, 3, 4) and torch.equal(vmapped.args[0][1], x.detach() * 0.5)


def test_an_empty_input_that_requires_grad_derives_no_inplace_between() -> None:
    """No value of an empty tensor changes in place: a compiled backward that does not refuse
    (torch 2.13's, for ``square`` of a [1, 0, 3] input) uses no stale value."""
    empty, full = torch.randn(1, 0, 3, requires_grad=True), torch.randn(3, requires_grad=True)
    assert derive("inplace-between", [empty], {}) == []
    assert derive("inplace-between", [empty, full], {}) == []
    assert [d.suffix for d in derive("inplace-between", [full], {})] == ["inplace-between"]
    checks = optests.check_op(torch.square, [([empty], {})], modes=["static"], transforms="inplace-between")
    assert [c.key.transform for c in checks] == [""]


def test_a_compiled_backward_that_kept_the_old_values_where_eager_refuses_is_not_a_finding() -> None:
    """``torch.dist``: eager saves its inputs and refuses a backward after they changed in place;
    the compiled function saves the difference instead and gives the gradient of the values before
    the change: what it needs, none of the new values."""
    a, b = torch.randn(3, 4, requires_grad=True), torch.randn(3, 4, requires_grad=True)
    checks = optests.check_op(torch.dist, [([a * 1, b * 1], {})], modes=["static"], transforms="inplace-between")
    outcomes = {c.key.transform: c.result.outcome for c in checks}
    assert outcomes == {"": optests.Outcome.PASSED, "inplace-between": optests.Outcome.NOT_APPLICABLE}, [
        c.result.message for c in checks
    ]


def _scaled_rms_norm(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.rms_norm(x * 1.5, (4,), eps=1e-3)


def test_a_compiled_backward_stricter_than_eager_after_an_inplace_change_is_not_applicable() -> None:
    """Eager saves ``x * 1.5`` and accepts ``x`` changed in place after the forward; the compiled
    graph saves ``x`` itself and its version check refuses. That is loud,
    and no stale value is used: not applicable, saying why, not a finding against a correct op."""
    x = torch.randn(3, 4, requires_grad=True)
    checks = optests.check_op(_scaled_rms_norm, [([x], {})], modes=["static"], transforms="inplace-between", reruns=0)
    by = {c.key.transform: c.result for c in checks}
    assert by[""].outcome is optests.Outcome.PASSED, by[""].message
    assert by["inplace-between"].outcome is optests.Outcome.NOT_APPLICABLE, by["inplace-between"].message
    assert "(the compiled graph saved the input itself), but expected no error" in by["inplace-between"].message


def _seeded_dropout(x: torch.Tensor) -> torch.Tensor:
    """What OpInfo's ``wrapper_set_seed`` does around a random op: seed (42, as optests seeds each
    call, so the values agree), and restore the state after."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(42)
        return torch.nn.functional.dropout(x, 0.5)


def test_eager_restoring_the_generator_in_python_is_not_compared_with_what_a_trace_leaves() -> None:
    """AOTAutograd runs the seeding and restoring Python once, at trace time, so the compiled call
    leaves the generator drawn from: no finding, and a note says why the state was not compared."""
    x = torch.randn(4, 4, requires_grad=True)
    (check,) = [
        c for c in optests.check_op(_seeded_dropout, [([x], {})], modes=["static"], transforms="rng", reruns=0) if c.key.transform
    ]
    assert check.result.outcome is optests.Outcome.PASSED, check.result.message
    assert any("restores the generator after it" in n for n in check.result.notes), check.result.notes


def test_a_refusal_eager_makes_without_the_change_too_must_be_made_compiled() -> None:
    """``linalg.eig``'s backward refuses a loss of the eigenvectors' phase with or without the
    change between the forward and the backward; the traced backward does not carry that check:
    a finding, not an internal error of the comparison with eager's gradients of the unchanged
    values."""
    a = torch.randn(3, 3, generator=torch.Generator().manual_seed(0), requires_grad=True)
    checks = optests.check_op("linalg.eig", [([a], {})], modes=["static"], transforms="inplace-between", reruns=0)
    (derived,) = [c.result for c in checks if c.key.transform == "inplace-between"]
    assert (derived.outcome, derived.stage) == (optests.Outcome.FAILED, optests.Stage.BACKWARD), derived.message
    assert derived.message.startswith("compiled backward=no error, but expected raised RuntimeError: linalg_eig_backward"), (
        derived.message
    )


def test_gradients_of_random_values_a_backend_draws_otherwise_are_not_compared_after_an_inplace_change() -> None:
    """``rrelu`` in training mode draws its slopes; ``aot_eager_decomp_partition`` draws them
    otherwise than eager, so its gradients differ from eager's of the unchanged values whatever
    it saved: not a finding (under ``aot_eager``, which draws as eager, they are compared)."""
    x = torch.randn(4, 5, generator=torch.Generator().manual_seed(0), requires_grad=True)
    for backend in ("aot_eager_decomp_partition", "aot_eager"):
        checks = optests.check_op(
            "nn.functional.rrelu",
            [([x * 1], {"training": True})],
            modes=["static"],
            transforms="inplace-between",
            backends=[backend],
            reruns=0,
        )
        outcomes = {c.key.transform: c.result.outcome for c in checks}
        assert outcomes == {"": optests.Outcome.PASSED, "inplace-between": optests.Outcome.NOT_APPLICABLE}, (backend, outcomes)


def _running_mean_update(x: torch.Tensor, running: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        running.mul_(0.5).add_(x.mean(0), alpha=0.5)
    return x.sin()


def test_a_call_that_changes_an_input_in_place_is_not_checkpointed() -> None:
    """Eager's checkpoint recomputes the call in the backward and updates ``running`` twice; a
    compiled body's recomputation updates it once. A checkpointed function must have no side
    effects, so neither is checked: not applicable, naming what the call changed."""
    x, running = torch.randn(3, 4, requires_grad=True), torch.zeros(4)
    checks = optests.check_op(_running_mean_update, [([x, running], {})], modes=["static"], transforms="checkpoint", reruns=0)
    by = {c.key.transform: c.result for c in checks}
    assert by[""].outcome is optests.Outcome.PASSED, by[""].message
    for name in ("checkpoint-0", "checkpoint-1"):
        assert by[name].outcome is optests.Outcome.NOT_APPLICABLE, by[name].message
        assert "eager call=changed args[1] in place, but expected no side effects" in by[name].message, by[name].message


def _where(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    return torch.where(t > 0, x, -x)


def test_a_hook_autograd_calls_with_none_is_recorded_and_the_difference_named() -> None:
    """``t`` gets no gradient: eager never calls its hook, the compiled backward calls it with None
    (``findings/aot_hook_called_with_none_grad.py``). The recording hook takes None as it comes,
    so the finding says what differs, not that a hook of optests raised."""
    x, t = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    checks = optests.check_op(_where, [([x, t], {})], modes=["static"], transforms="hooks", reruns=0)
    failed = {c.key.transform: c for c in checks if c.result.outcome is optests.Outcome.FAILED}
    assert set(failed) == {"hooks-0", "hooks-1"}, [c.result.message for c in checks]
    for c in failed.values():
        assert c.result.stage is optests.Stage.BACKWARD and c.result.message.startswith("observed=["), c.result.message
        assert "gradient the hook on input 1 saw (call 0)" in c.result.message.split(", but expected")[0]
        assert c.record().cause == "aot_hook_called_with_none_grad"


@pytest.mark.parametrize("op", [torch.sin, torch.fft.irfft])
def test_a_transform_around_compiled_code_pytorch_refuses_for_every_function_is_not_applicable(op: Any) -> None:
    """``aot_function`` under a functorch transform: its fake tensors meet the transform's
    wrappers whatever the op; what it raises depends on the op's first kernel (``irfft`` asks the
    wrapper for its storage)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        checks = optests.check_op(op, [([torch.randn(3, requires_grad=True)], {})], modes=["static"], transforms="func")
    outcomes = {c.key.transform: c.result.outcome for c in checks}
    assert outcomes == {
        "": optests.Outcome.PASSED,
        "func-0": optests.Outcome.NOT_APPLICABLE,
        "func-1": optests.Outcome.NOT_APPLICABLE,
        "func-2": optests.Outcome.PASSED,
        "func-3": optests.Outcome.PASSED,
    }, {c.key.transform: c.result.message for c in checks}


def test_the_gradient_an_output_hook_sees_does_not_hang_on_the_sign_of_the_outputs_sum() -> None:
    """An output that sums to 0: ``sum().abs()``'s gradient there is 0, or +-1 where rounding
    leaves a tiny sum, so eager's and a compiled call's hooks would see different gradients of
    correct outputs. The hooks pattern's loss is linear: each output's gradient is ones."""
    for index in (0, 1):
        x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)  # the sum of x and -x is 0 exactly
        pattern = get_pattern(f"hooks-{index}")
        called = pattern.call(lambda inputs: torch.cat([inputs[0], -inputs[0]]), [x])
        pattern.gradients(called, [x])
        seen = {o.what: o.value for o in called.observed}
        torch.testing.assert_close(seen["gradient the hook on output 0 saw (call 0)"], torch.ones(8))
        torch.testing.assert_close(seen["output 0.grad (retain_grad)"], torch.full((8,), 2.0 if index else 1.0))


def test_softmax_backward_data_under_hooks_is_clean_with_the_decompositions() -> None:
    """Its output sums to 0 by construction; the decomposition rounds that sum to a tiny negative
    number where eager's kernel gives 0 (the aot_eager_decomp_partition sweep's two failures). That
    rests on float32 rounding order (x86's, at every vector width): elsewhere this may pass without
    the fix; the test above is the deterministic guard."""
    grad = torch.tensor([3.611605167388916, -8.067646980285645, -0.5734938383102417, 3.1285104751586914, -3.033684730529785])
    grad.requires_grad_()
    out = torch.tensor(
        [0.0007545645930804312, 0.6207531094551086, 0.048132359981536865, 0.32908082008361816, 0.0012791199842467904]
    )
    checks = optests.check_op(
        torch.ops.aten._softmax_backward_data,
        [([grad, out, 0, torch.float32], {})],
        modes=["static"],
        transforms="hooks",
        backends=["aot_eager_decomp_partition"],
        reruns=0,
    )
    assert [c.result.outcome for c in checks] == [optests.Outcome.PASSED] * 3, [c.result.message for c in checks]


def test_a_kernel_torch_func_refuses_in_eager_makes_a_compiled_body_not_applicable() -> None:
    """``tensor_split`` with tensor indices under ``torch.func.grad``: eager's kernel asks the
    wrapper for a data pointer and raises; a compiled body (dynamic shapes) goes through. Eager's
    refusal is ``torch.func``'s limit, not a precondition the compiled call must keep."""
    checks = optests.check_op("tensor_split", modes=["dynamic"], transforms="func", select="first:1", reruns=0)
    by = {c.key.transform: c.result for c in checks}
    assert by["func-2"].outcome is optests.Outcome.NOT_APPLICABLE, by["func-2"].message
    said = "func-2 does not apply: eager fails on the derived sample (eager call=raised RuntimeError: Cannot access data pointer"
    assert by["func-2"].message.startswith(said), by["func-2"].message
