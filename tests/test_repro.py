"""Standalone repro scripts: they run the check's own code, without optests, and find what it finds.

Every script is written here and then run in one fresh interpreter where optests cannot be
imported (runpy, one after another: a torch import per script would cost seconds each).
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from corpus import BUGS, CORRECT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.testing._internal import hop_db

import optests
from optests import _check, _repro

TESTS = Path(__file__).resolve().parent

#: Describes the tensors of (args, kwargs) as a script rebuilt them; defined here and in the runner.
_DESCRIBE = """
def describe(values):
    def leaves(v):
        if type(v) in (list, tuple):
            for x in v:
                yield from leaves(x)
        elif type(v) is dict:
            for x in v.values():
                yield from leaves(x)
        else:
            yield v

    tensors = [t for t in leaves(values) if isinstance(t, torch.Tensor)]
    ptrs = [t.untyped_storage().data_ptr() for t in tensors]
    return [
        {
            "size": list(t.shape),
            "stride": list(t.stride()),
            "offset": t.storage_offset(),
            "dtype": str(t.dtype),
            "requires_grad": t.requires_grad,
            "leaf": t.is_leaf,
            "view": t._is_view(),
            "values": t.detach().tolist(),
            "same_object_as": next(j for j, u in enumerate(tensors) if u is t),
            "same_storage_as": ptrs.index(ptrs[i]),
        }
        for i, t in enumerate(tensors)
    ]
"""

#: Runs scripts in one interpreter that cannot import optests; prints {path: [exit status, stdout, inputs]}.
_RUNNER = (
    """
import contextlib, io, json, runpy, sys

sys.modules["optests"] = None  # a repro script must not need optests
import torch
"""
    + _DESCRIBE
    + """
results = {}
for path in sys.argv[1:]:
    namespace = runpy.run_path(path, run_name="repro")  # definitions only: what the inputs are
    out, status = io.StringIO(), 0
    with contextlib.redirect_stdout(out):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as e:
            status = e.code
    results[path] = [status, out.getvalue(), describe([namespace["args"], namespace["kwargs"]])]
print(json.dumps(results))
"""
)

_namespace: dict[str, Any] = {"torch": torch}
exec(_DESCRIBE, _namespace)
describe: Callable[[Any], Any] = _namespace["describe"]


def _rebuild_inputs() -> tuple[list[Any], dict[str, Any]]:
    """Inputs that only an exact rebuild keeps: views of one base (one with a storage offset,
    one transposed, overlapping), a transposed leaf that requires grad, one tensor passed
    twice, a non-leaf view, and a view of a storage too large to write out."""
    torch.manual_seed(0)
    base = torch.randn(20)
    a = base[2:14].view(3, 4)
    b = base[8:20].view(4, 3).t()
    t = torch.randn(4, 3).t().requires_grad_()
    x = torch.randn(3, 4, requires_grad=True)
    g = torch.randn(12, requires_grad=True)
    c = g.view(3, 4)
    big = torch.randn(30, 20)[1:4, 2:6]
    return [[a, b, t, x, x, c, big]], {"dim": 1}


def _bug_options(name: str) -> dict[str, Any]:
    return {"dynamic": False, **BUGS[name][3]}


def _donor_options() -> dict[str, Any]:
    torch.manual_seed(1)
    return {**_bug_options("memoized_scale"), "randomized_sample": ([torch.randn(3, 4, requires_grad=True)], {})}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every script written and run once: name -> (finding or None, script text, exit status, stdout, inputs)."""
    directory = tmp_path_factory.mktemp("repro")
    written: dict[str, tuple[optests.Finding | None, Path]] = {}

    def write(name: str, func: Callable[..., Any], make: Callable[[], Any], options: dict[str, Any], check: bool) -> None:
        finding = None
        if check:  # what the check finds, to compare with what its script finds
            args, kwargs = make()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # as optests check runs it, and so the script
                result = optests.run_check(func, args, kwargs, **options)
            assert result.error is not None, name
            finding, options = result.error, dict(result.error.options or {})
        summary = f"[{finding.stage}] {finding.summary}" if finding is not None else "(none)"
        path = _repro.write_standalone(directory, name, func, make(), options, summary=summary)
        written[name] = (finding, path)

    for name, (func, make, _, _) in BUGS.items():
        write(name, func, make, _bug_options(name), check=True)
    write("memoized_scale_donor", BUGS["memoized_scale"][0], BUGS["memoized_scale"][1], _donor_options(), check=True)
    # as `optests check` gets it: the finding (and its options) crossed from the runner's child
    func, make = BUGS["memoized_scale"][:2]
    (checked,) = optests.check_op(func, samples=[make()], modes=["static"], transforms="none")
    finding = checked.result.error
    assert finding is not None and finding.options is not None
    path = _repro.write_standalone(directory, "via_check_op", func, checked.inputs, finding.options, summary=finding.summary)
    written["memoized_scale_via_check_op"] = (finding, path)
    for name, (func, make, options) in CORRECT.items():
        write(f"correct_{name}", func, make, {"dynamic": False, **options}, check=False)
    write("rebuild", torch.stack, _rebuild_inputs, {"dynamic": True, "try_check_data_specialization": True}, check=False)

    runner = directory / "runner.py"
    runner.write_text(_RUNNER)
    paths = [str(p) for _, p in written.values()]
    done = subprocess.run(
        [sys.executable, str(runner), *paths],
        cwd=directory,
        env={**os.environ, "PYTHONPATH": str(TESTS)},
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.splitlines()[-1])
    return {name: (finding, path.read_text(), *results[str(path)]) for name, (finding, path) in written.items()}


@pytest.mark.parametrize("name", [*BUGS, "memoized_scale_donor", "memoized_scale_via_check_op"])
def test_every_planted_bug_reproduces_through_its_script(runs: dict[str, Any], name: str) -> None:
    finding, _, status, out, _ = runs[name]
    lines = out.splitlines()
    assert status == 1 and lines[-1] == "REPRODUCED", out
    assert lines[0].startswith(f"[{finding.stage}] {finding.what}="), out
    if name != "stateful_backward":  # its backward scales by a global call count: the numbers differ
        assert out == f"[{finding.stage}] {finding.summary}\n{finding.detail}\nREPRODUCED\n".replace("\n\n", "\n")


def test_a_randomized_finding_reruns_on_the_same_random_data(runs: dict[str, Any]) -> None:
    for name, data in [("memoized_scale", "uniform [0, 1) noise"), ("memoized_scale_donor", "the sample drawn again")]:
        finding, _, _, out, _ = runs[name]
        assert finding.stage == "randomized"
        assert f"on randomized inputs: {data}" in out, out


@pytest.mark.parametrize("name", list(CORRECT))
def test_a_correct_op_s_script_says_nothing_differs(runs: dict[str, Any], name: str) -> None:
    _, _, status, out, _ = runs[f"correct_{name}"]
    assert (status, out.splitlines()[-1:]) == (0, ["not reproduced: nothing differs between eager and compiled"]), out


def test_the_script_rebuilds_the_inputs_exactly(runs: dict[str, Any]) -> None:
    _, text, status, out, rebuilt = runs["rebuild"]
    assert status == 0, out
    assert rebuilt == describe(list(_rebuild_inputs()))
    shapes = [(d["same_object_as"], d["same_storage_as"], d["view"], d["leaf"]) for d in rebuilt]
    # (object, storage, view, leaf): a and b views of one base; t; x twice; c a non-leaf view; big
    expected = [(0, 0, True, True), (1, 0, True, True), (2, 2, True, True), (3, 3, False, True), (3, 3, False, True)]
    assert shapes == [*expected, (5, 5, True, False), (6, 6, True, True)]
    assert "SAVED = torch.load(" in text  # the 600-element storage of the last one


def test_the_script_carries_the_check_s_own_code_and_no_optests_import(runs: dict[str, Any]) -> None:
    text = runs["fake_wrong_shape"][1]
    for func in (_check._check_call, _check._check_once, _check._compare, _check._copy, _check._TensorCall):
        assert inspect.getsource(func) in text
    modules = [
        name
        for node in ast.walk(ast.parse(text))
        for name in (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
    ]
    assert "corpus" in modules and not [m for m in modules if m.split(".")[0] == "optests"]


def test_the_script_compares_with_the_check_s_tolerances() -> None:
    options = {"dynamic": False, "assert_equals_fn": _check.tolerant(torch.float32, 5e-3, 1e-4)}
    text, saved = _repro.standalone(torch.sin, [torch.ones(2)], {}, options, summary="", script_name="s.py", saved_name="s.pt")
    assert "assert_equals_fn=functools.partial(assert_close_equal_nan, atol=0.005, rtol=0.0001)," in text
    assert "import functools" in text and not saved


def test_a_finding_s_few_line_repro_rebuilds_the_inputs_alike() -> None:
    """``Finding.repro`` has no file beside it: the large storage gets a random stand-in, the rest is exact."""
    namespace: dict[str, Any] = {}
    exec("import torch\n" + _repro.setup_source(torch.stack, *_rebuild_inputs()), namespace)
    rebuilt, original = describe([namespace["args"], namespace["kwargs"]]), describe(list(_rebuild_inputs()))
    assert rebuilt[:-1] == original[:-1]
    assert {**rebuilt[-1], "values": None} == {**original[-1], "values": None}


@pytest.mark.parametrize(
    ("func", "imports"),
    [
        (torch.sin, []),
        (torch.nn.functional.relu, ["import torch.nn.functional"]),
        (hop_db.simple_map, ["import torch.testing._internal.hop_db"]),
        (torch.Tensor.mul_, []),  # an OpInfo's in-place variant: a method of Tensor
    ],
)
def test_a_script_imports_the_module_that_defines_the_op(func: Callable[..., Any], imports: list[str]) -> None:
    """hop_db's functions are not reachable after `import torch` alone: a script that only named
    torch.testing._internal.hop_db.simple_map failed with AttributeError before it checked anything."""
    lines, expression = _repro.func_source(func)
    assert lines == imports
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(["import torch", *lines, f"print({expression} is not None)"])],
        capture_output=True,
        text=True,
    )
    assert done.stdout == "True\n", done.stderr


def test_an_inplace_1_finding_s_script_reproduces_it_on_a_view_of_a_non_leaf(tmp_path: Path) -> None:
    """``mul``'s in-place variant on a view of a non-leaf (``inplace-1``) fails at backward on 2.13
    (the min-cut partitioner saves the mutated input: findings/aot_mincut_saves_mutated_input.py).
    Its script names ``torch.Tensor.mul_`` and rebuilds the view's base as a non-leaf, so that eager
    accepts the in-place op there too: it reproduces the backward finding, not an eager failure."""
    args = ["check", "mul", "--transforms", "inplace", "--modes", "static", "--select", "first:1", "-v"]
    done = subprocess.run([sys.executable, "-m", "optests.cli", *args], capture_output=True, text=True, cwd=tmp_path)
    if "inplace-1 [backward]" not in done.stdout:
        pytest.skip(f"mul's inplace-1 does not fail at backward on torch {torch.__version__}: {done.stdout[-300:]}")
    script = tmp_path / "optests-repro" / "mul-static-float32-sample0-inplace-1.py"
    assert "func = torch.Tensor.mul_" in script.read_text()
    ran = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert "[backward]" in ran.stdout and "REPRODUCED" in ran.stdout and "[eager]" not in ran.stdout, ran.stdout


#: Text that broke a script where it was pasted as code: escapes a docstring reads (``\x``, ``\N{``,
#: ``\u``), quotes that end one, line breaks that end a comment, a NUL and a lone surrogate that no
#: source may hold, an encoding declaration.
_HOSTILE = [
    "max \\x is bad",
    "\\N{ and \\u12 and \\U",
    '"""',
    "'''\n\"\"\"\\",
    "a\nimport os; os._exit(3)",
    "a\rb\r\nc\x0bd\x0ce\x1cf\x85g\u2028h",
    "nul \x00 here",
    "lone \ud800 surrogate",
    "# -*- coding: latin-1 -*-",
    "",
    "\n\n",
    "tab\tend ",
]
_TEXT = st.one_of(st.sampled_from(_HOSTILE), st.text(st.characters(exclude_categories=())), st.text())


def _compiles(text: str, path: Path | None = None) -> None:
    compile(text, "script.py", "exec")
    if path is not None:  # as `python script.py` reads it: bytes, in the encoding the file declares
        compile(path.read_bytes(), str(path), "exec")


@given(summary=_TEXT, name=_TEXT)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_script_compiles_whatever_the_finding_says(tmp_path: Path, summary: str, name: str) -> None:
    """The finding's text (and the names the script mentions) are comments, escaped where a
    comment could not hold them: the script is Python for any text."""
    text, _ = _repro.standalone(
        torch.sin, [torch.ones(2)], {}, {"dynamic": False}, summary=summary, script_name=name, saved_name=name
    )
    _compiles(text)
    path = _repro.write_standalone(tmp_path, "repro", torch.sin, ([torch.ones(2)], {}), {"dynamic": False}, summary=summary)
    _compiles(path.read_text(encoding="utf-8"), path)


@given(text=_TEXT)
@settings(max_examples=25, deadline=None)
def test_a_script_compiles_whatever_the_names_and_reprs_of_what_it_mentions(text: str) -> None:
    """An argument with no literal, whose type's name and repr are any text, and a callable
    whose name is any text: the lines that mention them are Python."""

    def op(*args: Any) -> Any:
        return args[0]

    op.__qualname__ = op.__name__ = text or "x"
    op.__module__ = text
    type_name = "".join(c for c in text if c != "\x00" and not 0xD800 <= ord(c) <= 0xDFFF)  # what type() takes
    leaf = type(type_name or "x", (), {"__repr__": lambda self: text})()
    args = [torch.ones(2), leaf]
    _compiles(_repro.setup_source(op, args, {}))
    _compiles(_repro.render(op, args, {}, {"dynamic": False}))
    options = {"dynamic": False, "assert_equals_fn": op}
    standalone, _ = _repro.standalone(op, args, {}, options, summary=text, script_name="s.py", saved_name="s.pt")
    _compiles(standalone)


def test_a_finding_s_repro_names_an_op_of_any_name_in_a_comment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The few-line repro rebuilds a database's sample by index, and names the op in a comment:
    an op's name may hold a line break (or a NUL), which a comment must not end at."""
    from optests import _opinfo

    name = "odd\nimport os; os._exit(3)\x00"
    (tmp_path / "odd_named_ops.py").write_text(
        "import torch\n"
        "from torch.testing._internal.common_dtype import floating_types\n"
        "from torch.testing._internal.opinfo.core import OpInfo, SampleInput\n"
        "def _samples(op, device, dtype, requires_grad, **kwargs):\n"
        "    yield SampleInput(torch.ones(2, device=device, dtype=dtype, requires_grad=requires_grad))\n"
        f"ops = [OpInfo({name!r}, op=torch.sin, dtypes=floating_types(), sample_inputs_func=_samples)]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    (ref,) = _opinfo.all_ops(["odd_named_ops:ops"])
    setup = _opinfo.repro_setup(ref, "cpu", torch.float32, 0)
    assert setup is not None
    namespace: dict[str, Any] = {}
    exec(compile("import torch\n" + setup, "repro.py", "exec"), namespace)
    assert namespace["func"] is torch.sin
