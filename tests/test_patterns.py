"""Call patterns: derived samples on the transform axis, declared once; each planted bug of
``pattern_corpus.py`` flagged by its pattern alone, at its stage, by ``check_op``, ``optests
check`` and the sweep with their defaults; no correct op flagged."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pattern_corpus as corpus
import pytest
import torch
from sweepdir import install_sweep, run_inline

import optests
from optests import _backends, _key
from optests._key import CALL_PATTERNS, DERIVATIONS, TRANSFORMS, Mode, SampleKey, transform_name
from optests._patterns import DEFAULT_PATTERN, get_pattern
from optests._pipeline import Base
from optests._transforms import MAX_PAIRS, Transform, derive, transform_of

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "sweep_fixtures"
BIN = Path(sys.executable).parent


def test_each_transform_and_pattern_is_declared_once_where_ids_and_options_read_it() -> None:
    assert TRANSFORMS == tuple(DERIVATIONS)
    assert set(CALL_PATTERNS) == {
        "tangents",
        "grad-mode",
        "backward",
        "outputs",
        "inplace",
        "out",
        "subclass",
        "autocast",
        "sequence",
        "func",
        "checkpoint",
        "hooks",
        "inplace-between",
        "rng",
    }
    for name in TRANSFORMS:
        assert isinstance(transform_of(name), Transform), name
        assert SampleKey.is_id(f"static-float32-cpu-sin-sample0-{name}")
        assert SampleKey.is_id(f"static-float32-cpu-sin-sample0-{name}-3")
    assert _key.parse_transforms("all") == TRANSFORMS
    # "out" and "outputs" are told apart however the names are ordered
    split = {"sin": ("sin", "")}.get
    assert SampleKey.parse("static-float32-cpu-sin-sample2-outputs", split) == SampleKey(
        "sin", "", Mode.STATIC, "float32", "cpu", 2, transform="outputs"
    )
    assert transform_name("out-3") == "out" and transform_name("grad-mode-1") == "grad-mode"


def test_a_declaration_is_all_a_new_derivation_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    """One line in ``_key.DERIVATIONS`` naming a module's Transform row: derive finds it there."""
    monkeypatch.setitem(DERIVATIONS, "flipped", f"{__name__}:FLIPPED")
    transform_of.cache_clear()
    try:
        (d,) = derive("flipped", [torch.arange(3.0)], {})
        assert d.suffix == "flipped-0" and torch.equal(d.args[0], torch.tensor([2.0, 1.0, 0.0]))
    finally:
        transform_of.cache_clear()


def _flip(sample, draws, seed):  # type: ignore[no-untyped-def]
    from optests._transforms import _Made

    return {0: _Made(sample.build({pos: sample.tensor(pos).flip(0) for pos in sample.inputs}), "flipped")}


FLIPPED = Transform(_flip)


def test_a_pattern_derives_the_sample_as_it_is_checked_with_the_pattern_its_suffix_names() -> None:
    x = torch.randn(3, 4, requires_grad=True)
    base = Base(torch.sin, [x], {}, True)
    for name in ("tangents", "grad-mode", "backward", "outputs", "subclass", "autocast"):
        found = derive(name, [x], {}, origin=base)
        assert found, name
        for d in found:
            assert d.pattern == d.suffix and get_pattern(d.pattern) is not None
            assert torch.equal(d.args[0], x) and d.args[0] is not x
    assert [d.check_gradients(True) for d in derive("grad-mode", [x], {})] == [False, False]
    assert derive("autocast", [x], {})[0].judged is torch.bfloat16
    assert get_pattern(DEFAULT_PATTERN) is not None
    for name in ("tangents-x", "tangents-4", "backward-4", "grad-mode-2", "out-4", "outputs-0", "subclass-1"):
        with pytest.raises(ValueError, match=f"^unknown call pattern '{name}'; known: single"):
            get_pattern(name)
    assert [type(get_pattern(f"tangents-{i}")).__name__ for i in range(4)] == ["Tangents"] * 4


def test_inplace_and_out_need_the_sample_s_origin() -> None:
    x, s = torch.randn(3, 4), torch.randn(3, 4)
    assert derive("inplace", [x, s], {}) == [] and derive("out", [x], {}) == []
    (plain,) = derive("inplace", [x, s], {}, origin=Base(corpus.scale, [x, s], {}, "auto"))
    assert plain.func is corpus.scale_ and plain.suffix == "inplace-0"
    outs = derive("out", [x], {}, origin=Base(corpus.halve, [x], {}, "auto"))
    assert [d.suffix for d in outs] == ["out-0", "out-1", "out-2", "out-3"]
    assert outs[1].kwargs["out"].shape == (0,) and not outs[2].kwargs["out"].is_contiguous()
    assert outs[3].kwargs["out"] is outs[3].args[0]


def _warns_once(x: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor:
    """An op with an out variant that warns on its slow path, as ``torch.searchsorted`` does once
    per process for a non-contiguous input."""
    warnings.warn("a slow path", UserWarning, stacklevel=2)
    return torch.sin(x, out=out)


def test_a_warning_of_the_op_does_not_stop_a_pattern_deriving_from_it() -> None:
    """``out`` calls the op to learn what its out= tensors hold. Under "error" filters (this
    repository's pytest configuration, and any project's that sets them) a warning there made the
    derivation fail, and a TORCH_WARN_ONCE warning made the first sample a sweep's process derived
    from not applicable (``out-0 derives no such sample``), the next ones checked."""
    x = torch.randn(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outs = derive("out", [x], {}, origin=Base(_warns_once, [x], {}, "auto"))
    assert [d.suffix for d in outs] == ["out-0", "out-1", "out-2", "out-3"]


def test_inplace_1_mutates_a_view_of_a_non_leaf_which_eager_allows() -> None:
    """A view of a leaf that requires grad refuses every in-place op in eager: ``inplace-1`` takes
    a view of a non-leaf, and the check's fresh copies keep it one."""
    from optests._check import _copy

    (view,) = [
        d.args[0]
        for d in derive("inplace", [torch.randn(3, 4, requires_grad=True)], {}, origin=Base(torch.sin, [], {}, True))
        if d.suffix == "inplace-1"
    ]
    for t in (view, _copy(view, False), _copy(view, True)):
        assert t._is_view() and t._base is not None and t._base.grad_fn is not None and t.requires_grad
        assert (t.shape, t.stride(), t.storage_offset()) == ((3, 4), (4, 1), 1)
        t.clone().sin_()  # a non-leaf: allowed
        t.sin_()  # a view of a non-leaf: allowed
    checks = optests.check_op("sin", modes=["static"], transforms="inplace", select="first:1")
    assert {c.key.transform: c.result.outcome.value for c in checks} == {
        "": "passed",
        "inplace-0": "passed",
        "inplace-1": "passed",
    }


def test_aliased_keeps_its_pairs_and_adds_overlapping_slices() -> None:
    a, b, c = torch.randn(4, 3), torch.randn(4, 3), torch.randn(2, 3)
    found = {d.suffix: d for d in derive("aliased", [a, b, c], {})}
    assert found["aliased-0"].description == "args[0] and args[1] as the two halves of one storage"
    slice_ = found[f"aliased-{MAX_PAIRS}"]
    state, part = slice_.args[0], slice_.args[2]
    assert slice_.description == "args[2] as args[0][1:3], overlapping it"
    assert part.storage_offset() == 3 and part.untyped_storage().data_ptr() == state.untyped_storage().data_ptr()
    assert torch.equal(state, a) and torch.equal(part, a[1:3])


def _failures(checks: list[optests.SampleCheck]) -> set[tuple[str, str]]:
    return {(transform_name(c.key.transform), str(c.result.stage)) for c in checks if c.result.outcome is optests.Outcome.FAILED}


@pytest.mark.parametrize("name", sorted(corpus.BUGS))
def test_check_op_flags_each_bug_by_its_pattern_alone(name: str) -> None:
    bug = corpus.BUGS[name]
    failed = _failures(optests.check_op(bug.func, [bug.make()]))
    assert (bug.pattern, bug.stage) in failed
    assert {pattern for pattern, _ in failed} <= {bug.pattern, *bug.also}, failed


def test_a_step_that_raises_in_one_call_alone_is_named_with_its_error() -> None:
    """Group 10's 240 ``quantile`` failures said ``out.mul_(2)=raised RuntimeError``: which
    error (#90507's "is a view and is being modified inplace") took a repro to see."""
    bug = corpus.BUGS["rows"]
    checks = optests.check_op(bug.func, [bug.make()], modes=("static",), transforms=("outputs",))
    (check,) = [c for c in checks if c.key.transform]
    first = check.result.message.splitlines()[0]
    assert first.startswith("out[0].mul_(2)=no error, but expected raised RuntimeError: "), first
    assert first.endswith(
        "(as eager) [rows static float32 cpu sample 0 outputs: each output mutated in place after the call (mul_(2))]"
    )
    assert "is a view" in first and "modified inplace" in first, first


@pytest.mark.parametrize("name", sorted(corpus.CORRECT))
def test_check_op_passes_each_correct_op_under_every_transform_and_pattern(name: str) -> None:
    op = corpus.CORRECT[name]
    checks = optests.check_op(op.func, [op.make()])
    assert not _failures(checks), [c.result.message for c in checks if c.result.outcome is optests.Outcome.FAILED]
    assert {transform_name(c.key.transform) for c in checks} >= {"tangents", "backward", "outputs", "grad-mode"}


_SAMPLES = """
import pattern_corpus as corpus

def times3():
    return [corpus.BUGS["times3"].make()]
"""


def test_optests_check_applies_every_pattern_by_default(tmp_path: Path) -> None:
    (tmp_path / "psamples.py").write_text(_SAMPLES)
    env = {**os.environ, "PYTHONPATH": str(TESTS)}

    def check(op: str, func: str, *extra: str) -> subprocess.CompletedProcess[str]:
        command = [str(BIN / "optests"), "check", op, "-v", "--import", "psamples", "--samples", f"psamples:{func}", *extra]
        return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, check=False)

    bad = check("optests_pcorpus::times3", "times3", "--json", "out.json")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "sample 0 tangents-1 [backward]" in bad.stdout, bad.stdout
    records = json.loads((tmp_path / "out.json").read_text())["samples"]
    assert {r["transform"] for r in records} >= {"tangents-1", "backward-2", "grad-mode-1", "outputs", "subclass", "autocast"}
    failed = {r["transform"] for r in records if r["outcome"] == "failed"}
    assert failed == {"tangents-1"}, failed
    plain = check("optests_pcorpus::times3", "times3", "--transforms", "none")
    assert plain.returncode == 0, plain.stdout + plain.stderr
    only = check("optests_pcorpus::times3", "times3", "--transforms", "tangents")
    assert only.returncode == 1 and "tangents-1" in only.stdout
    # the repro script makes the pattern the check ran with, and shows the finding without optests
    script = tmp_path / "optests-repro" / "optests_pcorpus__times3-static-float32-sample0-tangents-1.py"
    text = script.read_text()
    assert "PATTERNS['tangents-1'] = Tangents(1)" in text and "import optests" not in text
    rerun = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert rerun.returncode == 1 and "REPRODUCED" in rerun.stdout, rerun.stdout + rerun.stderr
    assert "grad of args[0]=max abs diff" in rerun.stdout


@pytest.mark.skipif("tri_solve" not in corpus.BUGS, reason="backward_pass_autocast is off by default: no bug to show")
def test_autocast_scripts_judge_as_the_check_does_without_optests(tmp_path: Path) -> None:
    """A script makes the autocast pattern from the check's own code, which records the lower
    precision the call ran in: it finds the compiled gradient computed in bfloat16 beside eager's
    float32 one, and puts a gradient eager itself computed in bfloat16 down to rounding."""
    from optests import _repro

    bug, good = corpus.BUGS["tri_solve"], corpus.CORRECT["reused_weight"]
    (checked,) = [c for c in optests.check_op(bug.func, [bug.make()], modes=["static"], transforms="autocast") if c.key.transform]
    finding = checked.result.error
    assert finding is not None and finding.options is not None
    scripts = [
        _repro.write_standalone(tmp_path, "tri_solve", bug.func, checked.inputs, finding.options, summary=finding.summary),
        _repro.write_standalone(
            tmp_path, "reused_weight", good.func, good.make(), {**finding.options, "randomized_sample": None}, summary="(none)"
        ),
    ]
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    ran = [
        subprocess.run([sys.executable, str(p)], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
        for p in scripts
    ]
    assert "import optests" not in scripts[0].read_text()
    assert ran[0].returncode == 1 and "[backward] grad of args[0]=max abs diff" in ran[0].stdout, ran[0].stdout + ran[0].stderr
    assert ran[1].returncode == 0, ran[1].stdout + ran[1].stderr
    assert "note: grad: rounding: compiled is" in ran[1].stdout and "eager rounds at bfloat16's precision" in ran[1].stdout


@pytest.mark.slow
def test_the_sweep_flags_each_bug_by_its_pattern_and_no_correct_op(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_sweep(pytester.path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FIXTURES), str(TESTS)]))
    args = [
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
        "--optests-dbs=pattern_ops:ops",
        "--optests-transforms=all",
        "--optests-modes=static",
    ]
    result = run_inline(pytester, *args, "--optests-results=r.json", "--optests-accept")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    records = json.loads((pytester.path / "r.json").read_text())["samples"]
    found = {
        (str(r["op"]), str(r["mode"]), transform_name(str(r["transform"])), str(r["stage"]))
        for r in records
        if r["outcome"] == "failed"
    }
    for name, bug in corpus.BUGS.items():
        assert (f"bug_{name}", "static", bug.pattern, bug.stage) in found, name
        assert {f[2] for f in found if f[0] == f"bug_{name}"} <= {bug.pattern, *bug.also}, name
    assert not {f for f in found if f[0].startswith("correct_")}
    assert {transform_name(str(r["transform"])) for r in records if r["transform"]} == set(TRANSFORMS)
    again = run_inline(pytester, *args, "--optests-strict-registry")
    assert again.ret == pytest.ExitCode.OK, again.stdout.str()


def test_takes_out_reads_a_custom_op_s_schema_and_an_aten_op_s() -> None:
    """A ``torch.library.custom_op`` keeps its schema as a string (reading it as a schema raised,
    and the op derived nothing); its OpOverload's is read. Custom ops take no keyword-only
    tensors, so none has an ``out=`` variant."""
    from types import SimpleNamespace

    from optests._patterns.out import takes_out

    @torch.library.custom_op("optests_patterns::scale_into", mutates_args=("out",))
    def scale_into(x: torch.Tensor, out: torch.Tensor) -> None:
        out.copy_(x * 2)

    @torch.library.custom_op("optests_patterns::scale", mutates_args=())
    def scale(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    def of(func: object) -> bool:
        return takes_out(SimpleNamespace(opinfo=None, func=func), SimpleNamespace(args=(), kwargs={}))  # type: ignore[arg-type]

    assert not of(scale_into) and not of(scale)
    assert of(torch.ops.aten.sin.out) and not of(torch.ops.aten.sin.default)


def test_an_inplace_finding_names_the_in_place_variant_it_compiled() -> None:
    """What ``optests check`` writes a repro of: the callable the check compiled."""
    bug = corpus.BUGS["scale"]
    checks = optests.check_op(bug.func, [bug.make()], modes=["static"], transforms="inplace")
    failed = [c for c in checks if c.result.outcome is optests.Outcome.FAILED]
    assert failed and all(c.func is bug.inplace for c in failed), [(c.id, c.func) for c in failed]
    assert all(c.func is bug.func for c in checks if not c.key.transform)


def _refuses_without_grad_in_eager(x: torch.Tensor) -> torch.Tensor:
    """Refuses a call without grad mode, but only on real tensors: the trace (fake tensors) lets
    it through, so the compiled function never refuses."""
    if type(x) is torch.Tensor and not torch.is_grad_enabled():
        raise RuntimeError("refused without grad mode")
    return x * 2


def test_a_call_pattern_eager_refuses_and_compiled_runs_is_a_finding() -> None:
    """Under a call pattern, which of eager and compiled raises is a difference like any other;
    the default call keeps an eager failure as not applicable (no valid call)."""
    make = corpus.CORRECT["sum_of_squares"].make
    checks = optests.check_op(_refuses_without_grad_in_eager, [make()], modes=["static"], transforms="grad-mode")
    by = {c.key.transform: c.result for c in checks}
    assert by[""].passed
    for suffix in ("grad-mode-0", "grad-mode-1"):  # no_grad, inference_mode
        assert by[suffix].stage is optests.Stage.FORWARD, by[suffix].message
        assert (
            "compiled call=no error, but expected raised RuntimeError: refused without grad mode (as eager)" in by[suffix].message
        )


def _refuses_under_autocast_in_eager(message: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """Raises ``message`` under autocast, on real tensors only (eager's kernel; the trace and so
    the compiled function go through): the LSTM under bfloat16 autocast on a CPU without AVX-512."""

    def refuses(x: torch.Tensor) -> torch.Tensor:
        if type(x) is torch.Tensor and torch.is_autocast_enabled("cpu"):
            raise RuntimeError(message)
        return x * 2

    return refuses


@pytest.mark.parametrize(
    ("message", "applies"),
    [
        ("could not create a primitive descriptor for the LSTM forward propagation primitive.", False),
        ("mkldnn_relu: bf16 path needs the cpu support avx512bw, avx512vl and avx512dq", False),
        ("Your CPU does not support FBGEMM.", False),
        ("Your CPU doesn't support FBGEMM.", False),
        ("DNNL does not support bf16/f16 backward on the platform with avx2_vnni_2", False),
        ("lstm: expected a float32 input", True),
    ],
)
def test_an_eager_refusal_another_cpu_would_not_make_leaves_the_pattern_not_applicable(message: str, applies: bool) -> None:
    """Where eager's kernel refuses for want of this machine's instructions, what compiled code must
    do depends on the CPU: the derived sample is not applicable, never a finding another machine
    would not see. Any other refusal the compiled call must share."""
    make = corpus.CORRECT["sum_of_squares"].make
    checks = optests.check_op(_refuses_under_autocast_in_eager(message), [make()], modes=["static"], transforms="autocast")
    by = {c.key.transform: c.result for c in checks}
    assert by[""].passed
    if applies:
        assert by["autocast"].stage is optests.Stage.FORWARD, by["autocast"].message
        assert f"compiled call=no error, but expected raised RuntimeError: {message} (as eager)" in by["autocast"].message
    else:
        assert by["autocast"].outcome is optests.Outcome.NOT_APPLICABLE, by["autocast"].message
        assert f"eager call=raised RuntimeError: {message}" in by["autocast"].message


def _lower_with_onednn(x: torch.Tensor) -> torch.Tensor:
    """Returns bfloat16 under autocast on real tensors with oneDNN on (eager's kernel), float32
    without oneDNN and in the trace: ``nn.LSTM`` on a CPU whose oneDNN has bfloat16 kernels."""
    if type(x) is torch.Tensor and torch.is_autocast_enabled("cpu") and torch._C._get_mkldnn_enabled():
        return (x * 2).to(torch.bfloat16)
    return x * 2


def _needs_onednn(x: torch.Tensor) -> torch.Tensor:
    """Raises on real tensors without oneDNN: a call no user of a CPU with oneDNN makes."""
    if type(x) is torch.Tensor and not torch._C._get_mkldnn_enabled():
        raise RuntimeError("needs oneDNN")
    return x * 2


@pytest.mark.parametrize(
    ("func", "make", "applies"),
    [
        (_lower_with_onednn, corpus.CORRECT["sum_of_squares"].make, False),
        (corpus.CORRECT["linear"].func, corpus.CORRECT["linear"].make, True),
        (_needs_onednn, corpus.CORRECT["sum_of_squares"].make, True),
    ],
    ids=["onednn", "same", "refused-without"],
)
def test_an_eager_dtype_only_this_cpus_onednn_gives_leaves_the_pattern_not_applicable(
    monkeypatch: pytest.MonkeyPatch, func: Callable[..., Any], make: Callable[[], Any], applies: bool
) -> None:
    """On a CPU whose oneDNN computes in bfloat16, eager is called again with oneDNN off, as on a
    CPU without those kernels: where an output's dtype differs, what compiled code must return
    depends on the CPU, and the derived sample is not applicable (as where that CPU's oneDNN
    refuses), not a metadata finding. Where the dtypes agree, or the call without oneDNN raises
    (no reference), the sample is checked as before. On any CPU: the kernels are pretended."""
    monkeypatch.setattr("optests._check._orchestration._cpu_has_kernels", lambda: True)
    checks = optests.check_op(func, [make()], modes=["static"], transforms="autocast")
    result = {c.key.transform: c.result for c in checks}["autocast"]
    if applies:
        assert result.passed, result.message
    else:
        assert result.outcome is optests.Outcome.NOT_APPLICABLE, result.message
        assert result.message == (
            "autocast does not apply: eager out.dtype (oneDNN on)=bfloat16, but expected float32, as with oneDNN off: "
            "it depends on the CPU [_lower_with_onednn static float32 cpu sample 0 autocast: called under torch.autocast('cpu', "
            "dtype=bfloat16)]"
        )


def test_the_cpu_kernels_are_onednns_bfloat16_ones() -> None:
    from optests._check import _cpu_has_kernels

    expected = torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported()  # type: ignore[no-untyped-call]
    assert _cpu_has_kernels() is bool(expected)


_X86_WITH_ONEDNN = platform.machine().lower() in ("x86_64", "amd64") and torch.backends.mkldnn.is_available()  # type: ignore[no-untyped-call]


@pytest.mark.skipif(not _X86_WITH_ONEDNN, reason="nn.LSTM takes oneDNN's path on x86 CPUs with it; others are not known")
def test_lstm_under_autocast_is_not_applicable_on_any_x86_cpu() -> None:
    """``nn.LSTM`` under CPU autocast: eager returns bfloat16 where oneDNN has bfloat16 kernels
    (the trace records float32), and raises where it has none
    (``findings/aot_lstm_autocast_onednn_dtype.py``). Either way the sample is not applicable:
    the same verdict on every x86 CPU."""
    checks = optests.check_op("nn.LSTM", modes=["static"], transforms="autocast", select="first:1")
    derived = [c.result for c in checks if c.key.transform == "autocast"]
    assert derived and all(r.outcome is optests.Outcome.NOT_APPLICABLE for r in derived), [r.message for r in derived]


@torch.library.custom_op("optests_patterns::dense_backward", mutates_args=())
def _dense_backward(grad: torch.Tensor) -> torch.Tensor:
    if not grad.is_contiguous():
        raise RuntimeError("dense_backward: expected a contiguous gradient")
    return grad * 3


_dense_backward.register_fake(lambda grad: torch.empty_like(grad, memory_format=torch.contiguous_format))


@torch.library.custom_op("optests_patterns::times3_dense", mutates_args=())
def _times3_dense(x: torch.Tensor) -> torch.Tensor:
    return x * 3


_times3_dense.register_fake(lambda x: torch.empty_like(x))
_times3_dense.register_autograd(lambda ctx, grad: _dense_backward(grad))


@pytest.mark.parametrize("backend", ["aot_eager", "dynamo:eager"])
def test_an_eager_backward_that_refuses_a_tangent_layout_is_a_finding_whatever_compiled_does(backend: str) -> None:
    """Autograd takes a tangent of any layout. AOTAutograd restrides tangents, so its backward
    goes through where eager's raises; Dynamo's eager backend passes them on as they are, so both
    raise: a finding at ``backward`` either way (the op's bug)."""
    checks = optests.check_op(
        _times3_dense,
        [([torch.randn(3, 4, requires_grad=True)], {})],
        modes=["static"],
        transforms="tangents",
        backends=[backend],
    )
    by = {c.key.transform: c.result for c in checks}
    assert by["tangents-0"].passed  # random values, dense
    message = (
        "eager backward with random values in another layout as grad_outputs=raised RuntimeError: "
        "dense_backward: expected a contiguous gradient, but expected no error"  # what eager raised, said
    )
    assert by["tangents-1"].stage is optests.Stage.BACKWARD and by["tangents-1"].message.startswith(message)


def test_backward_patterns_that_retain_or_create_the_graph_turn_donated_buffers_off() -> None:
    """A compiled backward that frees a saved buffer refuses retain_graph and create_graph, and
    PyTorch's error tells the user to turn donated buffers off; ``amax`` in dynamic mode saves
    one. Left on, each output alone (0) and double backward (3) would fail for every such op."""
    checks = optests.check_op(
        lambda x: x.amax(-1), [([torch.randn(3, 5, requires_grad=True)], {})], modes=["dynamic"], transforms="backward"
    )
    assert {c.key.transform for c in checks} == {"", "backward-0", "backward-1", "backward-2", "backward-3"}
    assert {c.key.transform: c.result.message for c in checks if not c.result.passed} == {}


class _RefusesDuplicates:
    """A backend that raises where one tensor is passed twice, writing nothing (as AOTAutograd's
    deduplicated graph that lost its effect token does)."""

    nofunc = True
    same_random = True
    opinfo_test = "TestEagerFusionOpInfo"
    free_strides: frozenset[str] = frozenset()

    def compile(self, fn: Any, *, dynamic: bool, disable_functionalization: bool) -> Any:
        def run(tensors: list[torch.Tensor]) -> Any:
            if len({id(t) for t in tensors}) < len(tensors):
                raise TypeError("planted: one tensor passed twice")
            return fn(tensors)

        return run


def test_a_mutation_the_compiled_call_missed_by_raising_names_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """The overlapping ``out=`` (out-3) records the call's error for the refusals comparison,
    which comes after the mutations': the mutation that differs says which error left the input
    unwritten, so the finding does not read as a silent miss."""
    monkeypatch.setitem(_backends.BACKENDS, "refuses_duplicates", _RefusesDuplicates())

    def add_into(x: torch.Tensor, y: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        return torch.add(x, y, out=out)

    checks = optests.check_op(
        add_into, [([torch.randn(3), torch.randn(3)], {})], modes=["static"], transforms="out", backends=["refuses_duplicates"]
    )
    by = {c.key.transform: c.result for c in checks}
    assert {t: r.passed for t, r in by.items()} == {"": True, "out-0": True, "out-1": True, "out-2": True, "out-3": False}
    assert by["out-3"].stage is optests.Stage.MUTATION
    assert by["out-3"].detail == (
        "Each call ran on its own fresh copy of the inputs. In the compiled run, the call with out= an input raised "
        "TypeError: planted: one tensor passed twice; in eager it did not."
    )
