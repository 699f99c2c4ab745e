"""Each run option is declared once (``optests._settings.OPTIONS``): the sweep's pytest option
and ini key, ``optests check``'s flag and the author API's keywords must say what it says."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import inspect
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from optests import _settings, cli
from optests._settings import OPTIONS, Option

ROOT = Path(__file__).resolve().parents[1]
#: Keywords of the author functions that are not run options: how a function is called from another.
NOT_RUN_OPTIONS = {"isolated", "shrink", "shrink_alike", "dead", "judged_by", "registry_name"}
#: Flags of ``optests check`` that are its own, not run options (the sweep has no such thing).
CHECK_ONLY = {"-h", "--help", "--import", "--samples", "--json", "--repro-dir", "-v", "--verbose"}


def _keyword_problems(name: str, func: Callable[..., Any], options: Iterable[Option]) -> list[str]:
    """Where ``func``'s keyword-only parameters disagree with the options declared to be its keywords."""
    declared = {o.keyword: o for o in options if name in o.keywords_of}
    params = {p.name: p for p in inspect.signature(func).parameters.values() if p.kind is p.KEYWORD_ONLY}
    problems = [f"{name}: keyword {k!r} is declared but not taken" for k in declared.keys() - params.keys()]
    problems += [f"{name}: keyword {k!r} is not declared" for k in params.keys() - declared.keys() - NOT_RUN_OPTIONS]
    for k in declared.keys() & params.keys():
        if params[k].default != declared[k].keyword_default:
            problems.append(f"{name}: {k}={params[k].default!r}, but declared {declared[k].keyword_default!r}")
    return problems


def _check_actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    check = subparsers.choices["check"]
    return {s: a for a in check._actions for s in a.option_strings}


def _flag_problems(actions: dict[str, argparse.Action], options: Iterable[Option]) -> list[str]:
    """Where ``optests check``'s flags disagree with the options declared to have one."""
    declared = {o.cli_flag: o for o in options if o.cli_flag}
    problems = [f"{f}: declared but not a flag" for f in declared.keys() - actions.keys()]
    problems += [f"{f}: a flag not declared" for f in actions.keys() - declared.keys() - CHECK_ONLY]
    for flag in declared.keys() & actions.keys():
        action, opt = actions[flag], declared[flag]
        default = False if opt.flag else opt.author_value or None
        said = opt.author_help + (" (default: %(default)s)" if default not in (False, None) else "")
        if (action.default, action.help, action.metavar) != (default, said, opt.metavar):
            problems.append(f"{flag}: default={action.default!r}, help={action.help!r}, metavar={action.metavar!r}")
        if opt.flag != (action.nargs == 0):
            problems.append(f"{flag}: a switch in one and not the other")
    return problems


AUTHOR_FUNCTIONS = sorted({f for o in OPTIONS for f in o.keywords_of})


@pytest.mark.parametrize("name", AUTHOR_FUNCTIONS)
def test_author_keywords_and_their_defaults_are_the_declared_ones(name: str) -> None:
    from optests import _author

    assert _keyword_problems(name, getattr(_author, name), OPTIONS) == []


def test_a_keyword_that_disagrees_with_its_declaration_is_found() -> None:
    def check_op(*, modes: tuple[str, ...] = ("static",), isolated: bool = True, extra: int = 0) -> None:
        """A wrong default (``modes``), a run option not declared (``extra``), and ``select``
        declared but not taken."""

    select = dataclasses.replace(_settings.OPTION["select"], keywords_of=("check_op",))
    assert sorted(_keyword_problems("check_op", check_op, [_settings.OPTION["modes"], select])) == [
        "check_op: keyword 'extra' is not declared",
        "check_op: keyword 'select' is declared but not taken",
        "check_op: modes=('static',), but declared ('static', 'dynamic')",
    ]


def test_optests_check_has_a_flag_for_each_declared_option() -> None:
    assert _flag_problems(_check_actions(cli._parser()), OPTIONS) == []


def test_a_flag_that_disagrees_with_its_declaration_is_found() -> None:
    actions = _check_actions(cli._parser())
    del actions["--select"]
    extra = dataclasses.replace(_settings.OPTION["ids"], author_help="the ids", keywords_of=("check_op",))
    changed = dataclasses.replace(_settings.OPTION["timeout"], author_help="other")
    options = [o for o in OPTIONS if o.name != "timeout"] + [extra, changed]
    assert sorted(_flag_problems(actions, options)) == [
        "--ids: declared but not a flag",
        "--select: declared but not a flag",
        f"--timeout: default='300', help={actions['--timeout'].help!r}, metavar=None",
    ]


def test_optests_check_parses_each_flag_to_its_declared_default() -> None:
    args = cli._parser().parse_args(["check", "sin"])
    for opt in OPTIONS:
        if opt.cli_flag:
            expected = False if opt.flag else opt.author_value or None
            assert getattr(args, opt.keyword) == expected, opt.name


def test_the_sweep_has_each_declared_option_and_ini_key(pytester: pytest.Pytester) -> None:
    """Every option on the command line and every ini key, read back by the name the declaration
    gives it (``--strict-config`` refuses an ini key no plugin declares)."""
    pytester.makeini("[pytest]\n" + "".join(f"{o.ini} = ini-{o.name}\n" for o in OPTIONS))
    given = [o.option if o.flag else f"{o.option}=cli-{o.name}" for o in OPTIONS]
    config = pytester.parseconfig("--strict-config", *given)
    for opt in OPTIONS:
        assert config.getoption(opt.ini) == (True if opt.flag else f"cli-{opt.name}")
        assert config.getini(opt.ini) == f"ini-{opt.name}"


def test_settings_have_a_field_per_option_in_their_order() -> None:
    fields = [f.name for f in dataclasses.fields(_settings.Settings)]
    assert fields == [o.attribute for o in OPTIONS] + ["explicit"]


def test_the_sweep_settings_default_to_the_declared_defaults() -> None:
    settings = _settings.parse(lambda name: None, lambda name: "")
    for opt in OPTIONS:
        assert getattr(settings, opt.attribute) == opt.parse("default", opt.default), opt.name
    assert not settings.explicit


@pytest.mark.parametrize("name", [o.name for o in OPTIONS if o.explicit])
def test_an_explicit_option_makes_the_selection_explicit(name: str, tmp_path: Any) -> None:
    (tmp_path / "ids.txt").write_text("static-float32-cpu-sin-sample0\n")
    value = {"ops": "sin", "dbs": "op_db", "ids": str(tmp_path / "ids.txt")}[name]
    assert _settings.parse(lambda n: value if n == name else None, lambda n: "").explicit


def test_a_default_that_differs_for_authors_must_say_why() -> None:
    def parse(where: str, value: str) -> str:
        return value

    with pytest.raises(ValueError, match="'x': default='a', author_default='b', but it does not say why"):
        Option("x", "help", "a", parse, author_help="help", author_default="b")
    with pytest.raises(ValueError, match="'x': default='a', author_default='a', but it says why they differ"):
        Option("x", "help", "a", parse, author_help="help", author_default="a", differs_because="it does not")
    with pytest.raises(ValueError, match="'x': author_help is not given, but it has author fields"):
        Option("x", "help", "a", parse, keywords_of=("check_op",))


def test_where_authors_and_the_sweep_differ() -> None:
    """The sweep and the author's command differ in these defaults alone, each saying why."""
    differ = {o.name: (o.default, o.author_value) for o in OPTIONS if o.differs_because}
    assert differ == {"transforms": ("none", "all"), "registry": ("expected_failures.json", "")}


def test_author_defaults_are_the_keyword_defaults() -> None:
    assert dataclasses.asdict(_settings.AUTHOR_DEFAULTS) == {o.keyword: o.keyword_default for o in OPTIONS if o.keyword}
    assert _settings.AUTHOR_DEFAULTS.timeout == _settings.DEFAULT_TIMEOUT == 300.0


def _gen_ref() -> Any:
    spec = importlib.util.spec_from_file_location("gen_ref", ROOT / "docs" / "gen_ref.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_options_reference_says_where_authors_and_the_sweep_differ_and_why() -> None:
    """The generated options page (docs/gen_ref.py) gives each option's author default and reason."""
    gen_ref = _gen_ref()
    rows = {line.split(" | ")[0]: line for line in gen_ref.options_page().splitlines() if line.startswith("| `--optests-")}
    for opt in OPTIONS:
        row = rows[f"| `{opt.option}`" + (" (switch)" if opt.flag else "")]
        if opt.differs_because:
            assert gen_ref._cell(gen_ref._code(opt.differs_because)) in row
            assert not opt.author_default or f"| {gen_ref._code(opt.author_default)} |" in row
