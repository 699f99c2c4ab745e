"""The package's layers: an import graph with no cycle, each module importing only from its own
layer or below, and the check importing neither the repro renderer nor the sample sources.

Read from the source (``ast``), nothing imported: every ``import`` and ``from ... import`` of a
module of ``optests``, at module level and inside functions (a function-level import is a
dependency all the same: it only runs later), except those under ``if TYPE_CHECKING:``, which
never run.
"""

from __future__ import annotations

import ast
import graphlib
import itertools
from pathlib import Path

import pytest

import optests

ROOT = Path(optests.__file__).parent
PACKAGE = "optests"

#: The layers, lowest first. A module may import from its own layer and those below it, never
#: from one above. A new module is added to the layer it belongs to (the test fails until it is).
LAYERS: dict[str, tuple[str, ...]] = {
    # torch-free: what results, the registry and the reports are made of, and the stores
    "vocabulary and stores": (
        "optests",
        "optests._causes",
        "optests._diff",
        "optests._dashboard",
        "optests._durations",
        "optests._env",
        "optests._errors",
        "optests._files",
        "optests._findings",
        "optests._grouped",
        "optests._history",
        "optests._imports",
        "optests._json",
        "optests._known",
        "optests._key",
        "optests._registry",
        "optests._results",
        "optests._runner",
        "optests._sanitize",
        "optests._source",
        "optests._state",
        "optests._threads",
        "optests.errors",
    ),
    # torch values as Python source: the few lines of a finding's repro
    "tensor helpers": ("optests._script",),
    # samples derived from a sample: input transforms and call patterns, on one base
    "derivation": ("optests._transforms", "optests._patterns", "optests.patterns"),
    "backends": ("optests._backends",),
    # the check, and its entry points (which render a finding's repro)
    "the check": ("optests._check", "optests._api"),
    "sample sources": ("optests._opinfo", "optests._modules"),
    "the pipeline": ("optests._pipeline", "optests._case", "optests._execute", "optests._settings"),
    "front ends": ("optests.plugin", "optests.cli", "optests._author", "optests._sweep", "optests._repro", "optests._report"),
}

#: Imports from a higher layer that are known, each with why it stays for now. Keep it short.
KNOWN_UPWARD = {
    # the registry judges an entry's backend against those registered (runtime state of the
    # backends layer); the names alone would belong to the vocabulary (optests._key)
    ("optests._registry", "optests._backends"),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(module: str, path: Path) -> dict[str, int]:
    """The modules of the package that ``module`` imports, each with the line of its first import."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: dict[str, int] = {}

    def add(target: str, line: int) -> None:
        if target != module and (target == PACKAGE or target.startswith(PACKAGE + ".")):
            while target not in MODULES:  # a name defined in a module: the module
                target = target.rpartition(".")[0]
            if target != module:
                found.setdefault(target, line)

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    add(alias.name, child.lineno)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[: len(base) - (child.level - 1)]
                    source = ".".join(base + ([child.module] if child.module else []))
                else:
                    source = child.module or ""
                for alias in child.names:
                    # `from . import _x` imports the module _x; `from ._x import name` the module _x
                    add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source, child.lineno)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


GRAPH = {module: _imported(module, path) for module, path in MODULES.items()}


def _layer_of(module: str) -> int:
    for number, members in enumerate(LAYERS.values()):
        if any(module == m or module.startswith(m + ".") for m in members):
            return number
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")


def test_the_import_graph_has_no_cycle() -> None:
    sorter = graphlib.TopologicalSorter({module: set(imports) for module, imports in GRAPH.items()})
    try:
        sorter.prepare()
    except graphlib.CycleError as e:
        cycle = e.args[1]
        steps = [f"{a} -> {b} (line {GRAPH[a][b]})" for a, b in itertools.pairwise(cycle)]
        pytest.fail("import cycle:\n  " + "\n  ".join(steps))


def test_each_module_imports_only_from_its_layer_or_below() -> None:
    upward = [
        f"{module} ({list(LAYERS)[_layer_of(module)]}) imports {target} ({list(LAYERS)[_layer_of(target)]}), line {line}"
        for module, imports in GRAPH.items()
        for target, line in imports.items()
        if _layer_of(target) > _layer_of(module) and (module, target) not in KNOWN_UPWARD
    ]
    assert not upward, "\n".join(upward)


def test_every_known_upward_import_is_still_there() -> None:
    assert all(target in GRAPH[module] for module, target in KNOWN_UPWARD)


@pytest.mark.parametrize("below", ["optests._script", "optests._repro", "optests._opinfo", "optests._modules"])
def test_the_check_imports_neither_the_repro_renderer_nor_the_sample_sources(below: str) -> None:
    """The check is called by what renders its findings and by what makes its samples, not the
    other way round: whatever it needs of them is passed in."""
    importers = [
        m for m, imports in GRAPH.items() if (m == "optests._check" or m.startswith("optests._check.")) and below in imports
    ]
    assert not importers


def test_the_scan_sees_function_level_imports_and_skips_type_checking_ones() -> None:
    """The scan itself: a function-level import is an edge, one under ``TYPE_CHECKING`` is not."""
    assert "optests._opinfo" in GRAPH["optests._execute"]  # imported inside functions only
    source = (ROOT / "_transforms.py").read_text(encoding="utf-8")
    assert "from ._patterns import CallPattern" in source  # under `if TYPE_CHECKING:`
    assert "optests._patterns" not in GRAPH["optests._transforms"]
