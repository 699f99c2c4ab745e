"""Input transforms: what they derive (properties), where they do not apply, and that each
planted bug of ``transform_corpus`` hides on its plain sample and shows on its transform's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.utils._pytree as pytree
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from transform_corpus import BUGS, CORRECT, Bug, Correct

import optests
from optests._check import _copies
from optests._key import INPUT_TRANSFORMS
from optests._transforms import MAX_PAIRS, MAX_SIZE, TRANSFORMS, Derived, derive, parse_transforms, shrink_resized

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

LAYOUT = ("noncontiguous", "transposed", "duplicated", "aliased")

# derive("resized") runs a hypothesis search of its own inside these tests
PROPERTY = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.nested_given])


def _tensors(args: Any, kwargs: Any) -> list[torch.Tensor]:
    return [leaf for leaf in pytree.tree_leaves((args, kwargs)) if isinstance(leaf, torch.Tensor)]


def _leaves(d: Derived) -> list[Any]:
    return pytree.tree_leaves((d.args, d.kwargs))


# -- samples for the properties -----------------------------------------------------------------

DTYPES = [torch.float32, torch.float64, torch.int64, torch.bool]


@st.composite
def samples(draw: st.DrawFn) -> tuple[list[Any], dict[str, Any]]:
    """1-3 tensors (0-4 dims, sizes 0-4, some shapes shared, some requiring grad), maybe one of
    them passed twice, with a float and a list among the arguments."""
    shapes = st.lists(st.integers(0, 4), max_size=4).map(tuple)
    pool = draw(st.lists(shapes, min_size=1, max_size=2))
    seed = draw(st.integers(0, 2**16))
    gen = torch.Generator().manual_seed(seed)
    tensors = []
    for _ in range(draw(st.integers(1, 3))):
        shape, dtype = draw(st.sampled_from(pool)), draw(st.sampled_from(DTYPES))
        if dtype.is_floating_point:
            t = torch.randn(shape, generator=gen, dtype=dtype).requires_grad_(draw(st.booleans()))
        else:
            t = torch.randint(0, 5, shape, generator=gen).to(dtype)
        if t.dim() >= 2 and draw(st.booleans()):
            # a transposed input to begin with (same shape, strides of its last two dims swapped)
            t = t.detach().transpose(-1, -2).contiguous().transpose(-1, -2).requires_grad_(t.requires_grad)
        tensors.append(t)
    if draw(st.booleans()):
        tensors.append(tensors[0])
    return [tensors[0], 0.5, tensors[1:]], {"scale": 2}


def _dense(t: torch.Tensor) -> bool:
    """Non-overlapping and dense: ``empty_like`` keeps exactly the strides of such tensors."""
    return torch.empty_like(t).stride() == t.stride()


def _one_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _same_layout_claims(transform: str, d: Derived) -> None:
    tensors = _tensors(d.args, d.kwargs)
    if transform == "noncontiguous":
        assert all(not t.is_contiguous() for t in tensors if t.numel() >= 2)
    if transform == "transposed":
        assert all(_dense(t) for t in tensors if t.numel())
        assert any(not t.is_contiguous() for t in tensors)


@PROPERTY
@given(samples())
# aliased's overlapping slice of a longer input: the slice holds that input's rows from 1 on
@example(([torch.tensor([1.5410]), 0.5, [torch.tensor([-0.2934, -2.1788])]], {"scale": 2}))
def test_layout_transforms_keep_values_and_requires_grad(sample: tuple[list[Any], dict[str, Any]]) -> None:
    args, kwargs = sample
    before = pytree.tree_leaves((args, kwargs))
    for transform in LAYOUT:
        for d in derive(transform, args, kwargs):
            after = _leaves(d)
            assert len(after) == len(before)
            for i, (old, new) in enumerate(zip(before, after)):
                if not isinstance(old, torch.Tensor):
                    assert new is old
                    continue
                assert new.is_leaf and new.shape == old.shape and new.dtype == old.dtype
                if old.numel():
                    assert new.untyped_storage().data_ptr() != old.untyped_storage().data_ptr()
                if torch.equal(new, old.detach()):
                    assert new.requires_grad == old.requires_grad or transform == "duplicated"
                    continue
                # duplicated, and aliased's second sample: one input's values for both; aliased's
                # overlapping slice: another input's rows from 1 on (``o[1 : 1 + len(new)]``)
                assert transform in ("duplicated", "aliased"), (d.suffix, i)
                assert any(
                    isinstance(o, torch.Tensor)
                    and _one_memory(new, n)
                    and (torch.equal(new, o.detach()) or (new.dim() >= 1 and torch.equal(new, o.detach()[1 : 1 + len(new)])))
                    for o, n in zip(before, after)
                )
            # a tensor passed twice stays one tensor passed twice
            for i, j in [(a, b) for a in range(len(before)) for b in range(a)]:
                if before[i] is before[j]:
                    assert after[i] is after[j]
            _same_layout_claims(transform, d)


@PROPERTY
@given(samples(), st.integers(0, 3))
def test_resized_keeps_equal_sizes_equal_and_small_sizes(sample: tuple[list[Any], dict[str, Any]], seed: int) -> None:
    args, kwargs = sample
    old = _tensors(args, kwargs)
    for d in derive("resized", args, kwargs, draws=3, seed=seed):
        new = _tensors(d.args, d.kwargs)
        assert [t.dim() for t in new] == [t.dim() for t in old]
        mapping: dict[int, int] = {}
        for o, n in zip(old, new):
            assert n.dtype == o.dtype and n.requires_grad == o.requires_grad and n.is_leaf
            for a, b in zip(o.shape, n.shape):
                if a < 2:
                    assert b == a
                else:
                    assert 2 <= b <= MAX_SIZE
                    assert mapping.setdefault(a, b) == b, f"size {a} became both {mapping[a]} and {b}"
        assert d.description == "sizes " + ", ".join(f"{a}->{b}" for a, b in sorted(mapping.items()))
        assert any(a != b for a, b in mapping.items())


@PROPERTY
@given(samples(), st.sampled_from(TRANSFORMS))
def test_derivation_is_deterministic(sample: tuple[list[Any], dict[str, Any]], transform: str) -> None:
    args, kwargs = sample
    first, again = derive(transform, args, kwargs, draws=2), derive(transform, args, kwargs, draws=2)
    assert [(d.suffix, d.description) for d in first] == [(d.suffix, d.description) for d in again]
    for a, b in zip(first, again):
        for x, y in zip(_leaves(a), _leaves(b)):
            if isinstance(x, torch.Tensor):
                assert _identical(x, y) and x.stride() == y.stride() and x.requires_grad == y.requires_grad
            else:
                assert x == y or (x != x and y != y)  # NaN, as `special` writes it, is not equal to itself


def _identical(x: torch.Tensor, y: torch.Tensor) -> bool:
    """The same dtype, shape and values, bit for bit as far as it shows: NaN where NaN is, the
    sign of every zero."""
    if x.dtype != y.dtype or x.shape != y.shape:
        return False
    if x.is_complex():
        return _identical(torch.view_as_real(x), torch.view_as_real(y))
    if not x.is_floating_point():
        return torch.equal(x, y)
    nan = x.isnan()
    return (
        torch.equal(nan, y.isnan())
        and torch.equal(x.masked_fill(nan, 0), y.masked_fill(nan, 0))
        and torch.equal(x.signbit(), y.signbit())
    )


def test_fewer_draws_are_a_prefix_of_more() -> None:
    x = torch.randn(3, 4, 5)
    many = [d.description for d in derive("resized", [x], {}, draws=6)]
    assert [d.description for d in derive("resized", [x], {}, draws=2)] == many[:2]
    assert len(set(many)) == 6


# -- what each transform derives ------------------------------------------------------------------


def _x(*shape: int, grad: bool = False, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.ones(shape, dtype=dtype).requires_grad_(grad)


@pytest.mark.parametrize(
    ("transform", "args"),
    [
        ("noncontiguous", []),
        ("noncontiguous", [_x(), _x(1, 1), 3]),
        ("transposed", [_x(4), _x()]),
        ("transposed", [_x(3, 1), _x(1, 4, 1)]),
        ("duplicated", [_x(3, 4), _x(4, 3)]),
        ("duplicated", [_x(3, 4), _x(3, 4, dtype=torch.float64)]),
        ("duplicated", [_x(0, 4), _x(0, 4)]),
        ("aliased", [_x(3, 4), _x(3)]),
        ("grad-subset", [_x(3, 4), _x(3, 4)]),
        ("dtypes", [torch.arange(4), torch.ones(2, dtype=torch.bool)]),
        ("dtypes", [_x(3, dtype=torch.complex64)]),
        ("resized", [_x(), _x(1, 1, 0)]),
        ("resized", [2.0, "x"]),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_not_applicable_derives_nothing(transform: str, args: list[Any]) -> None:
    assert derive(transform, args, {}) == []


def test_a_tensor_passed_twice_is_not_a_pair() -> None:
    x = _x(3, 4)
    assert derive("duplicated", [x, x], {}) == []
    assert derive("aliased", [x, x], {}) == []
    base = _x(2, 3, 4)
    assert derive("aliased", [base[0], base[1]], {}) == []  # already one storage


def test_views_of_one_base_stay_views_of_one_base() -> None:
    base = torch.randn(2, 3, 4)
    for d in derive("grad-subset", [_x(3, 4, grad=True), base[0], base[1]], {}):
        _, a, b = d.args
        assert a._base is not None and a._base is b._base and a._base is not base
        assert torch.equal(a, base[0]) and torch.equal(b, base[1]) and b.storage_offset() == 12


def test_what_each_transform_derives() -> None:
    a, b, c = _x(3, 4, grad=True), _x(3, 4, grad=True), _x(2, 3, 4, 5)
    found = {
        t: [(d.suffix, d.description) for d in derive(t, [a, b], {"c": c})]
        for t in INPUT_TRANSFORMS
        if t not in ("resized", "special")  # special: tests/test_special.py
    }
    assert found == {
        "noncontiguous": [("noncontiguous", "every tensor input non-dense (strides doubled, storage offset 1)")],
        "transposed": [
            ("transposed-0", "args[0], args[1], kwargs['c'] with the last two dims swapped in memory"),
            ("transposed-1", "kwargs['c'] as channels_last"),
        ],
        "duplicated": [("duplicated-0", "args[1] is args[0]")],
        "aliased": [
            ("aliased-0", "args[0] and args[1] as the two halves of one storage"),
        ],
        "grad-subset": [
            ("grad-subset-0", "no input requires grad"),
            ("grad-subset-1", "only args[0] requires grad"),
            ("grad-subset-2", "only args[1] requires grad"),
        ],
        "dtypes": [
            ("dtypes-0", "floating inputs as float64"),
            ("dtypes-1", "floating inputs as float16"),
            ("dtypes-2", "floating inputs as bfloat16"),
        ],
    }
    (d,) = derive("grad-subset", [a, _x(3)], {})  # one input requires grad: only the inference sample
    assert d.suffix == "grad-subset-0" and not d.requires_grad and d.check_gradients(True) is False
    assert derive("grad-subset", [a, b], {})[1].check_gradients("auto") == "auto"
    # a suffix names the same sample whatever else is derived: float16 is dtypes-1 for a float64 sample too
    assert [(d.suffix, d.description) for d in derive("dtypes", [_x(2, dtype=torch.float64)], {})] == [
        ("dtypes-1", "floating inputs as float16"),
        ("dtypes-2", "floating inputs as bfloat16"),
    ]
    (d,) = derive("transposed", [_x(2, 3, 4, 1)], {})  # the swap is contiguous already: channels_last only
    assert d.suffix == "transposed-1"
    many = [_x(2, 2) for _ in range(5)]
    assert len(derive("duplicated", many, {})) == MAX_PAIRS
    (d,) = derive("transposed", many, {})
    assert d.description == "args[0], args[1], args[2] and 2 more with the last two dims swapped in memory"


def test_transposed_layouts() -> None:
    x, y = _x(2, 3, 4, 5), _x(4, 5)
    swapped, channels_last = derive("transposed", [x, y], {})
    assert [t.stride() for t in swapped.args] == [(60, 20, 1, 4), (1, 4)]
    assert channels_last.args[0].is_contiguous(memory_format=torch.channels_last)
    assert channels_last.args[1].is_contiguous()


def test_aliased_inputs_share_one_storage() -> None:
    (halves,) = derive("aliased", [torch.randn(3, 4), torch.randn(3, 4)], {})
    a, b = halves.args
    assert a is not b and _one_memory(a, b)
    assert (a.storage_offset(), b.storage_offset()) == (0, 12)


def test_the_checks_copies_keep_inputs_that_share_a_storage_sharing() -> None:
    """So that ``aliased`` means in the check what it means in the sample: the copies are views
    of one base (AOTAutograd treats views of one base as such; tensors that merely share a
    storage it refuses to compile where one of them is mutated and gradients are taken)."""
    (halves,) = derive("aliased", [torch.randn(3, 4, requires_grad=True), torch.randn(3, 4)], {})
    for randomize in (False, True):
        a, b = _copies(list(halves.args), randomize=randomize)
        assert a._base is not None and a._base is b._base
        assert a.untyped_storage().data_ptr() != halves.args[0].untyped_storage().data_ptr()
        assert (a.storage_offset(), b.storage_offset()) == (0, 12)
        assert (a.requires_grad, b.requires_grad, a.is_leaf, b.is_leaf) == (True, False, True, True)
        assert torch.equal(a, halves.args[0]) != randomize and torch.equal(b, halves.args[1]) != randomize
    base = torch.randn(3, 4)
    a, b = _copies([base[0], base[0]])  # two views of the same memory
    assert a is not b and a._base is b._base and torch.equal(a, b)
    separate = _copies([torch.randn(3), torch.randn(3)])
    assert separate[0]._base is None and separate[0].untyped_storage().data_ptr() != separate[1].untyped_storage().data_ptr()


def test_resized_values_stay_in_range() -> None:
    positive, index = torch.rand(3, 4) + 1, torch.tensor([0, 2, 1, 2])
    for d in derive("resized", [positive, index], {}, draws=4):
        new_positive, new_index = d.args
        assert new_positive.min() >= 1 and new_index.min() >= 0 and new_index.max() <= 2


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("none", ()),
        ("all", TRANSFORMS),
        (" dtypes, transposed ,dtypes", ("transposed", "dtypes")),
        ("grad-subset", ("grad-subset",)),
    ],
)
def test_parse_transforms(value: str, expected: tuple[str, ...]) -> None:
    assert parse_transforms(value) == expected


@pytest.mark.parametrize("value", ["", "transposd", "all,transposed", "transposed,"])
def test_parse_transforms_names_the_valid_ones(value: str) -> None:
    with pytest.raises(
        ValueError, match=r"^unknown transform .*; expected none, all, or a comma-separated list of: noncontiguous, "
    ):
        parse_transforms(value)


def test_derive_refuses_unknown_transforms() -> None:
    with pytest.raises(ValueError, match="unknown transform 'sideways'"):
        derive("sideways", [], {})


# -- the corpus: each bug hides on its plain sample and shows on its transform's ------------------

MODES = pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])


def _check(case: Bug | Correct, d: Derived | None, dynamic: bool) -> optests.CheckResult:
    options = dict(case.check)
    if d is None:
        args, kwargs = case.make()
        return optests.run_check(case.func, args, kwargs, dynamic, try_check_data_specialization=True, **options)
    options["check_gradients"] = d.check_gradients(options.get("check_gradients", True))
    if d.pattern:  # ``special``'s samples are judged by its pattern (NaN equal to NaN, signed zeros)
        options["pattern"] = d.pattern
    return optests.run_check(case.func, d.args, d.kwargs, dynamic, try_check_data_specialization=True, **options)


def _derived(case: Bug | Correct, transform: str) -> list[Derived]:
    args, kwargs = case.make()
    return derive(transform, args, kwargs, draws=8 if transform == "resized" else 1)


@MODES
@pytest.mark.parametrize("name", sorted(BUGS))
def test_planted_bug_passes_on_its_plain_sample(name: str, dynamic: bool) -> None:
    result = _check(BUGS[name], None, dynamic)
    assert result.outcome is optests.Outcome.PASSED, result.message


@MODES
@pytest.mark.parametrize("name", sorted(BUGS))
def test_planted_bug_is_flagged_on_its_transforms_samples(name: str, dynamic: bool) -> None:
    bug = BUGS[name]
    results = {d.suffix: _check(bug, d, dynamic) for d in _derived(bug, bug.transform)}
    stages = {suffix: r.stage.value if r.stage else "passed" for suffix, r in results.items()}
    assert bug.stage in stages.values(), stages
    assert set(stages.values()) <= {bug.stage, "passed"}, stages


#: Correct ops that a transform's samples flag all the same, by mode (none today): the check's
#: own false positives, or torch's failures, each with why.
KNOWN: dict[tuple[str, str, bool], str] = {}


@pytest.mark.parametrize(
    ("name", "transform", "dynamic"),
    [
        pytest.param(
            name,
            t,
            dynamic,
            id=f"{name}-{t}-{'dynamic' if dynamic else 'static'}",
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN[name, t, dynamic])] if (name, t, dynamic) in KNOWN else [],
        )
        for name in sorted(CORRECT)
        for t in INPUT_TRANSFORMS
        for dynamic in (False, True)
    ],
)
def test_correct_op_passes_every_transforms_samples(name: str, transform: str, dynamic: bool) -> None:
    op = CORRECT[name]
    for d in _derived(op, transform):
        result = _check(op, d, dynamic)
        assert result.outcome is optests.Outcome.PASSED or result.stage is optests.Stage.EAGER, (d.suffix, result.message)


@pytest.mark.parametrize("name", sorted(BUGS))
def test_planted_bug_hides_from_the_other_transforms(name: str) -> None:
    """Each bug needs its transform: the others' samples pass (static mode; ``also`` names the
    transforms that show it too)."""
    bug = BUGS[name]
    for transform in INPUT_TRANSFORMS:  # call patterns: tests/test_patterns.py
        if transform not in (bug.transform, *bug.also):
            for d in _derived(bug, transform):
                result = _check(bug, d, False)
                assert result.outcome is optests.Outcome.PASSED, (d.suffix, result.message)


def test_shrinking_finds_the_smallest_sizes_that_fail() -> None:
    bug = BUGS["every_other"]

    def fails(d: Derived) -> bool:
        return _check(bug, d, False).stage is optests.Stage.METADATA

    args, kwargs = bug.make()
    shrunk = shrink_resized(args, kwargs, fails)
    assert shrunk is not None and shrunk.description == "sizes 3->2, 4->3"
    assert shrunk.suffix == "resized-0" and shrunk.args[0].shape == (2, 3)
    assert shrink_resized(args, kwargs, lambda d: False, max_examples=5) is None


def test_shrinking_with_a_plain_predicate() -> None:
    def fails(d: Derived) -> bool:
        rows, cols = d.args[0].shape
        if cols % 2 and rows >= 4:
            return True
        raise RuntimeError("an exception counts as not failing")

    shrunk = shrink_resized([torch.randn(3, 4)], {}, fails, seed=1)
    assert shrunk is not None and shrunk.description == "sizes 3->4, 4->3"
    assert shrink_resized([torch.randn(1)], {}, fails) is None  # nothing to resize


_DRAW_SIZES = """
import torch
from optests._transforms import derive
shapes = [(a, b) for a in range(2, 9) for b in range(2, 9)]
print([derive("resized", [torch.zeros(s)], {}, draws=3)[i].description for s in shapes for i in range(3)])
"""


def test_drawn_sizes_do_not_depend_on_the_code_around_the_run(tmp_path: Path) -> None:
    """Hypothesis may swap a drawn integer for a constant from the source of "local" modules
    (any module outside site-packages and the standard library), caching them in
    ``.hypothesis/constants`` under the working directory. The sizes are drawn from booleans, so
    neither happens: the same draws with optests installed (in a site-packages folder) from a
    bare directory and beside an imported module full of constants, and nothing written."""
    site = tmp_path / "lib" / "site-packages"
    shutil.copytree(Path(optests.__file__).parent, site / "optests", ignore=shutil.ignore_patterns("__pycache__"))
    bare, busy = tmp_path / "bare", tmp_path / "busy"
    bare.mkdir()
    busy.mkdir()
    (busy / "constants_here.py").write_text("SIZES = " + repr([n * 1000 + 1 for n in range(64)]) + "\n")

    def draws(cwd: Path, prelude: str) -> str:
        env = {**os.environ, "PYTHONPATH": str(site)}
        command = [sys.executable, "-c", prelude + _DRAW_SIZES]
        return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout

    assert draws(bare, "") == draws(busy, "import sys; sys.path.insert(0, '.'); import constants_here\n")
    assert [p.name for p in busy.iterdir() if p.name != "__pycache__"] == ["constants_here.py"]
    assert list(bare.iterdir()) == []


@pytest.mark.parametrize(
    ("suffix", "made"),
    [
        ("noncontiguous", True),
        ("noncontiguous-0", False),  # it derives one sample at most, named without an index
        ("transposed-1", True),
        ("transposed", False),  # its samples are always named with their index
        ("grad-subset-7", True),
        ("grad-subset", False),
        ("tangents-3", True),
        ("tangents-4", False),  # tangents has four patterns
        ("special-8", True),
        ("special-9", False),
        ("outputs", True),
        ("outputs-0", False),
        ("out-3", True),
        ("out-4", False),
    ],
)
def test_makes_says_which_suffixes_a_derived_sample_can_have(suffix: str, made: bool) -> None:
    from optests._transforms import makes

    assert makes(suffix) is made
