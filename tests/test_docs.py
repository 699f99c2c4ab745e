"""The README may not drift from the code."""

from __future__ import annotations

import re
from pathlib import Path

from optests import _settings

ROOT = Path(__file__).resolve().parents[1]


def test_readme_options_table_matches_the_plugin() -> None:
    rows = re.findall(r"^\| `--optests-([\w-]+)` \| `(\w+)` \| (.+?) \|", (ROOT / "README.md").read_text(), re.M)
    documented = {name: (ini, default.strip("`")) for name, ini, default in rows}
    expected = {o.name: ("optests_" + o.name.replace("-", "_"), o.default or "(none)") for o in _settings.OPTIONS}
    assert documented == expected


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    command = re.findall(r"```sh\n(.+?)\n```", readme)[1]
    assert command == ".venv/bin/python -m pytest"
    assert command in (ROOT / ".ci" / "run").read_text().splitlines()
