"""The CI workflows in ci/ may not drift from the code: every optests command they run parses,
every --optests-* option exists, and every file they name is in the repository. .ci/run and the
pull-request workflow run the same house checks."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from optests import _settings, cli

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / "ci").glob("*.yml"))


def _commands(workflow: Path) -> list[str]:
    doc: dict[Any, Any] = yaml.safe_load(workflow.read_text())
    out = []
    for job in doc["jobs"].values():
        for step in job["steps"]:
            if "run" in step:
                out += [line.strip() for line in re.split(r"\n|&&|\|\||;|\bthen\b", step["run"]) if line.strip()]
    return out


#: A value of each matrix variable the workflows use, for checking their commands.
MATRIX = {"mode": "static", "torch": "2.13", "device": "cpu", "group": "1"}


def _words(command: str) -> list[str]:
    command = re.sub(r"\$\{\{\s*matrix\.(\w+)\s*\}\}", lambda m: MATRIX.get(m[1], "x"), command)
    command = re.sub(r"\$\{\{[^}]*\}\}", "x", command)
    return shlex.split(command.split(">")[0].split("|")[0])


def test_there_are_workflows() -> None:
    assert [w.name for w in WORKFLOWS] == ["nightly.yml", "pull_request.yml"]


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_commands_exist(workflow: Path) -> None:
    options = {f"--optests-{o.name}" for o in _settings.OPTIONS}
    seen = 0
    for command in _commands(workflow):
        words = _words(command)
        if words and words[0].endswith("/optests"):
            seen += 1
            try:
                cli._parser().parse_args(words[1:])
            except SystemExit:
                pytest.fail(f"{workflow.name}: not a valid optests command: {command}")
        for word in words:
            if word.startswith("--optests-"):
                assert word.split("=")[0] in options, f"{workflow.name}: unknown option {word}"
            if re.fullmatch(r"(sweep-results|opinfo_sweeps|requirements|tests)[\w./-]*", word):
                assert (ROOT / word).exists(), f"{workflow.name}: {word} is not in the repository"
    assert seen >= 2


#: What CI runs besides the tests and the sweep, word for word in .ci/run and the pull-request workflow.
HOUSE_CHECKS = [
    ".venv/bin/ruff check optests tests",
    ".venv/bin/ruff format --check optests tests",
    ".venv/bin/mypy --strict optests tests",
    "OPTESTS_WHEEL=1 .venv/bin/python -m pytest tests/test_wheel.py -q -p no:cacheprovider",
]


#: How each sweep command of .ci/run begins.
CI_SWEEP = ".venv/bin/python -m pytest opinfo_sweeps"


def test_ci_runs_the_house_checks_between_the_tests_and_the_sweep() -> None:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    tests = lines.index(".venv/bin/python -m pytest -n auto")
    sweep = next(i for i, line in enumerate(lines) if line.startswith(CI_SWEEP))
    for command in HOUSE_CHECKS:
        assert command in lines, f".ci/run does not run {command}"
        assert tests < lines.index(command) < sweep, f".ci/run: {command} is not between the tests and the sweep"
    workflow = _commands(ROOT / "ci" / "pull_request.yml")
    assert [c for c in HOUSE_CHECKS if c not in workflow] == []


def test_ci_run_is_valid_bash() -> None:
    done = subprocess.run(["bash", "-n", str(ROOT / ".ci" / "run")], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_every_torch_release_of_the_nightly_has_its_requirements_file() -> None:
    doc: dict[Any, Any] = yaml.safe_load((ROOT / "ci" / "nightly.yml").read_text())
    releases = doc["jobs"]["sweep"]["strategy"]["matrix"]["torch"]
    assert "2.13" in releases and len(releases) >= 2
    for release in releases:
        text = (ROOT / f"requirements-torch-{release}.txt").read_text()
        assert f"torch=={release}" in text or (release == "2.13" and "-r requirements.txt" in text)


def test_the_nightly_sweeps_every_backend() -> None:
    """aot_eager in the sweep job; every other backend (and a Dynamo one) in sweep-backends, each
    with a tag fit for a file and an artifact name, and a selection."""
    from optests import _backends

    jobs = yaml.safe_load((ROOT / "ci" / "nightly.yml").read_text())["jobs"]
    assert "--optests-backends" not in str(jobs["sweep"])  # the default: aot_eager
    matrix = jobs["sweep-backends"]["strategy"]["matrix"]
    swept = {_backends.DEFAULT_BACKEND, *matrix["backend"]}
    assert set(_backends.BACKENDS) <= swept and any(b.startswith(_backends.DYNAMO) for b in swept)
    extra = {i["backend"]: (i["tag"], i["select"]) for i in matrix["include"]}
    assert set(extra) == set(matrix["backend"])
    assert all(re.fullmatch(r"[\w.-]+", tag) and select for tag, select in extra.values())
    assert set(matrix["mode"]) == {"static", "dynamic"}  # the -nofunc modes do not apply under torch.compile


def _ci_run_sweeps() -> list[list[str]]:
    """The sweep commands of .ci/run, as words (continuation lines joined)."""
    text = (ROOT / ".ci" / "run").read_text().replace("\\\n", " ")
    return [shlex.split(line) for line in text.splitlines() if line.startswith(CI_SWEEP)]


def test_ci_run_sweeps_every_op_in_both_modes_with_valid_options() -> None:
    """Every --optests-* value of .ci/run's sweeps parses; static checks every sample, dynamic
    some of every op's; each judged strictly against the committed registry, its own results file."""
    options = {f"--optests-{o.name}": o for o in _settings.OPTIONS}
    sweeps = _ci_run_sweeps()
    modes: dict[str, str] = {}
    results = set()
    for words in sweeps:
        given = dict(w.split("=", 1) for w in words if w.startswith("--optests-") and "=" in w)
        for name, value in given.items():
            assert name in options, f".ci/run: unknown option {name}"
            options[name].parse(name, value)  # raises on a bad value
        assert "--optests-strict-registry" in words and "--optests-ops" not in given
        modes[given["--optests-modes"]] = given.get("--optests-select", "all")
        results.add(given["--optests-results"])
    assert modes == {"static": "all", "dynamic": "first:5"}
    assert len(results) == len(sweeps)
