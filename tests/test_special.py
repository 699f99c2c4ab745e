"""Special values (the ``special`` transform), a sample's own ``out`` tensors (``out``), and a
tangent with its last two dims transposed (``tangents-3``): each planted bug of
``special_corpus.py`` flagged on the samples that show it, in static and dynamic mode; each correct
op of the same shape left clean (issue 51, items 3 and 4)."""

from __future__ import annotations

import math
import warnings
from typing import Any

import pytest
import special_corpus as corpus
import torch

import optests
from optests._check import assert_close_equal_nan
from optests._key import parse_transforms
from optests._pipeline import Base
from optests._settings import AUTHOR_DEFAULTS
from optests._transforms import Derived, derive, suffixes

MODES = pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])


def _derived(case: corpus.Case, suffix: str) -> Derived:
    args, kwargs = case.make()
    found = {d.suffix: d for d in derive(case.transform, args, kwargs, origin=Base(case.func, args, kwargs, True))}
    return found[suffix]


def _check(case: corpus.Case, suffix: str, dynamic: bool, **options: Any) -> optests.CheckResult:
    """The check of one derived sample, as the pipeline makes it (its pattern, its gradients)."""
    d = _derived(case, suffix)
    gradients = d.check_gradients(True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # as the pipeline does: inductor's imports warn
        return optests.run_check(
            d.func or case.func, d.args, d.kwargs, dynamic, check_gradients=gradients, pattern=d.pattern, **options
        )


# -- what special derives ---------------------------------------------------------------------------


def test_special_derives_each_kind_into_every_other_element_of_each_input() -> None:
    torch.manual_seed(0)
    x, y = torch.randn(3, 4, requires_grad=True), torch.randn(3, 4)
    index, mask = torch.tensor([0, 2, 1]), torch.tensor([True, False])
    found = {d.suffix: d for d in derive("special", [x, y, index], {"mask": mask})}
    assert list(found) == [f"special-{i}" for i in range(9)]
    assert all(d.pattern == d.suffix and d.check_gradients(True) is False for d in found.values())
    nan = found["special-0"]
    a, b = nan.args[0].detach().reshape(-1), nan.args[1].reshape(-1)
    assert a[0::2].isnan().all() and not a[1::2].isnan().any() and torch.equal(a[1::2], x.detach().reshape(-1)[1::2])
    assert b[1::2].isnan().all() and not b[0::2].isnan().any()  # where one operand is special, the other is not
    assert nan.args[0].requires_grad and nan.args[0].is_leaf and nan.args[0] is not x
    assert torch.equal(nan.args[2], index) and torch.equal(nan.kwargs["mask"], mask)  # integers and bools kept
    assert nan.description == "NaN in every other element of args[0], args[1]"
    zeros = found["special-2"].args[0].detach().reshape(-1)[0::2]
    assert (zeros == 0).all() and zeros.signbit().tolist() == [True, False] * 3
    tiny = torch.finfo(torch.float32).tiny
    subnormal = found["special-3"].args[0].detach().reshape(-1)[0::2]
    assert ((subnormal.abs() < tiny) & (subnormal != 0)).all()
    edges = found["special-4"].args[0].detach().reshape(-1)
    integer = edges.round()
    assert edges[0] == torch.nextafter(integer[0], torch.tensor(-math.inf)) and edges[1] == torch.nextafter(
        integer[1], torch.tensor(math.inf)
    )
    assert edges[4] == integer[4] != 0 and (edges[2] - integer[2]).abs() == 0.5
    extremes = found["special-5"]
    assert extremes.args[0].detach().reshape(-1)[0] == torch.finfo(torch.float32).max
    assert extremes.args[2].tolist() == [torch.iinfo(torch.int64).max, 2, torch.iinfo(torch.int64).min]
    assert [found[f"special-{i}"].args[2].tolist() for i in (6, 7, 8)] == [[0, 2, 4], [0, 2, -1], [0, 2, -5]]
    assert found["special-6"].description == "4 (an index out of range) as the last element of args[2]"


def test_special_derives_by_the_dtypes_a_sample_has() -> None:
    ints = derive("special", [torch.arange(6).view(2, 3)], {})
    assert [d.suffix for d in ints] == ["special-5", "special-6", "special-7", "special-8"]
    assert ints[0].args[0].tolist() == [[2**63 - 1, 1, -(2**63)], [3, 2**63 - 1, 5]], ints[0].args[0].tolist()
    assert derive("special", [torch.randn(3, dtype=torch.complex64), torch.tensor([True])], {}) == []
    assert derive("special", [torch.randn(3).expand(2, 3)], {}) == []  # one element in several places
    assert [d.args[0].tolist() for d in derive("special", [torch.tensor([1, 0], dtype=torch.uint8)], {})] == [
        [255, 0],
        [1, 2],  # uint8 holds no negative index: special-7 and -8 derive nothing
    ]
    half = derive("special", [torch.ones(4, dtype=torch.bfloat16)], {})[3].args[0]
    assert half[0] == torch.finfo(torch.bfloat16).tiny * torch.finfo(torch.bfloat16).eps  # bfloat16's own subnormal


def test_special_values_are_judged_by_nan_and_the_sign_of_zeros_even_with_a_plain_assert_close() -> None:
    """``run_check``'s default comparison (``assert_close``, NaN unequal) takes NaN as equal to
    NaN on these samples; the sign of a zero is compared, which ``assert_close`` ignores."""
    for name in ("clamp_unit_ok", "magnitude_ok"):
        for suffix in ("special-0", "special-2"):
            result = _check(corpus.CORRECT[name], suffix, False)
            assert result.outcome is optests.Outcome.PASSED, (name, suffix, result.message)
    result = _check(corpus.BUGS["magnitude"], "special-2", False, assert_equals_fn=assert_close_equal_nan)
    assert result.message.splitlines()[0] == "out at [0, 0]=-0.0, but expected 0.0 (as eager) [magnitude static]"


# -- each bug flagged, each correct op clean, in static and dynamic mode --------------------------------


@MODES
@pytest.mark.parametrize("name", sorted(corpus.BUGS))
def test_each_planted_bug_is_flagged_on_the_samples_that_show_it(name: str, dynamic: bool) -> None:
    bug = corpus.BUGS[name]
    for suffix, stage in bug.flagged.items():
        result = _check(bug, suffix, dynamic)
        assert result.outcome is optests.Outcome.FAILED and result.stage is optests.Stage(stage), (suffix, result.message)


@MODES
@pytest.mark.parametrize("name", sorted(corpus.CORRECT))
def test_each_correct_op_passes_the_samples_that_show_its_bug(name: str, dynamic: bool) -> None:
    op = corpus.CORRECT[name]
    twin = corpus.BUGS.get(name.removesuffix("_ok"))
    args, kwargs = op.make()
    wanted = (
        list(twin.flagged) if twin is not None else suffixes(op.transform, args, kwargs, origin=Base(op.func, args, kwargs, True))
    )
    assert wanted
    for suffix in wanted:
        result = _check(op, suffix, dynamic)
        assert result.outcome is optests.Outcome.PASSED or result.stage is optests.Stage.EAGER, (suffix, result.message)


def test_a_compiled_call_that_returns_where_eager_raises_is_a_forward_finding() -> None:
    result = _check(corpus.BUGS["take_rows"], "special-7", False)
    first = result.message.splitlines()[0]
    assert (
        first
        == "compiled call=no error, but expected raised IndexError: index out of range in self (as eager) [take_rows static]"
    )


# -- out: the sample's own out tensors, a custom op's mutable out ----------------------------------------


def test_out_replaces_a_custom_op_s_mutable_out_argument_where_the_sample_passes_it() -> None:
    args, kwargs = corpus._positional_out()
    found = derive("out", args, kwargs, origin=Base(corpus.halve_into, args, kwargs, "auto"))
    assert [d.suffix for d in found] == ["out-0", "out-1", "out-2", "out-3"]
    assert [tuple(d.args[1].shape) for d in found] == [(3, 4), (0,), (3, 4), (3, 4)] and not found[2].args[1].is_contiguous()
    assert found[3].args[1] is found[3].args[0] and all(d.kwargs == {} for d in found)


def test_out_replaces_a_sample_s_own_out_keyword_a_tensor_or_a_tuple() -> None:
    def pair(x: torch.Tensor, *, out: tuple[torch.Tensor, torch.Tensor]) -> None:  # returns nothing
        out[0].copy_(x)
        out[1].copy_(-x)

    x = torch.randn(3, 4)
    kwargs = {"out": (torch.empty(3, 4), torch.empty(3, 4))}
    found = derive("out", [x], kwargs, origin=Base(pair, [x], kwargs, "auto"))
    assert [d.suffix for d in found] == ["out-0", "out-1", "out-2"]  # two outs overlap no single input
    assert all(isinstance(d.kwargs["out"], tuple) and len(d.kwargs["out"]) == 2 for d in found)
    assert found[1].kwargs["out"][0].shape == (0,)
    args, kwargs = corpus._out_sample()
    (own,) = [
        d for d in derive("out", args, kwargs, origin=Base(corpus.double_into, args, kwargs, "auto")) if d.suffix == "out-3"
    ]
    assert own.kwargs["out"] is own.args[0]


# -- tangents-3: named where an input has 3 or more dims, derived where an output has --------------------


def test_tangents_3_is_named_for_inputs_and_derived_for_outputs_of_three_dims() -> None:
    flat, deep = torch.randn(3, 4, requires_grad=True), torch.randn(2, 3, 4, requires_grad=True)
    assert suffixes("tangents", [flat], {}) == ["tangents-0", "tangents-1", "tangents-2"]
    assert suffixes("tangents", [deep], {})[-1] == "tangents-3"
    (made,) = [d for d in derive("tangents", [deep], {}, origin=Base(torch.sin, [deep], {}, True)) if d.suffix == "tangents-3"]
    assert torch.equal(made.args[0], deep)
    assert "tangents-3" not in [d.suffix for d in derive("tangents", [deep], {}, origin=Base(torch.sum, [deep], {}, True))]
    from optests._patterns.tangents import _tangent

    t = _tangent(torch.empty(2, 3, 4, 5), 0, 3)
    assert t.shape == (2, 3, 4, 5) and t.stride() == (60, 20, 1, 4)  # the last two dims swapped in memory


# -- check_op with every backend, its other arguments at their defaults ----------------------------------


def test_check_op_flags_a_special_value_bug_under_every_backend() -> None:
    """``check_op``'s default transforms are ``all``, special among them (here only it); the bug's
    fallback runs under Dynamo too. Inductor (slow to compile here) checks the one sample."""
    assert "special" in parse_transforms(AUTHOR_DEFAULTS.transforms)
    bug = corpus.BUGS["magnitude"]
    backends = ["aot_eager", "aot_eager_decomp_partition"]
    checks = optests.check_op(bug.func, [bug.make()], modes=["static"], transforms=["special"], backends=backends)
    failed = {(c.key.backend, c.key.transform, str(c.result.stage)) for c in checks if c.result.outcome is optests.Outcome.FAILED}
    assert failed == {(b, "special-2", "forward") for b in backends}, failed
    inductor = _check(bug, "special-2", False, backend="inductor")
    assert inductor.stage is optests.Stage.FORWARD, inductor.message
    assert _check(corpus.CORRECT["magnitude_ok"], "special-2", False, backend="inductor").outcome is optests.Outcome.PASSED
