"""One path from a sample to its record: every entry point gives one sample the same record, and
the compile step is a backend, part of a sample's identity."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sweepdir import install_sweep, run_cli, run_inline

# optests._author (and with it the check and torch._dynamo) is imported here, before pytester
# snapshots sys.modules: the snapshot would drop what check_op imports inside a pytester test, and
# torch cannot import its test ops twice in one process
import optests._author

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "sweep_fixtures"
BIN = Path(sys.executable).parent

#: sin; logaddexp2, whose one sample every transform derives from; a custom op of custom_op_db
#: (every transform, too): the first two samples of each, as every transform and pattern derives
#: from each
OPS = ("sin", "logaddexp2", "NumpyTakeCustomOp")


def _by_id(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each record by id, every field but its duration."""
    return {str(r["id"]): {k: v for k, v in r.items() if k != "duration"} for r in records}


@pytest.mark.slow
def test_one_sample_gives_one_record_in_every_entry_point(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install_sweep(pytester.path)
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    swept = run_inline(
        pytester,
        "-p", "no:cacheprovider", "-n", "2", f"--optests-ops={','.join(OPS)}", "--optests-transforms=all",
        "--optests-select=first:2", "--optests-results=sweep.json", "--optests-registry=none.json",
    )  # fmt: skip
    assert swept.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), swept.stdout.str()  # findings are red
    sweep = _by_id(json.loads((pytester.path / "sweep.json").read_text())["samples"])

    monkeypatch.setattr(sys, "path", list(sys.path))  # optests check puts the working directory on it
    done = run_cli(capsys, "check", *OPS, "--select", "first:2", "--json", "check.json")
    assert done.returncode in (0, 1), done.stdout + done.stderr
    cli = _by_id(json.loads((pytester.path / "check.json").read_text())["samples"])

    api = _by_id([c.record().to_json() for op in OPS for c in optests.check_op(op, select="first:2")])

    assert {r["op"] for r in sweep.values()} == set(OPS)
    assert {r["transform"] for r in sweep.values() if r.get("transform")} >= {
        "duplicated-0",
        "aliased-0",
        "grad-subset-0",
        "resized-0",
    }
    assert sweep == cli
    assert sweep == api


_TRIVIAL = '''
"""A second backend for the seam test: no compiler at all, the wrapper runs eagerly."""
from optests import _backends


class Eager:
    nofunc = True
    same_random = True
    opinfo_test = "TestEagerFusionOpInfo"
    free_strides = frozenset()

    def compile(self, fn, *, dynamic, disable_functionalization):
        return fn


_backends.register("trivial", Eager())
'''

_SAMPLES = """
from corpus import BUGS

def samples():
    func, make, _, _ = BUGS["fake_wrong_dtype"]
    return [make()]
"""


@pytest.mark.slow
def test_a_second_backend_gets_its_own_ids_and_registry_scope(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A trivial backend defined here runs through the sweep and ``optests check``; the aot_eager
    entries for a buggy op's samples are not judged against its samples (which pass)."""
    install_sweep(pytester.path)
    (pytester.path / "trivial_backend.py").write_text(_TRIVIAL)
    (pytester.path / "conftest.py").write_text((pytester.path / "conftest.py").read_text() + "\nimport trivial_backend  # noqa\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(pytester.path), str(FIXTURES), str(TESTS)]))
    sweep = [
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
        "--optests-dbs=buggy_ops:ops",
        "--optests-ops=buggy_fake",
        "--optests-modes=static",
    ]
    accepted = pytester.runpytest_subprocess(*sweep, "--optests-accept")  # aot_eager's findings, recorded
    assert accepted.ret == pytest.ExitCode.OK, accepted.stdout.str()
    entries = json.loads((pytester.path / "expected_failures.json").read_text())["entries"]
    assert entries and all("backend" not in e for e in entries)

    both = pytester.runpytest_subprocess(
        *sweep, "--optests-backends=aot_eager,trivial", "--optests-strict-registry", "--optests-results=r.json", "-v"
    )
    assert both.ret == pytest.ExitCode.OK, both.stdout.str()  # trivial's samples pass, and are not unexpected passes
    records = {r["id"]: r for r in json.loads((pytester.path / "r.json").read_text())["samples"]}
    assert records["static-float32-cpu-buggy_fake-sample0"]["verdict"] == "xfailed"
    assert "backend" not in records["static-float32-cpu-buggy_fake-sample0"]
    trivial = records["static-float32-cpu-buggy_fake-sample0@trivial"]
    assert (trivial["outcome"], trivial["verdict"], trivial["backend"]) == ("passed", "passed", "trivial")
    both.stdout.fnmatch_lines(["*PASSED *[[]static-float32-cpu-buggy_fake-sample0@trivial[]]*"])

    (pytester.path / "mysamples.py").write_text(_SAMPLES)
    check = [
        str(BIN / "optests"),
        "check",
        "optests_corpus::fake_wrong_dtype",
        "--import",
        "corpus",
        "--import",
        "trivial_backend",
    ]
    check += ["--samples", "mysamples:samples", "--modes", "static", "--transforms", "none", "--json", "c.json"]
    registry = {
        "schema_version": 4,
        "entries": [
            {"op": "optests_corpus::fake_wrong_dtype", "variant": "", "mode": "static", "dtype": "float32", "device": "cpu",
             "status": "xfail", "stage": "metadata", "reason": "its fake kernel says float64", "samples": "0"},
        ],
    }  # fmt: skip
    (pytester.path / "expected.json").write_text(json.dumps(registry))
    done = subprocess.run(
        [*check, "--backends", "aot_eager,trivial", "--registry", "expected.json"],
        cwd=pytester.path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    checked = {r["id"]: r for r in json.loads((pytester.path / "c.json").read_text())["samples"]}
    assert checked["static-float32-cpu-optests_corpus::fake_wrong_dtype-sample0"]["stage"] == "metadata"
    assert checked["static-float32-cpu-optests_corpus::fake_wrong_dtype-sample0@trivial"]["outcome"] == "passed"
    unknown = subprocess.run([*check, "--backends", "nosuch"], cwd=pytester.path, capture_output=True, text=True, check=False)
    assert unknown.returncode == 2 and "unknown backend 'nosuch'" in unknown.stderr, unknown.stderr
