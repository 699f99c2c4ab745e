"""Every short command of the README runs as written, and prints what the README shows.

How the README marks them: a command in a ```` ```console ```` block, on a line that starts with
``$ ``, is short and is run here; the lines after it, up to the next ``$ `` line, are its output as
the README shows it. A command in a ```` ```sh ```` block (the setup, the full sweep, the test
command) takes minutes to hours and is not run. A ```` ```python ```` block whose first line is
``# file: NAME`` is a file the commands use. Each section's commands run in order, in a scratch
folder of their own that holds those files, a copy of the registry and this checkout's
``opinfo_sweeps/`` and ``.venv`` (linked), so nothing in the checkout changes.

Each command must exit with the status its ``# exit N`` comment states (0 without one), and each
output line shown must be a line of what it printed, numbers aside (timings differ): a line shown
as ``...`` stands for any number of lines.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


@dataclass
class Command:
    line: str
    status: int
    shown: list[str] = field(default_factory=list)


@dataclass
class Section:
    title: str
    files: dict[str, str] = field(default_factory=dict)
    commands: list[Command] = field(default_factory=list)


def sections(readme: str) -> list[Section]:
    """The README's sections that have commands to run, each with its files and commands."""
    found = []
    for part in re.split(r"^## ", readme, flags=re.M)[1:]:
        section = Section(part.split("\n", 1)[0])
        for lang, body in _FENCE.findall(part):
            first = body.split("\n", 1)[0]
            if lang == "python" and first.startswith("# file: "):
                section.files[first.removeprefix("# file: ").strip()] = body
            elif lang == "console":
                for line in body.splitlines():
                    if line.startswith("$ "):
                        status = re.search(r"  # exit (\d+)$", line)
                        section.commands.append(Command(line[2:], int(status.group(1)) if status else 0))
                    elif section.commands:
                        section.commands[-1].shown.append(line)
                    else:
                        raise AssertionError(f"README, {section.title!r}: output before any command: {line!r}")
        if section.commands:
            found.append(section)
    return found


def _pattern(shown: str) -> re.Pattern[str]:
    """A shown output line as a pattern: its numbers stand for any numbers."""
    parts = _NUMBER.split(shown.rstrip())
    return re.compile(r"\d+(?:\.\d+)?".join(re.escape(p) for p in parts))


def test_the_readme_has_a_quickstart_for_each_reader_with_commands_to_run() -> None:
    titles = [s.title for s in sections(README.read_text())]
    assert [t.split(":")[0] for t in titles] == ["A CI maintainer", "An operator author", "A backend vendor"]


def test_the_readme_is_short_and_its_quickstarts_come_first() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 220
    head = "\n".join(text.splitlines()[:25])
    for title in ("a CI maintainer", "an operator author", "a backend vendor"):
        assert title in head, f"the README's first screen does not name the quickstart of {title}"


def test_the_pattern_of_a_shown_line_ignores_numbers_only() -> None:
    pattern = _pattern("static: 24 samples: trace 24 (9.6 s)")
    assert pattern.fullmatch("static: 12 samples: trace 12 (0.25 s)")
    assert not pattern.fullmatch("dynamic: 12 samples: trace 12 (0.25 s)")


@pytest.mark.parametrize("section", sections(README.read_text()), ids=lambda s: s.title.split(":")[0])
def test_the_readme_commands_run_as_written(section: Section, tmp_path: Path) -> None:
    for name, text in section.files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    (tmp_path / "opinfo_sweeps").symlink_to(ROOT / "opinfo_sweeps")
    for name in ("expected_failures.json", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "OPTESTS_"))}
    for command in section.commands:
        done = subprocess.run(
            command.line, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, check=False
        )
        printed = [line.rstrip() for line in (done.stdout + done.stderr).splitlines()]
        where = f"README, {section.title!r}: {command.line}"
        assert done.returncode == command.status, f"{where}: exit status {done.returncode}\n{done.stdout}{done.stderr}"
        for shown in command.shown:
            if shown.strip() == "...":
                continue
            pattern = _pattern(shown)
            assert any(pattern.fullmatch(line) for line in printed), f"{where}: no line like {shown!r} in\n" + "\n".join(printed)
