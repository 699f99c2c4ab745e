"""The docs site (mkdocs.yml, docs/) may not drift from the code: its reference pages are generated
by docs/gen_ref.py from the code's own declarations, and these tests check what the generator
writes against those declarations, and that no hand-written page carries a copy of them."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

import optests
from optests import _backends, _key, _settings, cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _gen_ref() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_ref", DOCS / "gen_ref.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_ref = _gen_ref()


def _options_table(page: str) -> dict[str, tuple[str, str]]:
    """The options page's rows: option name -> (ini key, default)."""
    rows = re.findall(r"^\| `--optests-([\w-]+)`(?: \(switch\))? \| `(\w+)` \| (.+?) \|", page, re.M)
    return {name: (ini, default.strip("`")) for name, ini, default in rows}


def _expected_options() -> dict[str, tuple[str, str]]:
    return {o.name: ("optests_" + o.name.replace("-", "_"), o.default or "(none)") for o in _settings.OPTIONS}


def test_the_options_reference_lists_every_option_with_its_ini_key_and_default() -> None:
    assert _options_table(gen_ref.options_page()) == _expected_options()


def test_the_options_reference_follows_a_new_option_and_a_changed_default(monkeypatch: pytest.MonkeyPatch) -> None:
    first = _settings.OPTIONS[0]
    changed = dataclasses.replace(first, default="changed-default")
    new = dataclasses.replace(first, name="brand-new", help="a new option", default="42")
    monkeypatch.setattr(_settings, "OPTIONS", (changed, *_settings.OPTIONS[1:], new))
    table = _options_table(gen_ref.options_page())
    assert table[first.name] == ("optests_" + first.name.replace("-", "_"), "changed-default")
    assert table["brand-new"] == ("optests_brand_new", "42")


def test_an_option_field_the_generator_does_not_know_gets_a_column(monkeypatch: pytest.MonkeyPatch) -> None:
    @dataclasses.dataclass(frozen=True)
    class Wider(_settings.Option):
        cli_flag: str = ""

    options = tuple(Wider(**{f.name: getattr(o, f.name) for f in dataclasses.fields(o)}) for o in _settings.OPTIONS)
    options = (dataclasses.replace(options[0], cli_flag="--ops"), *options[1:])
    monkeypatch.setattr(_settings, "OPTIONS", options)
    page = gen_ref.options_page()
    assert re.search(r"^\| option \| ini key \| default \|(?: [\w ]+ \|)* cli flag \| meaning \|$", page, re.M)
    assert f"| `--optests-{options[0].name}` | " in page and "| `--ops` |" in page


def test_the_cli_reference_has_every_subcommand_and_its_help() -> None:
    page = gen_ref.cli_page()
    parser = cli._parser()
    for name, sub in gen_ref._subcommands(parser).items():
        assert f"## `optests {name}`" in page
        for nested in gen_ref._subcommands(sub):
            assert f"### `optests {name} {nested}`" in page
        for action in sub._actions:
            for flag in action.option_strings:
                assert flag in page, f"optests {name} {flag} is not in the CLI reference"


def test_the_derivations_reference_lists_every_transform_and_pattern_once() -> None:
    page = gen_ref.derivations_page()
    names = re.findall(r"^\| `([\w-]+)` \| `optests\.", page, re.M)
    assert names == list(_key.TRANSFORMS)
    transforms, patterns = page.split("## Call patterns")
    assert all(f"| `{n}` |" in transforms for n in _key.INPUT_TRANSFORMS)
    assert all(f"| `{n}` |" in patterns for n in _key.CALL_PATTERNS)


def test_the_backends_reference_lists_every_backend_with_its_rules() -> None:
    page = gen_ref.backends_page()
    rows = re.findall(r"^\| `([\w:.]+)` \| .+ \| (yes|no) \| (yes|no) \| `(\w+)` \|", page, re.M)
    assert rows == [
        (name, "yes" if b.nofunc else "no", "yes" if b.same_random else "no", b.opinfo_test)
        for name, b in _backends.BACKENDS.items()
    ]


def test_the_api_reference_renders_every_public_name() -> None:
    page = gen_ref.api_page()
    assert sorted(re.findall(r"^::: optests\.(\w+)$", page, re.M)) == sorted(n for n in optests.__all__ if not n.startswith("_"))


def test_the_getting_started_page_takes_the_readme_quickstarts() -> None:
    page = (DOCS / "getting-started.md").read_text()
    assert gen_ref.QUICKSTARTS_MARKER in page
    quickstarts = gen_ref.readme_quickstarts((ROOT / "README.md").read_text())
    for reader in ("## A CI maintainer", "## An operator author", "## A backend vendor"):
        assert reader in quickstarts
    assert "](docs/" not in quickstarts and "## Documentation" not in quickstarts


def test_no_hand_written_page_copies_a_generated_table() -> None:
    generated = set(gen_ref.pages())
    for path in [ROOT / "README.md", ROOT / "ci" / "README.md", *DOCS.rglob("*.md")]:
        if path.relative_to(DOCS if path.is_relative_to(DOCS) else ROOT).as_posix() in generated:
            continue
        text = path.read_text()
        assert not re.search(r"^\| `--optests-[\w-]+` \|", text, re.M), f"{path}: a copy of the options table"
        assert "```text\nusage: optests" not in text, f"{path}: a copy of the CLI's help"


def test_the_site_navigation_names_each_page_once() -> None:
    nav = re.findall(r"^\s+- [^:]+: ([\w/.-]+\.md)$", (ROOT / "mkdocs.yml").read_text(), re.M)
    written = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert sorted(nav) == sorted([*written, *gen_ref.pages()])


def test_ci_builds_the_docs_strictly_with_the_pinned_requirements() -> None:
    run = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ".venv/bin/pip install -q -r requirements-docs.txt" in run
    assert ".venv/bin/mkdocs build --strict" in run
    pins = [line for line in (ROOT / "requirements-docs.txt").read_text().splitlines() if line and not line.startswith("#")]
    assert pins and all(re.fullmatch(r"[\w.\[\]-]+==[\w.]+", p) for p in pins), pins


def test_the_docstrings_rest_roles_render_as_code() -> None:
    html = 'one :class:<code>SampleCheck</code> per sample; :func:<code class="x">run_check</code>; a :ratio:'
    assert gen_ref.on_page_content(html, None, None, None) == (
        'one <code>SampleCheck</code> per sample; <code class="x">run_check</code>; a :ratio:'
    )
