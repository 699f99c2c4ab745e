"""The reference pages that come from the code's own declarations, never written by hand.

`mkdocs build` runs this module as a hook (`hooks:` in mkdocs.yml): :func:`on_files` adds each
page of :func:`pages` to the site, so no generated page is committed anywhere. The pages:

- `reference/options.md`: the sweep's options, from `optests._settings.OPTIONS`;
- `reference/cli.md`: `optests --help` and each subcommand's, from the parser in `optests/cli.py`;
- `reference/derivations.md`: input transforms and call patterns, from `optests._key` and the
  docstrings of the code that derives each;
- `reference/backends.md`: the backends, from `optests._backends.BACKENDS`;
- `reference/api.md`: the public Python API, `optests.__all__`, its docstrings rendered by
  mkdocstrings.

:func:`on_page_markdown` also puts the README's quickstarts into `getting-started.md` where its
marker stands, so the two cannot differ.

`tests/test_docs_site.py` checks what these pages say against the code (every option with its
default, every subcommand, every transform, pattern and backend). Importing this module needs no
mkdocs; rendering the derivations and backends imports torch, as the check does.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import inspect
import os
import re
from collections.abc import Iterator
from typing import Any

#: The fields of an option every page shows in columns of their own; any other field an
#: ``Option`` declares (a CLI flag, an author default...) gets a column after these.
_KNOWN_OPTION_FIELDS = ("name", "help", "default", "parse", "flag", "ini_path")


#: Front matter that gives a page of wide tables the width the table of contents would take.
_WIDE = ("---", "hide:", "  - toc", "---", "")


def _cell(text: object) -> str:
    """A value as a Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(text: object) -> str:
    value = str(text)
    return f"`{value}`" if value else "(none)"


def _prose(doc: str | None) -> str:
    """The first paragraph of a docstring, its reST roles and double backticks made Markdown."""
    first = inspect.cleandoc(doc or "").split("\n\n")[0]
    first = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", first)
    return " ".join(first.replace("``", "`").split())


def options_page() -> str:
    """Every option of the sweep with its ini key, its default and what it does."""
    from optests import _settings

    options = list(_settings.OPTIONS)
    extra: list[str] = []
    for option in options:
        if dataclasses.is_dataclass(option):
            for f in dataclasses.fields(option):
                value = getattr(option, f.name, None)
                known = f.name in _KNOWN_OPTION_FIELDS or f.name.startswith("_") or f.name in extra
                if not known and not callable(value):  # a parser or validator is no reader's business
                    extra.append(f.name)
    head = ["option", "ini key", "default", *(e.replace("_", " ") for e in extra), "meaning"]
    lines = [
        *_WIDE,
        "# Options of the sweep",
        "",
        "Generated from `optests._settings.OPTIONS`, the one declaration of the sweep's options. Each is",
        "a command-line option `--optests-NAME` and an ini key `optests_NAME` (`pyproject.toml`'s",
        "`[tool.pytest.ini_options]`, `pytest.ini`, `tox.ini`); the command line wins. A switch takes no",
        "value on the command line and `true` or `false` in the ini. A bad value stops the run before any",
        "test with one line naming the option, the value and what is valid (exit status 4).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for option in options:
        name = str(getattr(option, "name", ""))
        flag = bool(getattr(option, "flag", False))
        cells = [
            f"`--optests-{name}`" + (" (switch)" if flag else ""),
            f"`optests_{name.replace('-', '_')}`",
            _code(getattr(option, "default", "")),
            *(_cell(_code(v) if (v := getattr(option, e, None)) not in (None, "") else "") for e in extra),
            _cell(getattr(option, "help", "")),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def _columns(width: int) -> Iterator[None]:
    """argparse wraps help at the terminal's width: fix it, so the page is the same everywhere."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def cli_parser() -> argparse.ArgumentParser:
    """The parser `optests` runs with (`optests/cli.py`)."""
    from optests import cli

    for name in ("build_parser", "parser", "_parser"):
        make = getattr(cli, name, None)
        if callable(make):
            parser = make()
            if isinstance(parser, argparse.ArgumentParser):
                return parser
    raise RuntimeError("optests.cli has no function that builds its parser")


def cli_page() -> str:
    """`optests --help`, then each subcommand's help, in the parser's words."""
    lines = [
        "# The `optests` command",
        "",
        "Generated from the parser in `optests/cli.py`: what `optests --help` and",
        "`optests COMMAND --help` print. Exit status, for every subcommand: 0 success, 1 findings",
        "(`check`) or new failures (`diff`), 2 a usage or input error (one line on stderr), 3 an",
        "internal error (a bug in optests; the traceback is saved to a file the line names),",
        "130 interrupted, 141 the reader of the output went away.",
        "",
    ]

    def add(title: str, parser: argparse.ArgumentParser, depth: int) -> None:
        lines.extend([f"{'#' * depth} `{title}`", "", "```text", parser.format_help().rstrip(), "```", ""])
        for name, sub in _subcommands(parser).items():
            add(f"{title} {name}", sub, min(depth + 1, 4))

    with _columns(100):
        add("optests", cli_parser(), 2)
    return "\n".join(lines)


def _derivation(where: str) -> tuple[Any, Any]:
    module_name, attribute = where.split(":")
    module = importlib.import_module(module_name)
    return module, getattr(module, attribute)


def derivations_page() -> str:
    """Every input transform and call pattern, by the name users type, with what it derives."""
    from optests import _key

    lines = [
        "# Transforms and call patterns",
        "",
        "Generated from `optests._key.INPUT_TRANSFORMS` and `optests._key.CALL_PATTERNS`, where each",
        "is declared by the name users type (`--optests-transforms`, `optests check --transforms`,",
        "`check_op(transforms=...)`; `all` names every one), and from the docstrings of the code that",
        "derives it. A derived sample's id is its base id plus the name, and an index where one",
        "derivation gives several (`...-sample3-transposed-1`). [Transforms and call patterns](../transforms.md)",
        "says what each reaches and what it costs.",
        "",
        "## Input transforms",
        "",
        "Other inputs, called as the base sample is.",
        "",
        "| name | declared in | ids | what it derives |",
        "|---|---|---|---|",
    ]
    for name, where in _key.INPUT_TRANSFORMS.items():
        _, row = _derivation(where)
        ids = f"`{name}`" if getattr(row, "unindexed", False) else f"`{name}-N`"
        notes = [n for n, on in (("casts", getattr(row, "casts", False)), ("draws", getattr(row, "draws", False))) if on]
        what = _prose(getattr(row.derive, "__doc__", None)) + (f" ({', '.join(notes)})" if notes else "")
        lines.append(f"| `{name}` | `{where}` | {ids} | {_cell(what)} |")
    lines += [
        "",
        "## Call patterns",
        "",
        "The function called, or its outputs used, otherwise; eager goes through the same pattern and is",
        "the reference.",
        "",
        "| name | declared in | ids | what it does |",
        "|---|---|---|---|",
    ]
    for name, where in _key.CALL_PATTERNS.items():
        module, row = _derivation(where)
        count = int(getattr(row, "count", 1))
        ids = (
            f"`{name}`"
            if getattr(row, "unindexed", False)
            else f"`{name}-0`" + (f" to `{name}-{count - 1}`" if count > 1 else "")
        )
        lines.append(f"| `{name}` | `{where}` | {ids} | {_cell(_prose(module.__doc__))} |")
    return "\n".join(lines) + "\n"


def backends_page() -> str:
    """Every backend by name, with the rules where it may differ from eager."""
    from optests import _backends

    lines = [
        *_WIDE,
        "# Backends",
        "",
        "Generated from `optests._backends.BACKENDS`, the table of backends by name, and each",
        "backend's own attributes ([Backends](../backends.md) says what they mean). Besides these names,",
        f"`{_backends.DYNAMO}NAME` runs `torch.compile` with any registered Dynamo backend, and",
        "`MODULE:ATTRIBUTE` names a `torch.compile` backend of your own.",
        "",
        "| name | what it compiles with | `-nofunc` modes | same random numbers as eager | OpInfo decorations of | ops with free strides |",
        "|---|---|---|---|---|---|",
    ]
    for name, backend in _backends.BACKENDS.items():
        free = ", ".join(f"`{op}`" for op in sorted(getattr(backend, "free_strides", ()))) or "none"
        lines.append(
            f"| `{name}` | {_cell(_prose(type(backend).__doc__))} | {'yes' if backend.nofunc else 'no'} "
            f"| {'yes' if backend.same_random else 'no'} | `{backend.opinfo_test}` | {free} |"
        )
    return "\n".join(lines) + "\n"


def api_page() -> str:
    """The public names of `optests` (its `__all__`), each rendered from its docstring."""
    import optests

    lines = [
        "# Python API",
        "",
        "Generated from `optests.__all__`: every public name, with its docstring. Importing `optests`",
        "does not import torch; the names that need it load on first use.",
        "",
    ]
    for name in sorted((n for n in optests.__all__ if not n.startswith("_")), key=str.lower):
        lines += [f"::: optests.{name}", ""]
    return "\n".join(lines)


#: Where getting-started.md takes the README's quickstarts.
QUICKSTARTS_MARKER = "<!-- quickstarts: README.md -->"


def readme_quickstarts(readme: str) -> str:
    """The README's quickstart sections (from the first `## A ` heading to `## Documentation`),
    their links made relative to docs/."""
    start = readme.index("\n## A ") + 1
    end = readme.index("\n## Documentation")
    return readme[start:end].replace("](docs/", "](")


def pages() -> dict[str, str]:
    """Each generated page by its path under docs/."""
    return {
        "reference/options.md": options_page(),
        "reference/cli.md": cli_page(),
        "reference/derivations.md": derivations_page(),
        "reference/backends.md": backends_page(),
        "reference/api.md": api_page(),
    }


def on_files(files: Any, config: Any) -> Any:
    """The mkdocs hook: add the generated pages to the site's files."""
    from mkdocs.structure.files import File

    for path, text in pages().items():
        files.append(File.generated(config, path, content=text))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """The mkdocs hook: the README's quickstarts where a page has the marker."""
    if QUICKSTARTS_MARKER not in markdown:
        return markdown
    from pathlib import Path

    readme = (Path(config["config_file_path"]).parent / "README.md").read_text()
    return markdown.replace(QUICKSTARTS_MARKER, readme_quickstarts(readme))


#: What is left of a reST role (``:class:`X```) in a docstring mkdocstrings rendered: the role's name.
_ROLE = re.compile(r":(?:class|func|data|meth|attr|mod|exc|obj):(?=<code)")


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """The mkdocs hook: the docstrings' reST roles shown as the code they name."""
    return _ROLE.sub("", html)
