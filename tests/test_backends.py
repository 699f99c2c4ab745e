"""Backends: planted bugs that only a backend sees, flagged at the right stage; correct ops clean
under every backend; a graph break as a finding; the rules where a backend may differ from eager;
bad backend names refused in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from sweepdir import OptestsCli, install_sweep, run_inline

import optests
from optests import _backends, _opinfo, _settings
from optests._author import AuthorError

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
BIN = Path(sys.executable).parent


# ---------------------------------------------------------------------------------------------
# A custom op whose decomposition, registered into inductor's table, is wrong.


@torch.library.custom_op("optests_backends::double", mutates_args=())
def double(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@double.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def _double_backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    return grad * 2


double.register_autograd(_double_backward)


@pytest.fixture
def wrong_decomposition() -> Iterator[None]:
    """``double`` decomposed as ``x * 3`` in inductor's decomposition table, removed after."""
    from torch._inductor import decomposition

    op = torch.ops.optests_backends.double.default

    def triple(x: torch.Tensor) -> torch.Tensor:
        return x * 3

    decomposition.decompositions[op] = triple
    decomposition.fast_random_decomps.cache_clear()
    try:
        yield
    finally:
        del decomposition.decompositions[op]
        decomposition.fast_random_decomps.cache_clear()


def _samples() -> list[tuple[tuple[torch.Tensor, ...], dict[str, Any]]]:
    torch.manual_seed(0)
    return [((torch.randn(3, 4, requires_grad=True),), {}), ((torch.randn(5),), {})]


def test_a_wrong_decomposition_is_flagged_only_where_inductor_decomposes(wrong_decomposition: None) -> None:
    checks = optests.check_op(double, samples=_samples(), backends=["aot_eager", "aot_eager_decomp_partition"])
    by_backend: dict[str, set[tuple[str, str | None]]] = {}
    for c in checks:
        by_backend.setdefault(c.key.backend, set()).add((c.result.outcome.value, c.result.stage))
    assert by_backend["aot_eager"] <= {("passed", None), ("not_applicable", None)}, by_backend
    base = [c for c in checks if c.key.backend == "aot_eager_decomp_partition" and not c.key.transform]
    assert len(base) == 4 and all(c.result.stage == "forward" for c in base), [c.result.message for c in base]
    assert "@aot_eager_decomp_partition" in base[0].key.id


def test_without_the_wrong_decomposition_the_op_is_clean() -> None:
    checks = optests.check_op(double, samples=_samples(), backends=["aot_eager", "aot_eager_decomp_partition"])
    assert {c.result.outcome.value for c in checks} <= {"passed", "not_applicable"}


@pytest.mark.slow
def test_a_decomposition_that_calls_into_inductor_s_lowerings_runs_in_a_fresh_process() -> None:
    """max_pool2d_with_indices's decomposition asks ``torch._inductor.lowering`` whether to fall
    back: a process that has not imported inductor's lowerings (a sweep's child) must not see an
    AttributeError where torch's backend of that name compiles."""
    code = (
        "import optests, sys; "
        "checks = optests.check_op('nn.functional.max_pool2d', modes=['static'], transforms='none', "
        "backends=['aot_eager_decomp_partition'], select='first:1'); "
        "print([(c.id, c.result.outcome.value, c.result.message) for c in checks])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "'passed'" in done.stdout and "lowering" not in done.stdout, done.stdout


@pytest.mark.slow
def test_inductor_flags_the_wrong_decomposition(wrong_decomposition: None) -> None:
    from torch._functorch import config as functorch_config
    from torch._inductor import config

    # compiled without the caches: their keys need not see a decomposition planted in the table
    with config.patch(fx_graph_cache=False), functorch_config.patch(enable_autograd_cache=False):
        (check,) = optests.check_op(double, samples=_samples()[1:], backends=["inductor"], modes=["static"], transforms="none")
    assert (check.key.id, check.result.stage) == ("static-float32-cpu-optests_backends::double-sample0@inductor", "forward")


# ---------------------------------------------------------------------------------------------
# Correct ops under every backend kind.


@pytest.mark.parametrize("backend", ["aot_eager_decomp_partition", "dynamo:eager", "dynamo:aot_eager", "user_backends:faithful"])
def test_correct_ops_stay_clean(backend: str) -> None:
    for op in ("sin", "logaddexp2"):
        checks = optests.check_op(op, backends=[backend], transforms="none")
        assert checks and {c.result.outcome.value for c in checks} == {"passed"}, [c.result.message for c in checks]


@pytest.mark.slow
def test_a_correct_op_stays_clean_under_inductor() -> None:
    checks = optests.check_op("sin", backends=["inductor"], modes=["static"], transforms="none")
    assert checks and {c.result.outcome.value for c in checks} == {"passed"}, [c.result.message for c in checks]


# ---------------------------------------------------------------------------------------------
# Dynamo: a graph break.


def prints(x: torch.Tensor) -> torch.Tensor:
    print("a graph break")
    return x.sin()


def test_a_graph_break_is_a_trace_finding() -> None:
    (check,) = optests.check_op(
        prints, samples=[((torch.ones(3),), {})], backends=["dynamo:eager"], modes=["static"], transforms="none"
    )
    assert check.result.stage == "trace"
    assert "GraphBreak: graph break (fullgraph=True)" in check.result.message


def relu(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x)


def test_what_a_backend_raised_while_compiling_is_in_the_finding_and_its_record() -> None:
    """torch's ``BackendCompilerFailed`` says ``backend='NAME' raised:`` on its first line and
    what was raised on the next: the finding's one line, and the record, keep both."""
    cases = [
        (relu, "dynamo:relu_compile_error_TESTING_ONLY", "backend='relu_compile_error_TESTING_ONLY' raised ReluCompileError"),
        (torch.cos, "user_backends:refuses_cos", "backend='refuses_cos' raised NotImplementedError: cos is not supported here"),
    ]
    for func, backend, said in cases:
        (check,) = optests.check_op(
            func, samples=[((torch.ones(3),), {})], backends=[backend], modes=["static"], transforms="none"
        )
        expected = f"compiled call=raised BackendCompilerFailed: {said}, but expected no error (eager succeeded)"
        assert check.result.stage == "trace"
        assert check.result.message.startswith(expected + " ["), check.result.message
        assert check.record().message == check.result.message


# ---------------------------------------------------------------------------------------------
# A user's backend, MODULE:ATTRIBUTE.


def test_a_miscompiling_user_backend_fails_and_its_repro_reproduces_it(tmp_path: Path, optests_cli: OptestsCli) -> None:
    done = optests_cli(
        ["check", "sin", "-v", "--backends", "tests.user_backends:sin_as_cos", "--transforms", "none", "--modes", "static"], ROOT
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "[forward] out=max abs diff" in done.stdout
    script = ROOT / "optests-repro" / "sin-static-float32-sample0_tests_user_backends_sin_as_cos.py"
    assert f"repro: python {script.relative_to(ROOT)}" in done.stdout
    again = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, check=False)
    assert again.returncode == 1 and "REPRODUCED" in again.stdout, again.stdout + again.stderr


def test_a_faithful_user_backend_passes(optests_cli: OptestsCli) -> None:
    done = optests_cli(["check", "sin", "--backends", "tests.user_backends:faithful", "--transforms", "none"], ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_faithful_user_backend_passes_under_every_transform_and_call_pattern(optests_cli: OptestsCli) -> None:
    """The defaults of ``optests check``: every transform and call pattern. Dynamo's documented
    graph breaks for an ``out=`` tensor to resize or a non-dense one (the same for every op) make
    those samples not applicable, not findings."""
    done = optests_cli(["check", "sin", "-v", "--backends", "tests.user_backends:faithful", "--modes", "static"], ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "N/A   static         float32  sample 0 out-1" in done.stdout
    assert "N/A   static         float32  sample 0 out-2" in done.stdout


def test_a_finding_s_repro_reruns_it_under_its_backend() -> None:
    result = optests.run_check(
        torch.sin, [torch.randn(4, requires_grad=True)], {}, dynamic=False, backend="user_backends:sin_as_cos"
    )
    assert result.stage == "forward" and result.repro is not None
    assert "run_check(func, args, kwargs, dynamic=False, backend='user_backends:sin_as_cos')" in result.repro
    with pytest.raises(optests.ForwardMismatch):
        exec(compile(result.repro, "<repro>", "exec"), {})
    passing = optests.run_check(
        torch.sin, [torch.randn(4, requires_grad=True)], {}, dynamic=False, backend="user_backends:faithful"
    )
    assert passing.outcome.value == "passed"


BAD = {
    "tests.user_backends:not_callable": "backend 'tests.user_backends:not_callable': int is not callable, but expected "
    "a torch.compile backend (gm, example_inputs) -> callable",
    "tests.user_backends:nope": "backend 'tests.user_backends:nope': module tests.user_backends has no attribute 'nope'",
    "nosuch.mod:x": "backend 'nosuch.mod:x': module nosuch.mod cannot be imported (ModuleNotFoundError: No module named 'nosuch')",
    "dynamo:nosuch": "backend 'dynamo:nosuch': 'nosuch' is not a Dynamo backend; known: ",
    "nosuch": "unknown backend 'nosuch'; valid: aot_eager, aot_eager_decomp_partition, inductor, dynamo:NAME or MODULE:ATTRIBUTE",
    " , ": "none given; valid: aot_eager, aot_eager_decomp_partition, inductor, dynamo:NAME or MODULE:ATTRIBUTE",
}


def test_a_bad_backend_is_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch, optests_cli: OptestsCli) -> None:
    from optests._author import backends_of

    monkeypatch.syspath_prepend(str(ROOT))  # tests.user_backends, as optests check finds it from the root
    for spec, message in BAD.items():
        with pytest.raises(AuthorError) as raised:
            backends_of(spec)
        assert str(raised.value).startswith(f"backends: {message}")
    for spec in ("tests.user_backends:not_callable", "dynamo:nosuch"):  # the command says the same, in one line
        done = optests_cli(["check", "sin", "--backends", spec, "--transforms", "none"], ROOT)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.startswith(f"optests check: error: backends: {BAD[spec]}")
        assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_bad_backend_is_a_usage_error_in_the_sweep(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    install_sweep(pytester.path)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # tests.user_backends is importable from the root
    for spec in ("tests.user_backends:not_callable", "nosuch.mod:x", " , "):
        result = run_inline(pytester, "-p", "no:cacheprovider", f"--optests-backends={spec}", str(pytester.path))
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"ERROR: --optests-backends: {BAD[spec]}"])


# ---------------------------------------------------------------------------------------------
# -nofunc modes under a backend that compiles through torch.compile: refused up front.

NOFUNC = (
    "mode 'static-nofunc' with backend 'inductor': it cannot compile without functionalization "
    "(torch.compile has no such switch); the -nofunc modes need aot_eager, aot_eager_decomp_partition"
)


def test_nofunc_modes_are_refused_under_torch_compile_backends(optests_cli: OptestsCli) -> None:
    with pytest.raises(AuthorError) as raised:
        optests.check_op("sin", modes=["static", "static-nofunc"], backends=["aot_eager", "inductor"])
    assert str(raised.value) == f"modes: {NOFUNC}"
    with pytest.raises(_settings.SettingError) as refused:
        values = {"modes": "static-nofunc", "backends": "inductor"}
        _settings.parse(lambda name: values.get(name), lambda name: "")
    assert str(refused.value) == f"--optests-modes, --optests-backends: {NOFUNC}"
    done = optests_cli(["check", "sin", "--backends", "inductor", "--modes", "static-nofunc"], ROOT)
    assert (done.returncode, done.stderr.strip()) == (2, f"optests check: error: modes: {NOFUNC}")
    # a backend that can: the -nofunc modes run
    checks = optests.check_op("sin", modes=["static-nofunc"], backends=["aot_eager_decomp_partition"], transforms="none")
    assert {c.result.outcome.value for c in checks} == {"passed"}


# ---------------------------------------------------------------------------------------------
# Where a backend may differ from eager.


def draws(x: torch.Tensor) -> torch.Tensor:
    return x + torch.rand_like(x)


def fills(x: torch.Tensor) -> torch.Tensor:
    return x.uniform_() * 2


def test_values_of_a_random_call_are_not_compared_where_the_backend_draws_otherwise() -> None:
    sample: list[tuple[tuple[torch.Tensor, ...], dict[str, Any]]] = [((torch.ones(3, 4),), {})]
    (check,) = optests.check_op(draws, samples=sample, backends=["user_backends:reseeded"], modes=["static"], transforms="none")
    assert check.result.outcome.value == "passed"
    assert check.result.notes[0].startswith("values not compared: the call draws random numbers (aten.rand_like.default")
    # an input it fills in place: its values are not compared, that it is mutated is
    (filled,) = optests.check_op(
        fills, samples=[((torch.ones(3, 4),), {})], backends=["user_backends:reseeded"], modes=["static"], transforms="none"
    )
    assert filled.result.outcome.value == "passed", filled.result.message
    assert filled.result.notes[0].startswith("values not compared: the call draws random numbers (aten.uniform_.default")
    # a call that draws none is compared under it
    (sin,) = optests.check_op("sin", backends=["user_backends:reseeded"], modes=["static"], transforms="none")
    assert (sin.result.outcome.value, sin.result.notes) == ("passed", ())
    # and aot_eager draws as eager does: compared, and equal
    (same,) = optests.check_op(draws, samples=sample, modes=["static"], transforms="none")
    assert (same.result.outcome.value, same.result.notes) == ("passed", ())


class _Contiguous:
    """A backend whose outputs are contiguous, whatever eager's strides."""

    nofunc = True
    same_random = True
    opinfo_test = "TestEagerFusionOpInfo"

    def __init__(self, free_strides: frozenset[str]) -> None:
        self.free_strides = free_strides

    def compile(self, fn: Any, *, dynamic: bool, disable_functionalization: bool) -> Any:
        return lambda tensors: fn(tensors).contiguous()


def transposed_double(x: torch.Tensor) -> torch.Tensor:
    return x.t() * 2


def test_strides_must_match_except_for_an_op_the_backend_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    sample: list[tuple[tuple[torch.Tensor, ...], dict[str, Any]]] = [((torch.randn(3, 4),), {})]
    monkeypatch.setitem(_backends.BACKENDS, "contiguous", _Contiguous(frozenset()))
    (strict,) = optests.check_op(transposed_double, samples=sample, backends=["contiguous"], modes=["static"], transforms="none")
    assert strict.result.stage == "metadata" and ".stride()" in strict.result.message
    monkeypatch.setitem(_backends.BACKENDS, "contiguous_free", _Contiguous(frozenset({strict.key.op_id})))
    (free,) = optests.check_op(
        transposed_double, samples=sample, backends=["contiguous_free"], modes=["static"], transforms="none"
    )
    assert free.result.outcome.value == "passed"


def test_inductor_reads_the_decorations_aimed_at_the_in_tree_inductor_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """addmv raises float16's tolerance on CPU for ``TestInductorOpInfo`` only."""
    addmv = next(r for r in _opinfo.all_ops(("op_db",)) if r.id == "addmv")
    op = _opinfo.opinfo(addmv)
    assert _backends.get_backend("inductor").opinfo_test == "TestInductorOpInfo"
    assert _backends.get_backend("dynamo:inductor").opinfo_test == "TestInductorOpInfo"
    assert _backends.get_backend("dynamo:eager").opinfo_test == "TestEagerFusionOpInfo"
    assert _opinfo.decorations(op, False, "cpu", torch.float16).tolerance == ""
    inductor = _opinfo.decorations(op, False, "cpu", torch.float16, "TestInductorOpInfo")
    assert inductor.tolerance == "OpInfo tolerance override(atol=1e-05, rtol=0.003)"

    class Eager(_Contiguous):
        opinfo_test = "TestInductorOpInfo"

        def compile(self, fn: Any, *, dynamic: bool, disable_functionalization: bool) -> Any:
            return fn

    monkeypatch.setitem(_backends.BACKENDS, "as_inductor", Eager(frozenset()))
    checks = optests.check_op(
        "addmv", dtypes=["float16"], backends=["aot_eager", "as_inductor"], modes=["static"], transforms="none"
    )
    override = "OpInfo tolerance override(atol=1e-05, rtol=0.003)"
    assert checks and all((override in c.record().tolerance) == (c.key.backend == "as_inductor") for c in checks)
    assert {c.key.backend for c in checks} == {"aot_eager", "as_inductor"}


def test_register_refuses_a_backend_without_the_protocol_s_attributes() -> None:
    class Bare:
        def compile(self, fn: Any, *, dynamic: bool, disable_functionalization: bool) -> Any:
            return fn

    with pytest.raises(ValueError, match=r"^backend 'bare' has no nofunc, same_random, opinfo_test, free_strides, but expected"):
        _backends.register("bare", Bare())  # type: ignore[arg-type]


def test_register_refuses_a_backend_standing_for_an_unknown_in_tree_test() -> None:
    class Elsewhere(_Contiguous):
        opinfo_test = "TestNoSuchOpInfo"

        def compile(self, fn: Any, *, dynamic: bool, disable_functionalization: bool) -> Any:
            return fn

    with pytest.raises(ValueError) as raised:
        _backends.register("elsewhere", Elsewhere(frozenset()))
    assert str(raised.value) == (
        "backend 'elsewhere': opinfo_test='TestNoSuchOpInfo', but expected one of TestEagerFusionOpInfo, TestInductorOpInfo"
    )
    assert "elsewhere" not in _backends.BACKENDS


# ---------------------------------------------------------------------------------------------
# The registry: each backend's entries are judged in its own runs only.

_SIN_XFAIL = {
    "op": "sin", "variant": "", "mode": "static", "dtype": "float32", "device": "cpu",
    "status": "xfail", "stage": "forward", "reason": "planted: sin passes under aot_eager", "samples": "0",
}  # fmt: skip


@pytest.mark.slow
def test_registry_entries_are_judged_only_in_their_backend_s_runs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_sweep(pytester.path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    registry = pytester.path / "expected_failures.json"
    registry.write_text(json.dumps({"schema_version": 4, "entries": [_SIN_XFAIL]}, indent=2, sort_keys=True) + "\n")
    sweep = ["-p", "no:cacheprovider", "--optests-ops=sin", "--optests-modes=static", "--optests-strict-registry"]

    # a miscompiling backend's findings, accepted: aot_eager's entry is left byte for byte
    accepted = run_inline(pytester, *sweep, "--optests-backends=user_backends:sin_as_cos", "--optests-accept")
    assert accepted.ret == pytest.ExitCode.OK, accepted.stdout.str()
    entries = json.loads(registry.read_text())["entries"]
    aot = [e for e in entries if "backend" not in e]
    assert json.dumps(aot, sort_keys=True) == json.dumps([_SIN_XFAIL], sort_keys=True)
    (theirs,) = [e for e in entries if "backend" in e]
    assert (theirs["backend"], theirs["stage"]) == ("user_backends:sin_as_cos", "forward")

    # aot_eager's run: its own entry judged (sin passes: an unexpected pass), the other backend's not
    aot_run = run_inline(pytester, *sweep, "--optests-results=a.json")
    records = json.loads((pytester.path / "a.json").read_text())["samples"]
    assert {r["id"]: r["verdict"] for r in records} == {"static-float32-cpu-sin-sample0": "unexpected_pass"}
    assert "stale" not in aot_run.stdout.str().lower()

    # the faithful backend's run: neither entry judged against it (sin passes, as expected)
    faithful = run_inline(pytester, *sweep, "--optests-backends=user_backends:faithful", "--optests-results=f.json")
    assert faithful.ret == pytest.ExitCode.OK, faithful.stdout.str()
    records = json.loads((pytester.path / "f.json").read_text())["samples"]
    assert {r["id"]: r["verdict"] for r in records} == {"static-float32-cpu-sin-sample0@user_backends:faithful": "passed"}


@pytest.mark.slow
def test_a_warm_inductor_cache_gives_the_same_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inductor's FX graph cache, in a fresh directory shared by two calls: the first check fills
    it, the second (in its own forked child) finds it warm; its record is the first's."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    sample: list[tuple[tuple[torch.Tensor, ...], dict[str, Any]]] = [((torch.randn(3, 4, requires_grad=True),), {})]

    def records() -> list[tuple[str, str, str | None, str, str]]:
        checks = optests.check_op(
            transposed_double, samples=sample, backends=["inductor"], modes=["static"], transforms="none", compile_cache="shared"
        )
        return [(c.key.id, c.result.outcome.value, c.result.stage, c.result.message, c.record().tolerance) for c in checks]

    cold = records()
    assert any((tmp_path / "inductor").rglob("*")), "inductor wrote no cache"
    assert records() == cold
    assert [r[1] for r in cold] == ["passed"]


# ---------------------------------------------------------------------------------------------
# Cost: checking fewer samples per op, under the full sweep's ids.


def test_a_selection_parses_and_picks_by_index() -> None:
    from optests._pipeline import Selection

    assert [str(Selection.parse(v)) for v in ("all", "first:3", " signature ")] == ["all", "first:3", "signature"]
    for bad in ("first", "first:0", "first:x", "some", "first:٣"):
        with pytest.raises(ValueError, match=r"but expected one of all, first:N, signature \(N a whole number >= 1\)$"):
            Selection.parse(bad)
    a, b, c = torch.zeros(3), torch.ones(3), torch.zeros(5)
    samples: list[tuple[Any, dict[str, Any]]] = [((a,), {}), ((b,), {}), ((c,), {}), ((a,), {"alpha": 2}), ((b,), {"alpha": 2})]
    assert Selection.parse("signature").indices(samples) == [0, 2, 3]
    assert Selection.parse("first:2").indices(samples) == [0, 1]
    assert Selection.parse("first:9").indices(samples) == [0, 1, 2, 3, 4]


def test_a_module_s_samples_differ_by_signature_in_their_constructor_s_arguments() -> None:
    """Two samples of one module whose inputs and parameters look alike, built with another stride:
    ``signature`` checks both."""
    from optests._modules import ModuleCall
    from optests._pipeline import Selection

    weight, x = torch.zeros(1, 1, 3, 3), torch.zeros(1, 1, 8, 8)
    samples: list[tuple[Any, dict[str, Any]]] = [(({"weight": weight}, {}, x), {})] * 3
    funcs = [ModuleCall(torch.nn.Conv2d(1, 1, 3, stride=s, bias=False)) for s in (1, 2, 1)]
    assert Selection.parse("signature").indices(samples, funcs) == [0, 1]
    assert Selection.parse("signature").indices(samples) == [0]
    assert Selection.parse("signature").indices(samples, [torch.sin] * 3) == [0]


def test_check_op_checks_the_selected_samples_under_their_own_numbers(optests_cli: OptestsCli) -> None:
    samples: list[tuple[tuple[torch.Tensor, ...], dict[str, Any]]] = [
        ((torch.zeros(3),), {}),
        ((torch.ones(3),), {}),
        ((torch.ones(2, 2),), {}),
    ]
    picked = optests.check_op(torch.sin, samples=samples, modes=["static"], transforms="none", select="signature")
    assert [c.key.sample for c in picked] == [0, 2]
    with pytest.raises(AuthorError, match=r"^select='first:0', but expected one of all, first:N, signature"):
        optests.check_op(torch.sin, samples=samples, select="first:0")
    done = optests_cli(["check", "mul", "--select", "first:2", "--modes", "static", "--transforms", "none"], ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mul: 2 samples" in done.stdout
    bad = optests_cli(["check", "mul", "--select", "most"], ROOT)
    assert (bad.returncode, bad.stderr.strip()) == (
        2,
        "optests check: error: select='most', but expected one of all, first:N, signature (N a whole number >= 1)",
    )


def test_the_sweep_checks_the_selected_samples_and_finds_no_stale_entry(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_sweep(pytester.path)
    entry = {
        "op": "mul", "variant": "", "mode": "static", "dtype": "float32", "device": "cpu",
        "status": "xfail", "stage": "forward", "reason": "planted: a sample this selection does not check", "samples": "5",
    }  # fmt: skip
    registry = pytester.path / "expected_failures.json"
    registry.write_text(json.dumps({"schema_version": 4, "entries": [entry]}, indent=2, sort_keys=True) + "\n")
    sweep = ["-p", "no:cacheprovider", "--optests-ops=mul", "--optests-modes=static", "--optests-strict-registry"]
    result = run_inline(pytester, *sweep, "--optests-select=first:2", "--optests-results=r.json", "--optests-accept")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    ids = [r["id"] for r in json.loads((pytester.path / "r.json").read_text())["samples"]]
    assert ids == ["static-float32-cpu-mul-sample0", "static-float32-cpu-mul-sample1"]
    # the unchecked sample's entry is neither stale nor rewritten
    assert json.loads(registry.read_text())["entries"] == [entry]
    bad = run_inline(pytester, *sweep, "--optests-select=first:none")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["ERROR: --optests-select='first:none', but expected one of all, first:N, signature*"])


def chain(x: torch.Tensor) -> torch.Tensor:
    for _ in range(6):
        x = x * 1.37 + 0.11
    return x


def test_low_precision_is_judged_against_a_higher_precision_reference() -> None:
    """A backend that computes float16 in float32 (as inductor does) differs from eager beyond
    float16's tolerance, but is nearer the float64 result than eager: noted, no finding."""
    torch.manual_seed(0)
    x = torch.rand(64, dtype=torch.float16)
    options: dict[str, Any] = {"dynamic": False, "backend": "user_backends:upcast", "check_gradients": False}
    judged = optests.run_check(chain, [x], {}, **options)
    assert judged.outcome.value == "passed"
    assert judged.notes[0].startswith("out: rounding: compiled is")
    unjudged = optests.run_check(chain, [x], {}, float64_reference=False, **options)
    assert unjudged.stage == "forward"


def test_the_sweep_skips_what_the_backend_s_in_tree_test_skips() -> None:
    """The sweep reads the OpInfo's skips for the in-tree test the backend stands for, as
    ``optests check`` does (``TestInductorOpInfo`` under inductor)."""
    from optests._backends import get_backend
    from optests._case import Case
    from optests._execute import execute

    ref = next(r for r in _opinfo.all_ops(("op_db",)) if r.id == "nn.functional.linear_cross_entropy.chunked")
    op = _opinfo.opinfo(ref)
    assert _opinfo.decorations(op, False, "cpu", torch.float32, get_backend("aot_eager").opinfo_test).skip_message == ""
    record, _ = execute(Case.of(ref, "static", "float32", "cpu", 0, backend="inductor"))  # skipped before it compiles
    assert record.outcome.value == "skipped"
    assert record.message.startswith("the OpInfo's decorations skip TestInductorOpInfo here:"), record.message
