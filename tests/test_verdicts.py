"""Verdicts are a function of the sample alone: the OpInfo's own decorations (tolerances, skips),
randomized data drawn from the op's own generator, and differences within float32 rounding
judged against float64 rather than by whatever the CPU rounded this time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unittest
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.testing._internal.common_device_type import precisionOverride, tol, toleranceOverride
from torch.testing._internal.common_dtype import _dispatch_dtypes
from torch.testing._internal.opinfo.core import DecorateInfo, OpInfo

import optests
from optests import _opinfo

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _opinfo_with(*decorators: Any) -> OpInfo:
    return OpInfo("decorated", op=torch.sin, dtypes=_dispatch_dtypes((torch.float32,)), decorators=decorators)


# -- the OpInfo's own decorations ------------------------------------------------------------------


def test_a_tolerance_override_aimed_at_the_in_tree_test_applies_in_both_modes() -> None:
    op = _opinfo_with(DecorateInfo(toleranceOverride({torch.float32: tol(atol=5e-3, rtol=1e-4)}), "TestEagerFusionOpInfo"))
    for dynamic in (False, True):
        deco = _opinfo.decorations(op, dynamic, "cpu", torch.float32)
        assert (deco.atol, deco.rtol, deco.skip) == (5e-3, 1e-4, "")
    assert _opinfo.decorations(op, False, "cpu", torch.float64).tolerance == ""  # another dtype


def test_decorations_are_matched_by_class_test_device_and_dtype() -> None:
    override = toleranceOverride({torch.float32: tol(atol=1e-3, rtol=1e-3)})
    op = _opinfo_with(
        DecorateInfo(override, "TestCommon"),  # another test class
        DecorateInfo(unittest.skip("dynamic only"), "TestEagerFusionOpInfo", "test_aot_autograd_symbolic_exhaustive"),
        DecorateInfo(unittest.skip("cuda only"), device_type="cuda"),
        DecorateInfo(unittest.skip("float64 only"), dtypes=(torch.float64,)),
        DecorateInfo(unittest.skip("inactive"), active_if=False),
    )
    static = _opinfo.decorations(op, False, "cpu", torch.float32)
    assert (static.skip, static.tolerance) == ("", "")
    assert _opinfo.decorations(op, True, "cpu", torch.float32).skip == "dynamic only"
    assert _opinfo.decorations(op, False, "cuda", torch.float32).skip == "cuda only"
    assert _opinfo.decorations(op, False, "cpu", torch.float64).skip == "float64 only"


def test_plain_decorators_apply_to_every_test_and_tolerance_beats_precision() -> None:
    precision = _opinfo_with(precisionOverride({torch.float32: 1e-3}))
    assert (_opinfo.decorations(precision, False, "cpu", torch.float32).atol, None) == (1e-3, None)
    both = _opinfo_with(toleranceOverride({torch.float32: tol(atol=2e-3, rtol=2e-4)}), precisionOverride({torch.float32: 1e-1}))
    deco = _opinfo.decorations(both, True, "cpu", torch.float32)
    assert (deco.atol, deco.rtol) == (2e-3, 2e-4)
    assert deco.tolerance == "OpInfo tolerance override(atol=0.002, rtol=0.0002)"


def test_the_databases_own_decorations_are_found() -> None:
    """The cause of issue 12's red fresh clone: cholesky_inverse's override (atol 5e-3, rtol 1e-4
    for TestEagerFusionOpInfo on CPU float32) was not applied, and its samples 6-8 differ by a
    relative 1.8e-5 on some CPUs."""
    ref = next(r for r in _opinfo.all_ops(("op_db",)) if r.id == "cholesky_inverse")
    deco = _opinfo.decorations(_opinfo.opinfo(ref), False, "cpu", torch.float32)
    assert (deco.atol, deco.rtol) == (5e-3, 1e-4)
    normal = next(r for r in _opinfo.all_ops(("op_db",)) if r.id == "normal.number_mean")
    assert _opinfo.decorations(_opinfo.opinfo(normal), True, "cpu", torch.float32).skip


def test_tolerant_takes_the_larger_of_override_and_default() -> None:
    from optests._check import tolerant

    x = torch.ones(3)
    tolerant(torch.float32, 5e-3, 1e-4)(x * (1 + 5e-5), x)  # within rtol 1e-4
    with pytest.raises(AssertionError):
        tolerant(torch.float32, 5e-3, 1e-4)(x * (1 + 1e-2), x)
    with pytest.raises(AssertionError):  # an override below the default does not loosen it
        tolerant(torch.float32, 0.0, 0.0)(x * (1 + 1e-4), x)


# -- float32 rounding, judged against float64 -------------------------------------------------------


def _tracing(x: torch.Tensor) -> bool:
    return type(x) is not torch.Tensor


def _cancels_in_eager(x: torch.Tensor) -> torch.Tensor:
    """Eager loses x's low bits to cancellation (float32 cannot hold 1e6 + x exactly); the trace
    computes x exactly. Eager is the inaccurate one: rounding, not a compile bug."""
    return x.clone() if _tracing(x) else (x + 1e6) - 1e6


def _cancels_in_compiled(x: torch.Tensor) -> torch.Tensor:
    """The same difference the other way round: the compiled result is the inaccurate one."""
    return (x + 1e6) - 1e6 if _tracing(x) else x.clone()


def _random_and_shifted(x: torch.Tensor) -> torch.Tensor:
    """Draws random numbers, and is off by 1e-3 under tracing: float64 is no reference here."""
    return x + torch.rand_like(x) + (1e-3 if _tracing(x) else 0.0)


def test_a_difference_within_float32_rounding_is_not_a_finding() -> None:
    x = torch.linspace(0.1, 0.9, 7)
    result = optests.run_check(_cancels_in_eager, [x], {}, False, check_gradients=False)
    assert result.passed, result.message
    assert len(result.notes) == 1 and result.notes[0].startswith("out: rounding: compiled is 0 from the float64")
    # Off, it is the finding assert_close alone makes.
    assert optests.run_check(_cancels_in_eager, [x], {}, False, check_gradients=False, float64_reference=False).stage == "forward"


def test_a_compiled_result_further_from_float64_than_eager_is_a_finding() -> None:
    x = torch.linspace(0.1, 0.9, 7)
    result = optests.run_check(_cancels_in_compiled, [x], {}, False, check_gradients=False)
    assert result.stage == "forward", result


def _cancels_in_eager_and_wrong_elsewhere(x: torch.Tensor) -> torch.Tensor:
    """Element 0 carries a large rounding error in eager; element 1 is plainly wrong compiled.
    Eager's error on one element must not excuse the bug on another."""
    if _tracing(x):
        return torch.stack([x[0].clone(), x[1] * 1.2])
    return torch.stack([(x[0] + 1e6) - 1e6, x[1].clone()])


def test_rounding_on_one_element_does_not_excuse_a_bug_on_another() -> None:
    result = optests.run_check(
        _cancels_in_eager_and_wrong_elsewhere, [torch.tensor([0.3, 0.5])], {}, False, check_gradients=False
    )
    assert result.stage == "forward", result


def _cancels_in_compiled_beside_a_large_value(x: torch.Tensor) -> torch.Tensor:
    """Element 1 (0.3) is computed beside element 0's scale (4000): compiled loses its low bits to
    cancellation, ``(x + 4000) - 4000``, 4.9e-5 off; eager computes it exactly. A float32 sum
    rounds at its terms' scale, so that is rounding, not a compile bug (``stft``'s window gradient
    under random tangents: compiled 2.9e-5 from 357, eager 1e-6)."""
    return torch.stack([x[0].clone(), (x[1] + 4000.0) - 4000.0 if _tracing(x) else x[1].clone()])


def _wrong_beside_a_large_value(x: torch.Tensor) -> torch.Tensor:
    """The same scale, and element 1 plainly wrong compiled (1e-2 off)."""
    return torch.stack([x[0].clone(), x[1] + 1e-2 if _tracing(x) else x[1].clone()])


def test_rounding_is_judged_at_the_scale_of_the_largest_value() -> None:
    x = torch.tensor([4000.0, 0.3])
    result = optests.run_check(_cancels_in_compiled_beside_a_large_value, [x], {}, False, check_gradients=False)
    assert result.passed, result.message
    assert result.notes == (
        "out: rounding: compiled is 4.88e-05 from the float64 result, eager 0 (each element within 3x; "
        "eager's error counted as at least 0.000477, epsilon times the largest magnitude)",
    )
    # Epsilon times 4000 (4.8e-4) is the least eager's error counts as; a bug is more.
    assert optests.run_check(_wrong_beside_a_large_value, [x], {}, False, check_gradients=False).stage == "forward"


def _wrong_beside_an_overflow(x: torch.Tensor) -> torch.Tensor:
    """exp(x[0]) overflows in float32 (inf in eager and compiled alike); element 1 is wrong compiled."""
    return torch.stack([x[0].exp(), x[1] + 1e-2 if _tracing(x) else x[1].clone()])


@pytest.mark.parametrize("large", [100.0, 1000.0], ids=["finite-in-float64", "inf-in-float64"])
def test_an_overflow_beside_a_wrong_value_does_not_set_the_scale(large: float) -> None:
    """The largest magnitude is taken over the elements finite in float64 and in eager: exp(100)
    (2.7e43 in float64) and exp(1000) (inf) would excuse any error."""
    x = torch.tensor([large, 0.3])
    assert optests.run_check(_wrong_beside_an_overflow, [x], {}, False, check_gradients=False).stage == "forward"


def _writes_cancelled_in_eager(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """Writes x into ``out``: eager loses x's low bits to cancellation, the trace writes x exactly
    (``addbmm``'s non-dense ``out=``: both about 1e-6 from float64, otherwise rounded)."""
    out.copy_(x.clone() if _tracing(x) else (x + 1e6) - 1e6)
    return x * 2


def _writes_cancelled_in_compiled(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """The same difference the other way round: the compiled write is the inaccurate one."""
    out.copy_((x + 1e6) - 1e6 if _tracing(x) else x.clone())
    return x * 2


def test_values_written_into_an_input_are_judged_against_float64_as_outputs_are() -> None:
    x = torch.linspace(0.1, 0.9, 7)
    result = optests.run_check(_writes_cancelled_in_eager, [x, torch.zeros(7)], {}, False, check_gradients=False)
    assert result.passed, result.message
    assert result.notes == (
        "args[1] after the call: rounding: compiled is 0 from the float64 result, eager 0.025 (each element within 3x)",
    )
    result = optests.run_check(_writes_cancelled_in_compiled, [x, torch.zeros(7)], {}, False, check_gradients=False)
    assert result.stage == "mutation" and result.message.startswith("args[1] after the call="), result


def _writes_wrong_into_a_strided_out(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """Eager writes wrong values into an ``out`` that is not dense, in any dtype (``narrow_copy``'s
    and ``avg_pool3d``'s bug on the CPU); the trace writes the right ones."""
    out.copy_(x + 1 if not _tracing(x) and not out.is_contiguous() else x)
    return x * 2


def test_the_float64_call_keeps_the_inputs_layout() -> None:
    """A widened copy of a non-dense ``out`` made contiguous would give the right values, and
    eager's bug would pass as its rounding error."""
    x = torch.linspace(0.1, 0.9, 7)
    result = optests.run_check(_writes_wrong_into_a_strided_out, [x, torch.zeros(7, 2)[:, 0]], {}, False, check_gradients=False)
    assert result.stage == "mutation" and result.message.startswith("args[1] after the call="), result


def _float64_reference(func: Any, inputs: list[torch.Tensor], gradients: bool = False) -> Any:
    from optests._check import _Float64Reference, _TensorCall
    from optests._patterns import DEFAULT_PATTERN, get_pattern

    return _Float64Reference(_TensorCall(func, inputs, {}), inputs, gradients, get_pattern(DEFAULT_PATTERN))


def test_inputs_that_share_memory_share_it_in_the_float64_call() -> None:
    """``b`` overlaps ``a``: the float64 call sees ``a.mul_(2)`` through ``b``, as eager does.
    What is left in the overlapping inputs themselves depends on the order of the writes, which
    the float64 kernels need not share: they get no value to be judged by."""
    base = torch.linspace(0.1, 0.9, 8)
    inputs = [base[:6], base[2:], torch.zeros(3)]
    reference = _float64_reference(_writes_both, inputs)
    wide = torch.linspace(0.1, 0.9, 8).double()
    wide[:6].mul_(2)
    assert torch.equal(reference.out(), wide[2:] + 1)
    assert reference.after(0) is None and reference.after(1) is None
    written = reference.after(2)
    assert written is not None and torch.equal(written, torch.full((3,), 2.0, dtype=torch.float64))
    assert torch.equal(base, torch.linspace(0.1, 0.9, 8)) and not inputs[2].any()  # the caller's inputs are left alone


def _writes_both(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    a.mul_(2)
    c.fill_(2.0)
    return b + 1


def test_an_in_place_call_with_an_operand_that_requires_grad_has_a_float64_value() -> None:
    """``x.add_(y)`` with ``y`` requiring grad (the ``inplace`` pattern's first call): the widened
    ``x`` must be no view made under ``no_grad``, which autograd forbids writing in place."""
    inputs = [torch.linspace(0.1, 0.9, 3), torch.linspace(1.0, 2.0, 3, requires_grad=True)]
    reference = _float64_reference(torch.Tensor.add_, inputs, gradients=True)
    assert reference.out() is not None and reference.after(0) is not None


def _one_step_off_compiled(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Under autocast the product is bfloat16 in eager and compiled alike, widened to float32;
    compiled puts element 0 (3.0, which eager's bfloat16 holds exactly) one bfloat16 step higher.
    Whether an element of a bfloat16 result lands on the truth is chance."""
    out = (x @ w).float()
    return out + torch.tensor([2**-6, 0.0, 0.0]) if _tracing(x) else out


def _a_step_off_ones(x: torch.Tensor) -> torch.Tensor:
    """Ones, exact in any precision; compiled puts them one bfloat16 step higher."""
    ones = torch.ones_like(x)
    return ones + 2**-7 if _tracing(x) else ones


def _rounded_only_compiled(x: torch.Tensor) -> torch.Tensor:
    """Eager computes in float32; compiled rounds the result to bfloat16 (pytorch/pytorch#153044)."""
    return (x * 3).to(torch.bfloat16).float() if _tracing(x) else x * 3


def _product_inputs() -> list[torch.Tensor]:
    return [torch.tensor([[1.0, 2.0], [0.1, 0.7], [0.3, 0.9]]), torch.tensor([1.0, 1.0])]


def test_under_autocast_a_result_eager_rounds_in_bfloat16_may_round_otherwise_compiled() -> None:
    result = optests.run_check(_one_step_off_compiled, _product_inputs(), {}, False, check_gradients=False, pattern="autocast")
    assert result.passed, result.message
    assert result.notes == (
        "out: rounding: compiled is 0.0156 from the float64 result, eager 0 (each element within 3x; "
        "eager rounds at bfloat16's precision, 0.0039 relative)",
    )
    # Outside autocast the product is float32: eager is exact on element 0, compiled is not.
    assert optests.run_check(_one_step_off_compiled, _product_inputs(), {}, False, check_gradients=False).stage == "forward"


@pytest.mark.parametrize("func", [_a_step_off_ones, _rounded_only_compiled], ids=["exact-result", "float32-in-eager"])
def test_under_autocast_a_compiled_result_less_precise_than_eager_s_is_a_finding(func: Any) -> None:
    """Eager's result shows no bfloat16 rounding: exact (ones, whose values are bfloat16 ones as
    the truth's are), or computed in float32."""
    result = optests.run_check(func, [torch.linspace(0.1, 0.9, 7)], {}, False, check_gradients=False, pattern="autocast")
    assert result.stage == "forward", result


def test_lower_rounding_is_not_shown_by_one_ill_conditioned_float32_element() -> None:
    from optests._check import _lower_rounding

    exact = torch.linspace(1.01, 1.99, 9, dtype=torch.float64)
    eager = exact.float().double()  # float32's rounding
    assert _lower_rounding(eager, exact, torch.float32, torch.bfloat16) == 0.0
    eager[4] *= 1 + 1e-3  # one element off by 1e-3, as an ill-conditioned float32 one can be
    assert _lower_rounding(eager, exact, torch.float32, torch.bfloat16) == 0.0
    rounded = exact.bfloat16().double()  # every element at bfloat16's rounding
    level = _lower_rounding(rounded, exact, torch.float32, torch.bfloat16)
    assert level == max(float((rounded - exact).abs().max() / exact.abs().max()), 2**-8)  # at least the unit roundoff
    far = exact * torch.tensor([1.03] + [1.0] * 8, dtype=torch.float64)  # one element 3% off
    assert _lower_rounding(rounded, far, torch.float32, torch.bfloat16) == pytest.approx(
        float((rounded - far).abs().max() / far.abs().max())
    )
    assert _lower_rounding(rounded, exact, torch.float32, None) == 0.0  # no lower precision


def test_an_override_for_the_lower_precision_is_for_its_results_only() -> None:
    from optests._check import tolerant

    lowered = tolerant(torch.bfloat16, 0.1, None, leaves_of_dtype=True)
    x = torch.ones(3)
    lowered((x.bfloat16() + 0.05, x + 1e-6), (x.bfloat16(), x))  # bfloat16 within atol 0.1; float32 within its default
    with pytest.raises(AssertionError):
        lowered((x.bfloat16(), x + 0.05), (x.bfloat16(), x))  # float32 beyond its default
    tolerant(torch.bfloat16, 0.1, None)((x.bfloat16(), x + 0.05), (x.bfloat16(), x))  # for every result otherwise


def test_no_float64_reference_for_an_op_that_draws_random_numbers() -> None:
    result = optests.run_check(_random_and_shifted, [torch.zeros(5)], {}, False, check_gradients=False)
    assert result.stage == "forward", result


# -- randomized data from the op's own generator ---------------------------------------------------


def _sqrt_of_abs(x: torch.Tensor) -> torch.Tensor:
    """Wrong under tracing for negative values only, which uniform [0, 1) noise never has."""
    return x.sqrt() if _tracing(x) else x.abs().sqrt()


def test_the_randomized_rerun_takes_the_values_of_the_sample_drawn_again() -> None:
    x = torch.tensor([0.25, 4.0, 9.0])
    assert optests.run_check(_sqrt_of_abs, [x], {}, False, check_gradients=False, try_check_data_specialization=True).passed
    other: tuple[list[Any], dict[str, Any]] = ([torch.tensor([-1.0, 4.0, 9.0])], {})
    result = optests.run_check(
        _sqrt_of_abs, [x], {}, False, check_gradients=False, try_check_data_specialization=True, randomized_sample=other
    )
    assert result.stage == "randomized", result
    assert "on randomized inputs: the sample drawn again under another seed" in result.detail


@pytest.mark.parametrize(
    "other",
    [
        ([torch.zeros(4), 1], {}),
        ([torch.zeros(3, dtype=torch.float64), 1], {}),
        ([torch.zeros(3), 1], {"alpha": 1}),
        ([torch.zeros(3), 2], {}),  # another scalar: the floats were drawn to fit it
        ([], {}),
    ],
    ids=["other-shape", "other-dtype", "other-structure", "other-scalar", "no-tensor"],
)
def test_a_sample_drawn_again_that_does_not_match_falls_back_to_noise(other: tuple[list[Any], dict[str, Any]]) -> None:
    from optests._check import _donor_values, _TensorCall

    call = _TensorCall(torch.mul, [torch.ones(3), 1], {})
    assert _donor_values(call, other) is None
    assert _donor_values(call, ([torch.ones(3), 1], {})) is None  # the same values: nothing new to try
    assert _donor_values(call, ([torch.full((3,), 2.0), 1], {})) is not None


def test_no_donor_for_an_input_whose_elements_share_memory() -> None:
    from optests._check import _donor_values, _TensorCall

    expanded = torch.rand(3, 1).expand(3, 4)
    call = _TensorCall(torch.sin, [expanded], {})
    assert _donor_values(call, ([torch.rand(3, 4)], {})) is None
    assert optests.run_check(
        torch.sin,
        [expanded],
        {},
        False,
        check_gradients=False,
        try_check_data_specialization=True,
        randomized_sample=([torch.rand(3, 4)], {}),
    ).passed


def test_the_sweep_draws_the_sample_again_under_the_randomized_seed() -> None:
    ref = next(r for r in _opinfo.all_ops(("op_db",)) if r.id == "cholesky_inverse")
    first = _opinfo.cached_samples(ref, "cpu", torch.float32)
    again = _opinfo.randomized_samples(ref, "cpu", torch.float32)
    assert len(first) == len(again)
    assert all(a.args[0].shape == b.args[0].shape for a, b in zip(first, again))
    assert not torch.equal(first[6].args[0], again[6].args[0])


# -- the same verdict whatever the machine, the selection or the threads ---------------------------

_VERDICTS = """
import json, sys, torch
from optests import _opinfo
from optests._case import Case
from optests._execute import execute
torch.set_num_threads(int(sys.argv[1]))
refs = {r.id: r for r in _opinfo.all_ops(("op_db",))}
out = {}
for op, mode, index in [("cholesky_inverse", "static", 6), ("cholesky_inverse", "static", 8), ("ormqr", "dynamic", 3)]:
    record, _ = execute(Case.of(refs[op], mode, "float32", "cpu", index))
    out[record.id] = [record.outcome.value, record.stage and record.stage.value]
print(json.dumps(out, sort_keys=True))
"""


def test_issue_12_samples_give_one_verdict_across_cpu_code_paths_and_threads() -> None:
    """The samples that turned a fresh clone red: the same outcome with MKL sent down another
    code path (as on another CPU) and with 1 or 2 intra-op threads."""
    verdicts = set()
    for threads, cbwr in (("1", None), ("2", "COMPATIBLE")):
        env = {k: v for k, v in os.environ.items() if k != "MKL_CBWR"}
        if cbwr:
            env["MKL_CBWR"] = cbwr
        done = subprocess.run([sys.executable, "-c", _VERDICTS, threads], env=env, capture_output=True, text=True, check=True)
        verdicts.add(done.stdout.strip().splitlines()[-1])
    assert len(verdicts) == 1, verdicts
    assert set(map(tuple, json.loads(verdicts.pop()).values())) == {("passed", None)}


def test_results_record_the_tolerance_that_judged_a_sample(tmp_path: Path) -> None:
    from optests._case import Case
    from optests._execute import execute

    ref = next(r for r in _opinfo.all_ops(("op_db",)) if r.id == "cholesky_inverse")
    record, _ = execute(Case.of(ref, "static", "float32", "cpu", 0))
    assert record.tolerance == "OpInfo tolerance override(atol=0.005, rtol=0.0001)"


# -- gradients of the tangents a call pattern draws --------------------------------------------------


#: Each real tangent :class:`_Echo`'s backward is given, as it is given.
_SEEN: list[torch.Tensor] = []


class _Echo(torch.autograd.Function):
    """The identity, whose backward keeps each real tangent it is given (:data:`_SEEN`)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        if type(grad) is torch.Tensor:
            _SEEN.append(grad)
        return grad.clone()


def _never_equal(actual: Any, expected: Any) -> None:
    raise AssertionError("never equal: the float64 reference is made")


@pytest.mark.parametrize("index", [0, 1, 2], ids=["values", "layout", "expanded"])
def test_the_float64_backward_takes_eager_s_tangents_widened_in_their_layouts(index: int) -> None:
    """The ``tangents`` pattern's float64 call is the truth for gradients of eager's tangents:
    those very values (float32 draws, cast), not draws made again in float64, in their layout."""
    _SEEN.clear()
    x = torch.linspace(-1.0, 1.0, 12).reshape(3, 4).requires_grad_()
    optests.run_check(_Echo.apply, [x], {}, False, pattern=f"tangents-{index}", assert_equals_fn=_never_equal)
    eager, wide = _SEEN[0], [g for g in _SEEN if g.dtype == torch.float64]
    assert eager.dtype == torch.float32 and len(wide) == 2  # the float64 call is made twice (two seeds)
    for g in wide:
        assert torch.equal(g, eager.double()), (g - eager.double()).abs().max()
        assert g.stride() == eager.stride(), (g.stride(), eager.stride())


def _shifted_layer_norm_sample() -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(4, 256, generator=generator) + 1000
    weight, bias = torch.randn(256, generator=generator), torch.randn(256, generator=generator)
    return [t.requires_grad_() for t in (x, weight, bias)]


def _layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x, (256,), weight, bias)


class _WrongWhenTraced(torch.autograd.Function):
    """The identity, whose traced backward scales its gradient by 1.001: a compile bug of 1e-3."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad * 1.001 if _tracing(grad) else grad.clone()


def _layer_norm_wrong_weight_gradient(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x, (256,), _WrongWhenTraced.apply(weight), bias)  # type: ignore[no-untyped-call]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit's, as the decompositions load
@pytest.mark.parametrize("pattern", ["tangents-0", "tangents-1"])
def test_a_layer_norm_of_shifted_data_under_random_tangents_is_rounding_and_a_planted_bug_is_not(pattern: str) -> None:
    """Layer norm of data near 1000 under the decompositions: each row's mean rounds at 1000's
    scale, and random tangents weigh each row's rounding in the weight's gradient, where eager
    lands near the float64 truth on some elements by chance (issue 48, item 20). The same
    gradient off by 1e-3 compiled stays a finding."""
    result = optests.run_check(
        _layer_norm, _shifted_layer_norm_sample(), {}, False, backend="aot_eager_decomp_partition", pattern=pattern
    )
    assert result.passed, result.message
    assert any(n.startswith("grad: rounding: ") and "its median, the tangents weighing each term" in n for n in result.notes), (
        result.notes
    )
    planted = optests.run_check(
        _layer_norm_wrong_weight_gradient,
        _shifted_layer_norm_sample(),
        {},
        False,
        backend="aot_eager_decomp_partition",
        pattern=pattern,
    )
    # (the message names the first leaf that differs, x's gradient, as for any finding of gradients)
    assert planted.stage == "backward" and not planted.notes, planted.message
