"""Standalone repro scripts: Python source that reproduces a check on the same call.

:func:`write_standalone` writes a script that needs torch and the op's module, not optests: it
carries the check's own code, copied out of :mod:`optests._check` by :mod:`optests._source` when
the script is written, so it finds what the check finds by the check's rules (there is no second
implementation to drift). It rebuilds the inputs exactly as the check got them
(:mod:`optests._script`, which also writes a finding's few-line ``repro``).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from . import _check, _patterns, _source
from ._script import _call_lines, _float, comment_text, func_name, func_source, render, setup_source

__all__ = ["func_name", "func_source", "render", "setup_source", "standalone", "write_standalone"]


# ---------------------------------------------------------------------------------------------
# The standalone script.

_HEADER = '''\
"""Repro written by `optests check`: what it found, and how to run it, in the comment below.

It needs torch and the module that registers the op, not optests.
It runs the call below eagerly and under AOTAutograd and compares them with optests' own check,
whose code is copied at the end of this file. It prints what differs and exits with status 1
while the bug is there, 0 once it is fixed.
"""

{found}

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.getcwd())  # run it from your project, where your op's module is importable

import warnings

import torch
'''

_MAIN = '''\
def main() -> int:
    """Run the check on the call above as optests ran it; print what differs."""
    one_intra_op_thread()  # as optests runs every check: a verdict must not depend on the thread count
{register}    call = _TensorCall(func, args, kwargs)
    options = CheckOptions(
{options}
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # as optests runs it: an op's warnings are not findings
            # Eager and AOTAutograd (no-op compilers), each on fresh copies of the inputs: what the
            # trace predicted vs what the kernels returned, errors, metadata, mutations, outputs,
            # gradients; then again on randomized data through the same compiled function.
            notes = _check_call(call, options)
    except Finding as finding:
        print(finding)
        print("REPRODUCED")
        return 1
    for note in notes:
        print(f"note: {{note}}")
    print("not reproduced: nothing differs between eager and compiled")
    return 0
'''


def _callable_expr(fn: Any, imports: list[str]) -> str:
    """How the script names a comparison function: one of the check's own (copied), a
    ``functools.partial`` of one, or an importable function."""
    from . import _check

    if fn is torch.testing.assert_close:
        return "torch.testing.assert_close"
    if isinstance(fn, functools.partial):
        parts = (
            [_callable_expr(fn.func, imports)]
            + [_literal(a) for a in fn.args]
            + [f"{k}={_literal(v)}" for k, v in fn.keywords.items()]
        )
        imports.append("import functools")
        return f"functools.partial({', '.join(parts)})"
    name = getattr(fn, "__name__", "")
    module = str(getattr(fn, "__module__", ""))
    if (module == _check.__name__ or module.startswith(_check.__name__ + ".")) and getattr(_check, name, None) is fn:
        return str(name)
    named_imports, named = func_source(fn)
    if "TODO" in named:
        return f"assert_close_equal_nan  # TODO: the check used {comment_text(func_name(fn))}, which cannot be named here"
    imports.extend(named_imports)
    return named


def _literal(v: Any) -> str:
    return _float(v) if isinstance(v, float) else repr(v)


def standalone(
    func: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    options: Mapping[str, Any],
    *,
    summary: str,
    script_name: str,
    saved_name: str,
    imports: Sequence[str] = (),
    func_expr: str | None = None,
) -> tuple[str, list[Any]]:
    """The standalone script for the check of ``func(*args, **kwargs)`` with ``options`` (its
    keyword arguments, as :attr:`Finding.options` has them), and what it loads from
    ``saved_name`` beside it (nothing to write if empty)."""

    fields = dataclasses.fields(_check.CheckOptions)
    merged = {f.name: f.default for f in fields if f.default is not dataclasses.MISSING} | dict(options)
    dynamic, nofunc = bool(merged["dynamic"]), bool(merged["disable_functionalization"])
    merged["context"] = merged.get("context") or f"{func_name(func)} {_check.mode_name(dynamic, nofunc)}"
    merged["repro"] = None  # the repro is this script
    sample = merged.get("randomized_sample")
    saved: list[Any] = []
    call_lines, input_imports = _call_lines(args, kwargs, sample, saved)

    main_imports: list[str] = []
    option_lines = []
    for f in fields:  # every option, as the check had it
        value = merged[f.name]
        if f.name == "randomized_sample":
            code, comment = ("randomized_sample" if sample is not None else "None"), ""
        else:
            code, _, comment = (_callable_expr(value, main_imports) if callable(value) else _literal(value)).partition("  # ")
        option_lines.append(f"        {f.name}={code}," + (f"  # {comment}" if comment else ""))
    made = _patterns.recipe(str(merged["pattern"]))  # a derived sample's pattern: the script makes it
    register, more = "", []
    if made is not None:
        module, cls, index = made
        register = f"    PATTERNS[{merged['pattern']!r}] = {cls}({index})  # the call pattern optests checked it with\n"
        more = [(_patterns.__name__, "PATTERNS"), (module, cls)]
    main = _MAIN.format(options="\n".join(option_lines), register=register)

    used = {n.id for n in ast.walk(ast.parse(main)) if isinstance(n, ast.Name)}
    copied = _source.copy_definitions(_check.__name__, sorted(n for n in used if hasattr(_check, n)), more=more)

    func_imports, named = func_source(func)
    if func_expr is None or "TODO" not in named:
        func_expr = named
    op_imports = [f"import {m}  # registers the op" for m in imports] + [
        i for i in func_imports + input_imports + main_imports if not any(i.startswith(f"import {m} ") for m in imports)
    ]
    # what the finding says is text, not code: comment lines, escaped where Python could not hold it
    found = [
        (("# Found: " if i == 0 else "#   ") + comment_text(line)).rstrip() for i, line in enumerate(summary.splitlines() or [""])
    ]
    found.append(f"# Run it from your project: python {comment_text(script_name)}")
    header = _HEADER.format(found="\n".join(found))
    top_imports = set(_HEADER.splitlines())
    load = (
        [
            f"# Storages too large to write out here, and objects with no literal, are in {comment_text(saved_name)} beside this script.",
            f"SAVED = torch.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), {saved_name!r}), weights_only=False)",
        ]
        if saved
        else []
    )
    script_names = {"func", "args", "kwargs", "randomized_sample", "SAVED", "main", "os", "sys", "warnings", "torch"}
    script_names |= {line.split(" = ")[0] for line in call_lines if " = " in line and not line.startswith("#")}
    clash = script_names & copied.names
    if clash:
        raise _source.SourceError(f"the script's names {sorted(clash)} clash with the check's")
    parts = [
        header + "".join(f"{i}\n" for i in dict.fromkeys(op_imports) if i not in top_imports),
        _section("The call: the op and its inputs, exactly as the check got them"),
        "\n".join([f"func = {func_expr}", "", *load, *call_lines]) + "\n",
        _section("How optests ran the check"),
        main,
        _section(f"The check: optests' own code (optests {_version()}), copied unchanged from its modules"),
        "\n".join(i for i in copied.imports if i not in top_imports) + "\n\n",
        copied.code + "\n",
        '\nif __name__ == "__main__":\n    sys.exit(main())\n',
    ]
    return "\n".join(parts), saved


def _section(title: str) -> str:
    return f"\n# -- {title} " + "-" * max(3, 94 - len(title)) + "\n"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("optests")
    except PackageNotFoundError:
        return "unknown version"


def write_standalone(
    directory: Path,
    name: str,
    func: Callable[..., Any],
    inputs: tuple[Sequence[Any], Mapping[str, Any]],
    options: Mapping[str, Any],
    *,
    summary: str,
    imports: Sequence[str] = (),
    func_expr: str | None = None,
) -> Path:
    """Write ``NAME.py`` into ``directory``, a script that reruns the check of ``func`` on
    ``inputs`` (the original ``(args, kwargs)``, even for a randomized finding: the script makes
    the same random data) with ``options`` (the check's keyword arguments, ``dynamic`` included:
    :attr:`Finding.options`), and ``NAME.pt`` beside it where it needs one. Returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / f"{name}.py"
    saved_path = directory / f"{name}.pt"
    text, saved = standalone(
        func, inputs[0], inputs[1], options, summary=summary, script_name=script.name, saved_name=saved_path.name,
        imports=imports, func_expr=func_expr,
    )  # fmt: skip
    if saved:
        torch.save(saved, saved_path)
    else:
        saved_path.unlink(missing_ok=True)
    script.write_text(text, encoding="utf-8")  # Python reads source as UTF-8, whatever the locale
    return script
