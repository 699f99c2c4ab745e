"""Module-level definitions as source text, with everything they use.

This is how a repro script carries the check: it holds a copy of the very functions in
:mod:`optests._check` (and the finding classes of :mod:`optests._findings` they raise), taken
from their source when the script is written, rather than a second implementation of them.
Torch-free: it reads source, it imports nothing of what it copies.
"""

from __future__ import annotations

import ast
import graphlib
import importlib
import importlib.util
import inspect
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType

from .errors import SourceError as SourceError


@dataclass(frozen=True)
class _Definition:
    module: str
    name: str
    text: str
    line: int
    uses: frozenset[str]


@dataclass(frozen=True)
class _Binding:
    """A name bound by an import statement: ``import module``, ``import a.b as name`` (attr
    None) or ``from module import attr [as name]``."""

    module: str
    attr: str | None


class _Module:
    """A module's top-level definitions (functions, classes, assignments) and import bindings."""

    def __init__(self, name: str) -> None:
        module = importlib.import_module(name)
        source = inspect.getsource(module)
        lines = source.splitlines()
        package = module.__package__ or ""
        self.name = name
        self.definitions: dict[str, _Definition] = {}
        self.bindings: dict[str, _Binding] = {}
        for node in ast.parse(source).body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.bindings[alias.asname] = _Binding(alias.name, None)
                    else:
                        top = alias.name.split(".")[0]
                        self.bindings[top] = _Binding(top, None)
            elif isinstance(node, ast.ImportFrom):
                if node.module == "__future__":
                    continue
                base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) if node.level else node.module
                assert base is not None
                for alias in node.names:
                    self.bindings[alias.asname or alias.name] = _Binding(base, alias.name)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)):
                names = _bound_names(node)
                if not names:
                    continue
                first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
                while first > 1 and lines[first - 2].lstrip().startswith("#"):  # its `#:` comment
                    first -= 1
                assert node.end_lineno is not None
                text = "\n".join(lines[first - 1 : node.end_lineno])
                uses = frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name)) - set(names)
                for n in names:
                    self.definitions[n] = _Definition(name, n, text, first, uses)


def _bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    if isinstance(node, ast.AnnAssign) and node.value is None:
        return []
    return [t.id for t in targets if isinstance(t, ast.Name)]


@dataclass(frozen=True)
class Copied:
    """Source copied out of modules: the import lines it needs, its code (each module's
    definitions in their order there, modules that others use first) and the names it defines."""

    imports: tuple[str, ...]
    code: str
    names: frozenset[str]


def copy_definitions(
    module: str, names: Iterable[str], package: str | None = None, *, more: Iterable[tuple[str, str]] = ()
) -> Copied:
    """The definitions of ``names`` in ``module`` (and of each ``(module, name)`` in ``more``)
    and, transitively, every top-level definition they use, from that module or from modules of
    ``package`` (default: ``module``'s top-level package) that it imports names from. What comes
    from other packages (torch, the standard library) is imported, as the module imports it."""
    package = package if package is not None else module.split(".")[0]
    modules: dict[str, _Module] = {}
    chosen: dict[str, _Definition] = {}
    bindings: dict[str, _Binding] = {}
    depends: dict[str, set[str]] = {}

    def ours(name: str) -> bool:
        return name == package or name.startswith(package + ".")

    def load(name: str) -> _Module:
        if name not in modules:
            modules[name] = _Module(name)
            depends.setdefault(name, set())
        return modules[name]

    todo = [(module, n) for n in names] + list(more)
    while todo:
        mod_name, name = todo.pop()
        mod = load(mod_name)
        if name in mod.definitions:
            found = mod.definitions[name]
            held = chosen.get(name)
            if held is not None:
                if held != found:
                    raise SourceError(f"{name} is defined in both {held.module} and {found.module}")
                continue
            chosen[name] = found
            for used in found.uses:
                if used in mod.definitions or used in mod.bindings:
                    todo.append((mod_name, used))
            continue
        binding = mod.bindings.get(name)
        if binding is None:
            raise SourceError(f"{mod_name} has no top-level definition of {name}")
        if not ours(binding.module):
            held_binding = bindings.get(name)
            if held_binding is not None and held_binding != binding:
                raise SourceError(f"{name} is imported as two things: {held_binding} and {binding}")
            bindings[name] = binding
            continue
        if binding.attr is None or isinstance(getattr(importlib.import_module(binding.module), binding.attr, None), ModuleType):
            raise SourceError(f"{mod_name} uses {name}, a module of {package}: copy the definitions it needs instead")
        depends[mod_name].add(binding.module)
        load(binding.module)
        todo.append((binding.module, binding.attr))

    order = list(graphlib.TopologicalSorter(depends).static_order())  # what a module uses comes first
    blocks: list[str] = []
    for mod_name in order:
        texts = sorted({(d.line, d.text) for d in chosen.values() if d.module == mod_name})
        if texts:
            blocks.append(f"# -- from {mod_name} " + "-" * max(3, 89 - len(mod_name)))
            blocks.extend(text for _, text in texts)
    return Copied(_import_lines(bindings), "\n\n\n".join(blocks), frozenset(chosen))


def _import_lines(bindings: dict[str, _Binding]) -> tuple[str, ...]:
    plain: set[str] = set()
    froms: dict[str, set[str]] = {}
    for name, b in bindings.items():
        if b.attr is None:
            plain.add(f"import {b.module}" if b.module == name else f"import {b.module} as {name}")
        else:
            froms.setdefault(b.module, set()).add(b.attr if b.attr == name else f"{b.attr} as {name}")
    return tuple(sorted(plain)) + tuple(f"from {m} import {', '.join(sorted(a))}" for m, a in sorted(froms.items()))
