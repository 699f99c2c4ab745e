"""The ``sequence`` call pattern: one function compiled once and called over a sequence of
inputs, each call compared with eager. Each kind of sequence catches a planted bug (a fake kernel
wrong for size 1 or for an unbacked size, a backend that reuses its first graph on a recompile, a
registered backend whose second compile is wrong), in static and dynamic mode, and leaves a
correct twin clean."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sequence_corpus as corpus
import torch

import optests
from optests import _backends, _repro
from optests._patterns.sequence import KINDS, Sequence
from optests._transforms import derive

TESTS = Path(__file__).resolve().parent
STALE = "tests.user_backends:stale_on_recompile"
MODES = ("static", "dynamic")


def _kind(name: str) -> int:
    return [k for k, _ in KINDS].index(name)


def _sequence(func: Callable[..., Any], make: Callable[[], Any], kind: str, dynamic: bool, **options: Any) -> optests.CheckResult:
    args, kwargs = make()
    return optests.run_check(func, args, kwargs, dynamic, pattern=f"sequence-{_kind(kind)}", **options)


def test_sequence_is_a_call_pattern_in_the_author_default_and_not_in_the_sweep_s() -> None:
    from optests._settings import AUTHOR_DEFAULTS, OPTIONS

    assert "sequence" in optests._key.CALL_PATTERNS and "sequence" in optests._key.parse_transforms(AUTHOR_DEFAULTS.transforms)
    (sweep,) = [o for o in OPTIONS if o.name == "transforms"]
    assert sweep.default == "none"


def test_each_kind_derives_where_it_applies() -> None:
    x, y = corpus.scaled_sample()[0][:2]
    suffixes = [d.suffix for d in derive("sequence", [x, y, 2.0, True], {})]
    wanted = {"sizes", "strides", "requires-grad", "dtype", "scalars", "aliasing", "grad-mode", "mark-dynamic", "mark-unbacked"}
    assert suffixes == [f"sequence-{_kind(k)}" for k, _ in KINDS if k in wanted]
    # nothing to vary: a 1-element tensor alone derives no sizes, strides, scalars or aliasing
    few = {d.suffix for d in derive("sequence", [torch.ones(1)], {})}
    assert few == {f"sequence-{_kind('dtype')}"}


def test_the_sizes_sequence_goes_to_1_and_0_in_each_size() -> None:
    steps = Sequence(_kind("sizes")).steps(torch.add, (torch.ones(3, 4), torch.ones(4)), {})
    assert steps.first == "sizes [3, 4] and [4]"
    assert [s.label for s in steps.later] == [
        "sizes [4, 5] and [5]",
        "sizes [1, 4] and [4]",
        "sizes [0, 4] and [4]",
        "sizes [3, 1] and [1]",
        "sizes [3, 0] and [0]",
    ]


@pytest.mark.parametrize("mode", MODES)
def test_a_fake_kernel_wrong_for_size_1_is_caught_by_sizes_and_its_twin_is_clean(mode: str) -> None:
    bad = _sequence(corpus.rowsum_small, corpus.rows, "sizes", mode == "dynamic")
    assert bad.stage is optests.Stage.SEQUENCE, bad.message
    assert bad.message.startswith("call 2 (sizes [1, 4] after sizes [4, 5]): compiled "), bad.message
    assert "Dynamo compiles on one compiled function]" in bad.detail
    good = _sequence(corpus.rowsum, corpus.rows, "sizes", mode == "dynamic")
    assert good.passed, good.message
    assert good.notes[-1].startswith("sequence: 6 calls, "), good.notes


@pytest.mark.parametrize("mode", MODES)
def test_a_fake_kernel_wrong_for_an_unbacked_size_is_caught_by_mark_unbacked(mode: str) -> None:
    dynamic = mode == "dynamic"
    bad = _sequence(corpus.rowsum_unbacked, corpus.rows, "mark-unbacked", dynamic)
    assert bad.stage is optests.Stage.SEQUENCE and bad.message.startswith("call 1 (sizes [3, 4], mark_unbacked on args[0]"), bad
    assert _sequence(corpus.rowsum, corpus.rows, "mark-unbacked", dynamic).passed


#: The kinds a backend that reuses its first graph on a recompile fails under, in both modes.
STALE_KINDS = ("sizes", "scalars", "aliasing", "grad-mode", "mark-unbacked")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", STALE_KINDS)
def test_a_backend_that_reuses_its_first_graph_is_caught_by_each_kind(kind: str, mode: str) -> None:
    result = _sequence(corpus.scaled, corpus.scaled_sample, kind, mode == "dynamic", backend=STALE)
    assert result.stage is optests.Stage.SEQUENCE, result.message
    assert result.message.startswith("call "), result.message


@pytest.mark.parametrize("kind", STALE_KINDS)
def test_each_kind_leaves_a_correct_function_clean(kind: str) -> None:
    clean = _sequence(corpus.scaled, corpus.scaled_sample, kind, False)
    assert clean.passed, clean.message
    assert clean.notes[-1].startswith("sequence: "), clean.notes


def _breaks_the_graph(x: torch.Tensor) -> torch.Tensor:
    """Correct, and Dynamo cannot compile it as one graph: a graph break at every call."""
    y = x.sin()
    torch._dynamo.graph_break()
    return y * 2


def _breaks_the_graph_at_size_1(x: torch.Tensor) -> torch.Tensor:
    """A graph break only where the first dim is 1: the sequence's first call compiles, its later
    call of size 1 does not."""
    if x.shape[0] == 1:
        torch._dynamo.graph_break()
    return x.sin() * 2


@pytest.mark.parametrize("mode", MODES)
def test_a_function_dynamo_cannot_compile_as_one_graph_is_not_applicable_not_a_finding(mode: str) -> None:
    """A graph break under ``fullgraph=True`` says what Dynamo covers, not what a later call
    returns: no sequence on the first call (not applicable), a later call dropped."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        checks = optests.check_op(
            _breaks_the_graph, [([torch.randn(3, 4, requires_grad=True)], {})], modes=[mode], transforms="sequence"
        )
    outcomes = {c.key.transform: c.result.outcome for c in checks}
    assert outcomes[""] is optests.Outcome.PASSED
    applied = {t: o for t, o in outcomes.items() if t}
    assert applied and set(applied.values()) == {optests.Outcome.NOT_APPLICABLE}, applied
    (said,) = {c.result.message.split(": ", 1)[1][:60] for c in checks if c.key.transform == "sequence-0"}
    assert "GraphBreak" in said, said
    later = _sequence(
        _breaks_the_graph_at_size_1, lambda: ([torch.randn(3, 4, requires_grad=True)], {}), "sizes", mode == "dynamic"
    )
    assert later.passed, later.message
    assert "dropped" in later.notes[-1], later.notes


def _batch_norm() -> tuple[list[Any], dict[str, Any]]:
    from optests._modules import module_state

    torch.manual_seed(0)
    return [*module_state(_MODULE), torch.randn(3, 4)], {}


_MODULE = torch.nn.BatchNorm1d(4)


@pytest.mark.parametrize("mode", MODES)
def test_a_module_changed_between_calls_is_caught_and_a_correct_one_is_clean(mode: str) -> None:
    from optests._modules import ModuleCall

    module = ModuleCall(_MODULE)
    bad = _sequence(module, _batch_norm, "module", mode == "dynamic", backend=STALE)
    assert bad.stage is optests.Stage.SEQUENCE and bad.message.startswith("call 1 (eval() after train()): "), bad.message
    if mode == "static":  # hooks are guarded: a forward hook added after the first call is called
        good = _sequence(module, _batch_norm, "module", False)
        assert good.passed, good.message
        assert _MODULE.training and not _MODULE._forward_hooks, "the sequence changes a copy of the module"


class _SecondCompileWrong:
    """A backend registered with ``optests.register_backend``: AOTAutograd, but where Dynamo
    compiles a frame again, what it compiles adds 1 to each output."""

    nofunc = True
    same_random = True
    opinfo_test = "TestEagerFusionOpInfo"
    free_strides: frozenset[str] = frozenset()

    def compile(self, fn: Callable[..., Any], *, dynamic: bool, disable_functionalization: bool) -> Callable[..., Any]:
        compiled = _backends.get_backend("aot_eager").compile(
            fn, dynamic=dynamic, disable_functionalization=disable_functionalization
        )
        compile_id = torch._guards.CompileContext.current_compile_id()
        if compile_id is None or not compile_id.frame_compile_id:
            return compiled
        return lambda tensors: [t + 1 for t in compiled(tensors)]


def test_each_backend_runs_its_sequences_through_a_dynamo_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _backends.dynamo_backend("aot_eager") == "aot_eager"
    assert _backends.dynamo_backend("aot_eager_decomp_partition") == "aot_eager_decomp_partition"
    assert _backends.dynamo_backend("inductor") == "inductor"
    assert _backends.dynamo_backend("dynamo:eager") == "eager"
    user = _backends.dynamo_backend(STALE)
    assert callable(user) and getattr(user, "__name__", "") == "stale_on_recompile"
    assert callable(_backends.dynamo_backend("aot_eager", disable_functionalization=True))
    monkeypatch.setitem(_backends.BACKENDS, "second_wrong", _SecondCompileWrong())
    assert optests.run_check(corpus.scaled, *corpus.scaled_sample(), False, backend="second_wrong").passed
    found = _sequence(corpus.scaled, corpus.scaled_sample, "scalars", False, backend="second_wrong")
    assert found.stage is optests.Stage.SEQUENCE and found.message.startswith("call 1 (args[2]=3.25, args[3]=True after"), found


@pytest.mark.slow
def test_check_op_s_defaults_flag_a_sequence_bug_under_every_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """``check_op`` with only its backends given plans ``sequence`` (in its default transforms);
    of what it plans, the sizes sequences in static mode are run here (inductor is slow)."""
    from optests import _author

    run_planned = _author.run_planned
    planned_suffixes: set[str] = set()

    def only_sizes(target: Any, planned: Any, **kwargs: Any) -> Any:
        planned_suffixes.update(p.key.transform for p in planned)
        chosen = [p for p in planned if p.key.transform == f"sequence-{_kind('sizes')}" and str(p.key.mode) == "static"]
        return run_planned(target, chosen, **kwargs)

    monkeypatch.setattr(_author, "run_planned", only_sizes)
    backends = ["aot_eager", "aot_eager_decomp_partition", "inductor"]
    checks = optests.check_op(corpus.rowsum_small, [corpus.rows()], backends=backends)
    assert {f"sequence-{_kind(k)}" for k in ("sizes", "mark-dynamic", "mark-unbacked", "grad-mode")} <= planned_suffixes
    failed = {c.key.backend for c in checks if c.result.stage is optests.Stage.SEQUENCE}
    assert failed == set(backends), [c.result.message for c in checks]


@pytest.mark.slow
def test_a_repro_script_reruns_the_sequence_without_optests(tmp_path: Path) -> None:
    result = _sequence(corpus.rowsum_small, corpus.rows, "sizes", False)
    finding = result.error
    assert finding is not None and finding.options is not None and finding.inputs is not None
    script = _repro.write_standalone(
        tmp_path, "rowsum_small", corpus.rowsum_small, finding.inputs, finding.options, summary=finding.summary
    )
    text = script.read_text()
    assert "import optests" not in text and f"PATTERNS['sequence-{_kind('sizes')}'] = Sequence({_kind('sizes')})" in text
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    ran = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert ran.returncode == 1 and "REPRODUCED" in ran.stdout, ran.stdout + ran.stderr
    assert "[sequence] call 2 (sizes [1, 4] after sizes [4, 5]): compiled" in ran.stdout, ran.stdout


@pytest.mark.slow
def test_a_repro_script_of_the_op_s_samples_in_order_carries_the_later_samples(tmp_path: Path) -> None:
    """The callable of sample 0's ``samples`` sequence carries the samples after it: its script
    writes them out, so that it reruns the whole sequence without optests."""
    from optests._pipeline import Base, following

    torch.manual_seed(0)
    samples = [[torch.randn(n, 4, requires_grad=True)] for n in (3, 5, 1)]
    base = Base(corpus.rowsum_small, samples[0], {}, "auto", following=following([(corpus.rowsum_small, a, {}) for a in samples]))
    (d,) = [d for d in derive("sequence", samples[0], {}, origin=base) if d.suffix == f"sequence-{_kind('samples')}"]
    assert d.func is not None
    finding = optests.run_check(d.func, d.args, d.kwargs, False, pattern=d.pattern).error
    assert finding is not None and finding.options is not None and finding.inputs is not None
    script = _repro.write_standalone(tmp_path, "rowsum_small", d.func, finding.inputs, finding.options, summary=finding.summary)
    text = script.read_text()
    assert "TODO" not in text
    assert "func = Following(torch.ops.optests_seqcorpus.rowsum_small.default, tuple([([torch.tensor(" in text
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    ran = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert ran.returncode == 1 and "REPRODUCED" in ran.stdout, ran.stdout + ran.stderr
    assert "[sequence] call 2 (sample 2 after sample 1): " in ran.stdout, ran.stdout


@pytest.mark.parametrize("mode", MODES)
def test_the_op_s_samples_in_order_on_one_compiled_function(mode: str) -> None:
    """Sample 0 carries the samples after it (``Base.following``): one compiled function calls them in order."""
    from optests._pipeline import Base, following

    torch.manual_seed(0)
    samples = [[torch.randn(n, 4, requires_grad=True)] for n in (3, 5, 1)]

    def sequence_of(func: Callable[..., Any]) -> optests.CheckResult:
        after = following([(func, args, {}) for args in samples])
        base = Base(func, samples[0], {}, "auto", following=after)
        (d,) = [d for d in derive("sequence", samples[0], {}, origin=base) if d.suffix == f"sequence-{_kind('samples')}"]
        assert d.func is not None
        return optests.run_check(d.func, d.args, d.kwargs, mode == "dynamic", pattern=d.pattern)

    bad = sequence_of(corpus.rowsum_small)
    assert bad.stage is optests.Stage.SEQUENCE and bad.message.startswith("call 2 (sample 2 after sample 1): "), bad.message
    good = sequence_of(corpus.rowsum)
    assert good.passed and good.notes[-1].startswith("sequence: 3 calls, "), good
    assert f"sequence-{_kind('samples')}" not in {
        d.suffix for d in derive("sequence", samples[0], {}, origin=Base(corpus.rowsum, samples[0], {}, "auto"))
    }
