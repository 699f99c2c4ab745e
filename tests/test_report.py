"""``optests report``: an issue-ready markdown file per cause, and an index (issue 49, item 4)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sweepdir import OptestsCli

from optests import _report
from optests._findings import Outcome, Stage
from optests._key import Mode, SampleKey
from optests._known import CATALOG_VERSION
from optests._results import SampleResult, write

ROOT = Path(__file__).resolve().parents[1]
#: A committed sweep of module_db: 113 failures of 4 causes, each op's samples small enough to check again quickly.
MODULES = ROOT / "sweep-results" / "modules" / "2026-11-25-torch-2.13.0-cpu-float32-static-module_db.json.gz"
#: A database that does not import here: its ops are not found, and their reports say so.
ELSEWHERE = "optests_report_no_such_module:ops"


def _record(op: str, sample: int, stage: Stage, message: str, mode: str = "static") -> SampleResult:
    key = SampleKey(op, "", Mode(mode), "float32", "cpu", sample)
    return SampleResult(key, ELSEWHERE, Outcome.FAILED, stage, message, 0.1)


def _json_block(text: str) -> dict[str, object]:
    found = re.search(r"## Machine-readable\n\n```json\n(.*?)\n```", text, re.S)
    assert found is not None, text
    data: dict[str, object] = json.loads(found[1])
    return data


def _synthetic(tmp_path: Path) -> Path:
    records = [
        *(_record("alpha", i, Stage.FORWARD, f"out=max abs diff {i}.5, but expected equal [alpha static sample {i}]") for i in range(25)),
        *(_record("beta", i, Stage.TRACE, f"compiled call=raised KeyError: {i} [beta static sample {i}]") for i in range(2)),
        *(_record("beta", i, Stage.TRACE, f"compiled call=raised KeyError: {i} [beta dynamic sample {i}]", "dynamic") for i in range(2)),
    ]  # fmt: skip
    path = tmp_path / "run.json"
    write(path, records, {"torch": "2.13.0+cpu", "python": "3.11.7", "platform": "Linux-x", "date": "2026-11-25T20:59:59+00:00"})
    return path


def test_a_report_per_cause_and_an_index(tmp_path: Path, optests_cli: OptestsCli) -> None:
    """Two causes, 29 failures: one file each, named stably, with the environment, the affected
    ops and ids (counted; the first 20 listed), the history's runs, a JSON block, and for an op
    that cannot be found here a repro that says why there is none."""
    results = _synthetic(tmp_path)
    assert optests_cli(["history", "ingest", results, "--db", "h.db"], tmp_path).returncode == 0
    done = optests_cli(["report", results, "--history", "h.db", "--out", "out"], tmp_path)
    assert (done.returncode, done.stderr) == (0, ""), done.stdout
    assert done.stdout == "out: 2 causes of 29 failures not expected, one file each; index.md lists them\n"
    out = tmp_path / "out"
    files = sorted(p.name for p in out.iterdir())
    assert len(files) == 3 and "index.md" in files
    index = (out / "index.md").read_text()
    assert "29 failures the registry does not expect, 2 causes" in index
    alpha_name = next(f for f in files if f.startswith("forward-call-aot_eager-"))
    beta_name = next(f for f in files if f.startswith("trace-call-aot_eager-"))
    assert index.index(alpha_name) < index.index(beta_name)  # the largest first
    alpha = (out / alpha_name).read_text()
    assert alpha.startswith("# forward/call/aot_eager: out=max abs diff N, but expected equal\n")
    assert "- torch 2.13.0+cpu (git version not recorded), Python 3.11.7, OS Linux-x, CPU not recorded" in alpha
    assert "25 samples of 1 op: `alpha` (25)" in alpha and "Sample ids (20 of 25):" in alpha
    assert "- `static-float32-cpu-alpha-sample2`\n- `static-float32-cpu-alpha-sample3`" in alpha  # 2 before 10
    assert f"No runnable repro: the op alpha is not found in {ELSEWHERE} here" in alpha
    assert "- torch 2.13.0+cpu, 2026-11-25T20:59:59+00:00" in alpha  # from the history
    facts = _json_block(alpha)
    assert facts["count"] == 25 and facts["ops"] == {"alpha": 25} and len(facts["ids"]) == 25  # type: ignore[arg-type]
    assert (
        facts["cause"] == "forward/call/aot_eager: out=max abs diff N, but expected equal"
        and facts["catalog_version"] == CATALOG_VERSION
    )
    beta = _json_block((out / beta_name).read_text())
    assert (beta["count"], beta["modes"]) == (4, ["static", "dynamic"])

    # the registry expects beta's: only alpha's cause is reported, unless --all
    entry = {"op": "beta", "variant": "", "dtype": "float32", "device": "cpu", "status": "xfail", "stage": "trace", "reason": "r"}
    entries = [{**entry, "mode": m, "samples": [0, 1]} for m in ("static", "dynamic")]
    (tmp_path / "reg.json").write_text(json.dumps({"schema_version": 1, "entries": entries}))
    done = optests_cli(["report", results, "--registry", "reg.json", "--out", "expected"], tmp_path)
    assert done.stdout == "expected: 1 cause of 25 failures not expected, one file each; index.md lists them\n", done.stderr
    assert sorted(p.name for p in (tmp_path / "expected").iterdir()) == sorted([alpha_name, "index.md"])
    done = optests_cli(["report", results, "--registry", "reg.json", "--all", "--out", "every"], tmp_path)
    assert done.stdout == "every: 2 causes of 29 failures, one file each; index.md lists them\n"


def test_a_report_stopped_before_its_end_still_writes_an_index_that_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C during the second cause's repro: the first cause's file is whole, and index.md lists
    it and says that one cause has no file."""
    made = _report.make_repro
    calls: list[int] = []

    def stopped_at_the_second(*args: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return made(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_report, "make_repro", stopped_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        _report.write([str(_synthetic(tmp_path))], tmp_path / "out")
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert len(written) == 2 and "index.md" in written, written
    index = (tmp_path / "out" / "index.md").read_text()
    assert "25 failures the registry does not expect, 1 cause" in index
    assert "**Stopped after 1 of 2 causes**: 1 has no file here; run the report again for every cause." in index
    assert next(n for n in written if n != "index.md") in index


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["missing.json", "--out", "o"], "optests report: error: missing.json: no such file"),
        (["notes.json", "--out", "o"], "optests report: error: notes.json: "),
        (["run.json", "--out", "run.json"], "optests report: error: --out run.json: not a folder"),
        (["run.json", "--out", "o", "--history", "none.db"], "optests report: error: --history none.db: no such file"),
        (["run.json", "--out", "o", "--timeout", "soon"], "optests report: error: --timeout: "),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, optests_cli: OptestsCli, args: list[str], error: str) -> None:
    _synthetic(tmp_path)
    (tmp_path / "notes.json").write_text('{"these": "are notes"}\n')
    done = optests_cli(["report", *args], tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.startswith(error) and done.stderr.count("\n") == 1, done.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.slow  # about 2 minutes on a loaded 2-core machine: 4 samples checked again, 8 repros run
def test_a_committed_sweep_gives_a_file_per_cause_each_with_a_repro_that_runs(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "optests"), "report", str(MODULES), "--out", "out"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "out: 4 causes of 113 failures not expected, one file each; index.md lists them\n"
    out = tmp_path / "out"
    reports = sorted(p for p in out.glob("*.md") if p.name != "index.md")
    assert len(reports) == 4
    index = (out / "index.md").read_text()
    for report in reports:
        text = report.read_text()
        assert f"]({report.name})" in index
        assert "The repro reproduces it (exit status 1)." in text, text
        script = re.search(r"<details><summary>repro script</summary>\n\n```python\n(.*?)\n```\n\n</details>", text, re.S)
        assert script is not None
        # the inline script, beside the data file it loads (where it has one), runs and reproduces
        name = re.search(r"The standalone repro \(`repros/([^`]+)`", text)
        assert name is not None
        here = tmp_path / "run" / report.stem
        here.mkdir(parents=True)
        (here / name[1]).write_text(script[1] + "\n")
        saved = out / "repros" / name[1].replace(".py", ".pt")
        if saved.exists():
            (here / saved.name).write_bytes(saved.read_bytes())
        ran = subprocess.run([sys.executable, name[1]], cwd=here, capture_output=True, text=True, check=False, timeout=300)
        assert ran.returncode == 1 and "REPRODUCED" in ran.stdout, ran.stdout + ran.stderr
        assert _json_block(text)["smallest"]["status"] == "The repro reproduces it (exit status 1)."  # type: ignore[index]
