"""The check on a corpus of operators with planted bugs, and on correct ones."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.utils._pytree as pytree
from corpus import BUGS, CORRECT

import optests
from optests._patterns import Called

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("bug", sorted(BUGS))
def test_planted_bug_is_flagged_at_its_stage(bug: str, dynamic: bool) -> None:
    func, make, stage, kwargs = BUGS[bug]
    args, kw = make()
    with pytest.raises(optests.Finding) as info:
        optests.aot_autograd_check(func, args, kw, dynamic, **kwargs)
    assert info.value.stage == optests.Stage(stage), str(info.value)
    assert isinstance(info.value, AssertionError)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name", sorted(CORRECT))
def test_correct_op_passes(name: str, dynamic: bool) -> None:
    func, make, kwargs = CORRECT[name]
    args, kw = make()
    optests.aot_autograd_check(func, args, kw, dynamic, try_check_data_specialization=True, **kwargs)


def test_inputs_are_never_mutated_by_the_check() -> None:
    func, make, _, kwargs = BUGS["undeclared_mutation"]
    args, kw = make()
    before = args[0].clone()
    optests.run_check(func, args, kw, False, **kwargs)
    assert torch.equal(args[0], before)


def test_a_mutation_is_a_change_an_element_can_show() -> None:
    """Strides no element is reached through (an empty tensor's, a size-1 dim's) are no mutation,
    as the metadata check does not compare them; any other stride and the storage offset are."""
    from optests._check import _identical

    buffer = torch.zeros(8)
    assert _identical(torch.empty(0, 5), torch.empty_strided((0, 5), (1, 1)))
    assert _identical(torch.zeros(1, 4), buffer.as_strided((1, 4), (7, 1)))
    x = torch.zeros(3, 3)
    assert not _identical(x, x.mT.contiguous().mT)
    assert not _identical(buffer[1:5], buffer[:4])
    assert not _identical(buffer[5:5], buffer[0:0])


@pytest.mark.parametrize(
    "bug",
    ["fake_wrong_shape_no_grad", "second_output_wrong_fake", "undeclared_alias"],
)
def test_the_in_tree_check_misses_what_our_additions_catch(bug: str) -> None:
    """Evidence for the README: with every addition off we behave like the in-tree check, and
    these bugs pass unnoticed; so does the in-tree check itself."""
    import warnings

    import torch._functorch.config as functorch_config
    from torch.testing._internal.optests.aot_autograd import aot_autograd_check as in_tree

    func, make, _, kwargs = BUGS[bug]
    # torch 2.13's AOTAutograd checks custom-op aliasing itself: a warning, or an error when the
    # CI environment variable is set. Pin the warning, so this test means the same everywhere.
    with functorch_config.patch(error_on_custom_op_aliasing=False), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        args, kw = make()
        in_tree(func, args, kw, False, **kwargs)
        args, kw = make()
        optests.aot_autograd_check(
            func,
            args,
            kw,
            False,
            check_metadata=False,
            check_autograd_metadata=False,
            check_mutations=False,
            randomize_without_gradients=False,
            **kwargs,
        )
    if bug == "undeclared_alias":  # the in-tree check passes; torch only warns
        assert any("may not alias any inputs" in str(w.message) for w in caught)


def test_the_in_tree_check_misdiagnoses_an_undeclared_mutation() -> None:
    """In-tree runs eager and compiled on the same tensors: eager's hidden mutation changes the
    compiled call's input, so it reports "outputs differ". Fresh copies let us name the cause."""
    from torch.testing._internal.optests.aot_autograd import aot_autograd_check as in_tree

    func, make, _, kwargs = BUGS["undeclared_mutation"]
    args, kw = make()
    with pytest.raises(AssertionError, match="Outputs of the operator are different"):
        in_tree(func, args, kw, False, **kwargs)
    args, kw = make()
    with pytest.raises(optests.MutationMismatch, match=r"traced mutation of args\[0\]=none"):
        optests.aot_autograd_check(func, args, kw, False, **kwargs)


@pytest.mark.parametrize("op", [torch.nonzero, torch.unique, torch.masked_select])
def test_data_dependent_output_sizes_are_not_metadata_findings(op: object) -> None:
    """Unbacked sizes are unknown to the trace: nothing to compare, no finding (they once were)."""
    torch.manual_seed(0)
    x = torch.randn(4, 3)
    args = [x, x > 0] if op is torch.masked_select else [x]
    result = optests.run_check(op, args, {}, True, check_gradients=False)  # type: ignore[arg-type]
    assert result.stage is not optests.Stage.METADATA, result.message


def test_run_check_returns_a_result_instead_of_raising() -> None:
    func, make, _, kwargs = BUGS["fake_wrong_dtype"]
    args, kw = make()
    result = optests.run_check(func, args, kw, False, **kwargs)
    assert result.outcome is optests.Outcome.FAILED
    assert result.stage is optests.Stage.METADATA
    assert result.message.startswith("traced out.dtype=float64, but expected float32 [")
    assert "aot_autograd_check(" in result.repro
    assert result.duration > 0
    assert isinstance(result.error, optests.MetadataMismatch)

    ok = optests.run_check(torch.sin, [torch.randn(3, requires_grad=True)], {}, False)
    assert ok.passed and ok.stage is None and ok.message == ""


def test_eager_failure_is_its_own_stage() -> None:
    with pytest.raises(optests.EagerFailure) as info:
        optests.aot_autograd_check(torch.mm, [torch.randn(2, 3), torch.randn(4, 5)], {}, False, check_gradients=False)
    assert info.value.stage is optests.Stage.EAGER


def test_check_gradients_auto_skips_gradients_without_grad_inputs() -> None:
    optests.aot_autograd_check(torch.sin, [torch.randn(3)], {}, False, check_gradients="auto")


def test_the_repro_reruns_the_finding() -> None:
    func, make, _, kwargs = BUGS["fake_wrong_dtype"]
    args, kw = make()
    result = optests.run_check(func, args, kw, False, **kwargs)
    namespace: dict[str, object] = {}
    with pytest.raises(optests.MetadataMismatch):
        exec(result.repro, namespace)


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [  # wrong arguments on purpose: what a caller without a type checker passes
        (lambda: optests.aot_autograd_check(42, [], {}, False), TypeError, "func must be callable, got int"),  # type: ignore[arg-type]
        (lambda: optests.aot_autograd_check(torch.sin, torch.randn(3), {}, False), TypeError, "args must be a list or tuple"),  # type: ignore[arg-type]
        (lambda: optests.aot_autograd_check(torch.sin, "x", {}, False), TypeError, "args must be a list or tuple"),
        (lambda: optests.aot_autograd_check(torch.sin, [], [1], False), TypeError, "kwargs must be a dict"),  # type: ignore[arg-type]
        (lambda: optests.aot_autograd_check(torch.sin, [], {}, "no"), TypeError, "dynamic must be True or False"),  # type: ignore[arg-type]
        (
            lambda: optests.aot_autograd_check(torch.sin, [], {}, False, check_gradients="yes"),  # type: ignore[arg-type]
            ValueError,
            "check_gradients must be True, False or 'auto', got 'yes'",
        ),
        (lambda: optests.run_check(torch.sin, [], {}, False, check_gradients=2), ValueError, "check_gradients must be"),
    ],
)
def test_bad_input_is_a_clear_error(call: object, error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=text.replace("(", r"\(").replace(")", r"\)")):
        call()  # type: ignore[operator]


def test_importing_optests_does_not_import_torch(pytester: pytest.Pytester) -> None:
    result = pytester.run(
        sys.executable,
        "-c",
        "import sys, optests, optests.plugin; assert 'torch' not in sys.modules, 'torch imported'; print('clean')",
    )
    assert result.ret == 0, result.stderr.str()
    result.stdout.fnmatch_lines(["clean"])


def test_a_verdict_does_not_depend_on_what_the_process_compiled_before() -> None:
    """hop_db's map traces its body with Dynamo, whose compiled frames outlived a check: on
    torch 2.13, map.simple's non-dense sample failed in dynamic mode when checked first and
    passed after its static check in the same process (so a sweep passed it, `optests check`
    did not). Each check now starts from a reset Dynamo. Run in a process of its own: on torch
    2.15 the failed trace leaves state behind that breaks later checks in the process."""
    code = """
import torch, optests
from optests import _opinfo
from optests._transforms import derive
(ref,) = _opinfo.select(_opinfo.all_ops(("hop_db",)), ["map.simple"])
sample = _opinfo.cached_samples(ref, "cpu", torch.float32)[0]
(derived,) = derive("noncontiguous", sample.args, sample.kwargs)
for dynamic in (True, False, True):
    checked = optests.run_check(sample.func, list(derived.args), derived.kwargs, dynamic)
    print(checked.outcome.value, checked.stage)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    # the failure on 2.13 and 2.15 (findings/map_noncontiguous_dynamic_error.py); a release that
    # fixes it needs another order-dependent call here, or this test checks nothing
    assert done.stdout.splitlines() == ["failed trace", "passed None", "failed trace"]


def test_the_check_s_keywords_are_its_declared_options() -> None:
    """One declaration: ``aot_autograd_check``'s signature (a contract, written out) holds every
    option of ``CheckOptions``, in order, with its default."""
    import dataclasses
    import inspect

    from optests._check import CheckOptions

    params = list(inspect.signature(optests.aot_autograd_check).parameters.values())[3:]
    # aot_autograd_check is the in-tree check: the aot_eager backend, its strides, the single call pattern
    declared = [f for f in dataclasses.fields(CheckOptions) if f.metadata.get("keyword", True)]
    assert {f.name for f in dataclasses.fields(CheckOptions)} - {f.name for f in declared} == {
        "backend",
        "compare_strides",
        "pattern",
    }
    assert [p.name for p in params] == [f.name for f in declared]
    assert [p.default for p in params[1:]] == [f.default for f in declared[1:]]


def test_a_passing_check_renders_no_repro(monkeypatch: pytest.MonkeyPatch) -> None:
    """The repro is rendered when a finding is made, not on every check."""
    from optests import _script

    def fail(*args: object, **kwargs: object) -> str:
        raise AssertionError("rendered")

    monkeypatch.setattr(_script, "render", fail)
    optests.aot_autograd_check(torch.sin, [torch.randn(3, requires_grad=True)], {}, False, try_check_data_specialization=True)
    monkeypatch.undo()
    func, make, stage, options = BUGS["memoized_scale"]
    result = optests.run_check(func, *make(), dynamic=False, **options)
    assert result.stage == stage and result.error is not None
    assert "aot_autograd_check(func, args, kwargs, dynamic=False, try_check_data_specialization=True)" in result.repro
    cause = result.error.__cause__
    assert isinstance(cause, optests.Finding) and cause.repro == result.repro


class _Ones:
    """A call pattern defined here: the gradient of every tensor output with explicit all-ones
    ``grad_outputs``, which for a correct op agrees with eager. It records what it called."""

    def __init__(self) -> None:
        self.called: list[object] = []
        self.gradients_taken = 0

    def call(self, fn: Callable[[list[torch.Tensor]], Any], inputs: list[torch.Tensor]) -> Called:
        self.called.append(fn)
        out = fn(inputs)
        return Called(out, out)

    def gradients(self, called: Called, inputs: list[torch.Tensor]) -> tuple[torch.Tensor | None, ...]:
        self.gradients_taken += 1
        outs = [o for o in pytree.tree_leaves(called.out) if isinstance(o, torch.Tensor) and o.requires_grad]
        diff = [t for t in inputs if t.requires_grad]
        return tuple(torch.autograd.grad(outs, diff, [torch.ones_like(o) for o in outs], allow_unused=True))


class _TwiceForCompiled(_Ones):
    """A call pattern that uses the compiled call's outputs otherwise than eager's: tangents of
    ones for the first gradient taken (eager's), twos after (the compiled call's)."""

    def gradients(self, called: Called, inputs: list[torch.Tensor]) -> tuple[torch.Tensor | None, ...]:
        self.gradients_taken += 1
        scale = 1.0 if self.gradients_taken == 1 else 2.0
        outs = [o for o in pytree.tree_leaves(called.out) if isinstance(o, torch.Tensor) and o.requires_grad]
        diff = [t for t in inputs if t.requires_grad]
        return tuple(torch.autograd.grad(outs, diff, [torch.full_like(o, scale) for o in outs], allow_unused=True))


def test_a_call_pattern_is_a_seam(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pattern defined outside optests, registered by name, calls eager and the compiled
    function alike (the same object, both through it) and its gradients are the ones compared."""
    from optests import _patterns

    ones = _Ones()
    monkeypatch.setitem(_patterns.PATTERNS, "ones", ones)
    x = torch.randn(3, 4, requires_grad=True)
    result = optests.run_check(torch.sin, [x], {}, False, pattern="ones")
    assert result.outcome is optests.Outcome.PASSED, result.message
    assert len(ones.called) == 2 and ones.gradients_taken == 2
    assert getattr(ones.called[0], "__name__", "") == "eager" and ones.called[1] is not ones.called[0]

    differs = _TwiceForCompiled()
    monkeypatch.setitem(_patterns.PATTERNS, "twice-for-compiled", differs)
    result = optests.run_check(torch.sin, [x], {}, False, pattern="twice-for-compiled", float64_reference=False)
    assert result.outcome is optests.Outcome.FAILED and result.stage is optests.Stage.BACKWARD, result.message
    assert result.message.startswith("grad of args[0]"), result.message


def test_an_unknown_call_pattern_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown call pattern 'nope'; known: single"):
        optests.run_check(torch.sin, [torch.randn(2)], {}, False, pattern="nope")


def _fresh_leaf(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Returns a new leaf that requires grad beside its result: eager gives a leaf, the compiled
    call an output of its autograd node."""
    return x * 2, torch.zeros(3, requires_grad=True)


def test_the_autograd_metadata_compares_is_leaf_and_has_a_switch() -> None:
    x = torch.randn(4, requires_grad=True)
    result = optests.run_check(_fresh_leaf, [x], {}, False)
    assert result.stage is optests.Stage.METADATA
    assert result.message == "compiled out[1].is_leaf=False, but expected True [_fresh_leaf static]"
    assert optests.run_check(_fresh_leaf, [x], {}, False, check_autograd_metadata=False).outcome is optests.Outcome.PASSED


def test_the_autograd_metadata_compares_views_among_outputs() -> None:
    from optests._check import CheckOptions, _autograd_metadata, _Checking, _Compared, _Run, _TensorCall
    from optests._patterns import Called, get_pattern

    x = torch.randn(4)
    y = x * 2
    shared, apart = (y, y.view(2, 2)), (y, (x * 2).view(2, 2))
    opts = _Checking(CheckOptions(dynamic=False), "ctx", get_pattern("single"))
    call = _TensorCall(torch.sin, [x], {})
    compared = _Compared(call, [x], _Run([x], Called(shared, shared)), _Run([x], Called(apart, apart)), opts, False, None)
    with pytest.raises(optests.MetadataMismatch) as raised:
        _autograd_metadata(compared)
    assert raised.value.summary == "compiled out[0] shares a storage with=[], but expected [out[1]] [ctx]"


def test_what_eager_draws_is_found_once_for_every_question_a_comparison_asks() -> None:
    """A comparison asks what eager's call draws twice where a compiled call leaves another RNG
    state (is the op random; does eager restore the generator): eager's call runs once for both."""
    from optests._check import CheckOptions, _Checking, _Compared, _Run, _TensorCall
    from optests._check._comparisons import _random_op, _restores_the_generator
    from optests._check._running import _SEED
    from optests._patterns import get_pattern

    runs = []

    def seeded_dropout(x: torch.Tensor) -> torch.Tensor:
        runs.append(1)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(42)
            return torch.nn.functional.dropout(x, 0.5)

    x = torch.randn(4)
    opts = _Checking(CheckOptions(dynamic=False), "ctx", get_pattern("single"))
    call = _TensorCall(seeded_dropout, [x], {})
    compared = _Compared(call, [x], _Run([x]), _Run([x]), opts, False, None)
    assert _random_op(compared) is not None
    assert _restores_the_generator(compared, "the RNG state", torch.Generator().manual_seed(_SEED).get_state())
    assert len(runs) == 1
