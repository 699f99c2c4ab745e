"""Input transforms end to end: the sweep with ``--optests-transforms`` naming every input
transform over the transform corpus as OpInfos, and ``optests check`` / ``check_op`` likewise.
(Call patterns have a corpus of their own, ``test_patterns.py``: under them, compiled code drops
the second-order gradient of this corpus's matmul ops, a finding of ``backward``.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import transform_corpus as corpus
from sweepdir import install_sweep, run_inline

import optests
from optests._key import INPUT_TRANSFORMS, transform_name

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "sweep_fixtures"
BIN = Path(sys.executable).parent
#: Every input transform, as the options take them.
INPUTS = ",".join(INPUT_TRANSFORMS)


def _failures(records: list[dict[str, object]]) -> set[tuple[str, str, str, str]]:
    """(op, mode, transform name, stage) of every failed record."""
    return {
        (str(r["op"]), str(r["mode"]), transform_name(str(r["transform"])), str(r["stage"]))
        for r in records
        if r["outcome"] == "failed"
    }


@pytest.mark.slow
def test_the_sweep_flags_each_bug_through_its_transform_and_accepts_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_sweep(pytester.path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FIXTURES), str(TESTS)]))
    args = ["-p", "no:cacheprovider", "-n", "2", "--optests-dbs=transform_ops:ops", f"--optests-transforms={INPUTS}"]
    result = run_inline(pytester, *args, "--optests-results=r.json", "--optests-accept")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    records = json.loads((pytester.path / "r.json").read_text())["samples"]
    found = _failures(records)
    for name, bug in corpus.BUGS.items():
        for mode in ("static", "dynamic"):
            assert (f"bug_{name}", mode, bug.transform, bug.stage) in found, (name, mode)
    assert not {f for f in found if f[0].startswith("correct_")}  # no correct op is flagged
    assert not {f for f in found if not f[2]}  # nor any plain sample
    derived = {str(r["transform"]) for r in records}
    assert {transform_name(t) for t in derived if t} == set(INPUT_TRANSFORMS)
    entries = json.loads((pytester.path / "expected_failures.json").read_text())["entries"]
    assert {(e["op"], e["mode"], transform_name(e["transform"]), e["stage"]) for e in entries} == found
    # the accepted registry holds; with transforms off, its transform entries are out of the selection
    for extra in ([], ["--optests-transforms=none"]):
        again = run_inline(pytester, *args, *extra, "--optests-strict-registry")
        assert again.ret == pytest.ExitCode.OK, again.stdout.str()


@pytest.mark.parametrize("name", sorted(corpus.BUGS))
def test_check_op_flags_each_bug_by_its_input_transform(name: str) -> None:
    bug = corpus.BUGS[name]
    checks = optests.check_op(bug.func, [bug.make()], transforms=INPUTS)
    failed = {(transform_name(c.key.transform), c.result.stage) for c in checks if c.result.outcome is optests.Outcome.FAILED}
    assert (bug.transform, bug.stage) in failed
    assert all(transform for transform, _ in failed)  # the plain sample passes


@pytest.mark.parametrize("name", sorted(corpus.CORRECT))
def test_check_op_passes_each_correct_op_under_every_input_transform(name: str) -> None:
    op = corpus.CORRECT[name]
    checks = optests.check_op(op.func, [op.make()], transforms=INPUTS)
    assert {c.result.outcome for c in checks} <= {optests.Outcome.PASSED, optests.Outcome.NOT_APPLICABLE}
    assert any(c.key.transform for c in checks)


_SAMPLES = """
import transform_corpus as corpus

def every_other():
    return [corpus.BUGS["every_other"].make()]

def matmul():
    return [corpus.CORRECT["matmul"].make()]
"""


def test_optests_check_applies_every_input_transform_and_shrinks_a_resized_finding(tmp_path: Path) -> None:
    (tmp_path / "tsamples.py").write_text(_SAMPLES)
    env = {**os.environ, "PYTHONPATH": str(TESTS)}

    def check(op: str, func: str, *extra: str) -> subprocess.CompletedProcess[str]:
        command = [str(BIN / "optests"), "check", op, "-v", "--import", "tsamples", "--samples", f"tsamples:{func}", *extra]
        command += [] if "--transforms" in extra else ["--transforms", INPUTS]
        return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, check=False)

    bad = check("optests_tcorpus::every_other", "every_other", "--json", "out.json")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "FAIL  static         float32  sample 0 resized-0 [metadata]" in bad.stdout
    # the finding is the sweep's; the sizes it shrinks to go to its repro, whose file names its transform
    assert "shrunk: sizes 3->2, 4->3 fail at metadata too; the repro uses them" in bad.stdout, bad.stdout
    assert "every_other-static-float32-sample0-resized-0.py" in bad.stdout
    records = json.loads((tmp_path / "out.json").read_text())["samples"]
    assert {r["transform"] for r in records} >= {"", "transposed-0", "resized-0", "grad-subset-0"}
    good = check("optests_tcorpus::matmul", "matmul")
    assert good.returncode == 0, good.stdout + good.stderr
    plain = check("optests_tcorpus::every_other", "every_other", "--transforms", "none")
    assert plain.returncode == 0 and "derived" not in plain.stdout
    wrong = check("optests_tcorpus::every_other", "every_other", "--transforms", "upside-down")
    assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1 and "unknown transform 'upside-down'" in wrong.stderr
