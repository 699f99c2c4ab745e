"""The README and the contract (docs/contract.md) may not drift from the code. The generated
reference pages are tested in tests/test_docs_site.py."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest

from optests import _key, _registry, _results
from optests._findings import Outcome, Stage, Verdict

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "docs" / "contract.md"


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    command = re.findall(r"```sh\n(.+?)\n```", readme)[1]
    assert command == ".venv/bin/python -m pytest -n auto"
    assert command in (ROOT / ".ci" / "run").read_text().splitlines()


def _section(title: str) -> str:
    """The text under a heading of docs/contract.md, up to the next heading."""
    m = re.search(rf"^#+ {re.escape(title)}\n(.*?)(?=^#|\Z)", CONTRACT.read_text(), re.M | re.S)
    assert m is not None, f"docs/contract.md has no section {title!r}"
    return m.group(1)


def _first_column(section: str) -> list[str]:
    """The words in the first column of a section's table: ``| `word` | ...``."""
    return re.findall(r"^\| `([^`]+)` \|", _section(section), re.M)


@pytest.mark.parametrize(
    ("section", "values"),
    [
        ("Stages", [s.value for s in Stage]),
        ("Outcomes", [o.value for o in Outcome]),
        ("Verdicts", [v.value for v in Verdict]),
        ("Modes", list(_key.MODES)),
        ("Registry entry fields", [f.name for f in _registry.FIELDS]),
        ("Results record fields", [f.name for f in _results.FIELDS]),
    ],
)
def test_the_contract_lists_exactly_what_the_code_has(section: str, values: list[str]) -> None:
    assert _first_column(section) == values


def test_the_contract_lists_dtypes_and_devices() -> None:
    words = re.findall(r"^\| `([^`]+)` \|$", _section("Dtypes and devices"), re.M)
    assert words == [*_key.DTYPES, *_key.DEVICES]


@pytest.mark.parametrize(("section", "module"), [("Registry", _registry), ("Results", _results)])
def test_the_contract_gives_the_schema_versions_of_the_code(section: str, module: ModuleType) -> None:
    text = " ".join(_section(section).split())
    current = re.search(
        r"Current version: `\"schema_version\": (\d+)`; this optests reads versions (.+?) and writes (\d+)\.", text
    )
    assert current is not None, f"docs/contract.md, {section}: no sentence giving the schema versions"
    readable = [int(v) for v in re.findall(r"\d+", current.group(2))]
    assert (int(current.group(1)), readable, int(current.group(3))) == (
        module.SCHEMA_VERSION,
        list(module.READABLE_VERSIONS),
        module.SCHEMA_VERSION,
    )
    assert all(int(v) == module.SCHEMA_VERSION for v in re.findall(r'"schema_version": (\d+)', text))


def test_the_contract_lists_the_backends() -> None:
    from optests import _backends

    assert _first_column("Backends") == [*_backends.BACKENDS, f"{_backends.DYNAMO}NAME", "MODULE:ATTRIBUTE"]
