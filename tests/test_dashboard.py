"""Two real sweeps that differ like two nights do, their diff, and the dashboard in a real browser;
the committed sweeps of two configurations (torch 2.13 CPU, torch 2.11 CUDA) in the browser too;
and the page's parts (configurations, comparison, failing samples, repro commands) without one.

The browser tests need Debian's ``chromium`` (``apt-get install chromium``; ``.ci/run`` installs
it) and the ``playwright`` package (a test extra); they skip, saying which is missing, without them,
and fail instead where ``OPTESTS_REQUIRE_BROWSER`` is set.
Set ``OPTESTS_SCREENSHOTS=DIR`` to keep the screenshots they take (each prints its path).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from sweepdir import install_sweep

from optests import Outcome, Stage, Verdict, cli
from optests import _dashboard as dashboard
from optests._history import History
from optests._key import Mode, SampleKey
from optests._results import SampleResult

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "sweep_fixtures"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: Night 1 runs static only, with alpha and gamma broken at forward; night 2 adds dynamic, fixes
#: alpha, breaks beta at forward, and breaks gamma at metadata instead.
NIGHTS = [("alpha=forward,gamma=forward", "static"), ("beta=forward,gamma=metadata", "static,dynamic")]


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The results files of two real sweeps over tests/sweep_fixtures/nightly_ops.py."""
    where = tmp_path_factory.mktemp("nights")
    install_sweep(where)
    paths = []
    for i, (broken, modes) in enumerate(NIGHTS, 1):
        path = where / f"night{i}.json"
        env = {**os.environ, "PYTHONPATH": str(FIXTURES), "NIGHTLY_BROKEN": broken}
        subprocess.run(
            [sys.executable, "-m", "pytest", "test_aot_autograd.py", "-q", "-p", "no:cacheprovider", "--tb=no",
             "--optests-dbs=nightly_ops:ops", f"--optests-modes={modes}", f"--optests-results={path}"],
            cwd=where, env=env, check=False, capture_output=True,
        )  # fmt: skip
        assert path.is_file(), f"night {i} wrote no results"
        paths.append(path)
    return paths


def _ids(kind: str, ops: list[str], modes: str = "static") -> set[tuple[str, str]]:
    return {(kind, f"{mode}-float32-cpu-{op}-sample{i}") for op in ops for mode in modes.split(",") for i in range(4)}


def test_the_diff_lists_exactly_what_changed(nights: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["diff", *map(str, nights), "--format", "json"])
    changes = json.loads(capsys.readouterr().out)["changes"]
    assert code == 1  # beta's new failures
    assert {(c["kind"], c["id"]) for c in changes} == (
        _ids("new_failure", ["beta"]) | _ids("fix", ["alpha"]) | _ids("stage_change", ["gamma"])
        | _ids("added", ["alpha", "beta", "gamma"], "dynamic")
    )  # fmt: skip
    gamma = next(c for c in changes if c["kind"] == "stage_change")
    assert (gamma["old"]["stage"], gamma["new"]["stage"]) == ("forward", "metadata")


def _browser() -> Any:
    """Skips without a browser, unless OPTESTS_REQUIRE_BROWSER is set (as .ci/run sets it)."""
    missing = None
    if CHROMIUM is None:
        missing = "no chromium on PATH: install Debian's chromium package (apt-get install chromium)"
    else:
        try:
            from playwright import sync_api
        except ImportError:
            missing = "playwright is not installed (pip install -e '.[test]')"
    if missing is not None:
        if os.environ.get("OPTESTS_REQUIRE_BROWSER"):
            pytest.fail(f"OPTESTS_REQUIRE_BROWSER is set, but {missing}", pytrace=False)
        pytest.skip(missing)
    return sync_api


@contextlib.contextmanager
def _dashboard(sync_api: Any, results: Sequence[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Any]:
    """The dashboard of a history that ingested ``results`` in this order, open in a page."""
    db, site = tmp_path / "history.db", tmp_path / "site"
    assert cli.main(["history", "ingest", *map(str, results), "--db", str(db)]) == 0
    assert cli.main(["dashboard", "--db", str(db), "--out", str(site)]) == 0
    capsys.readouterr()
    with _page(sync_api) as page:
        page.goto((site / "index.html").as_uri())
        yield page


@contextlib.contextmanager
def _page(sync_api: Any) -> Iterator[Any]:
    """A page in headless Chromium; on leaving, no script error happened and nothing was fetched
    from anywhere but file:// (the dashboard works offline)."""
    requests: list[str] = []
    errors: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            yield page
        finally:
            browser.close()
    assert errors == []
    assert all(url.startswith("file://") for url in requests), requests


def _screenshot(page: Any, tmp_path: Path, name: str, full_page: bool = True) -> None:
    """Saved under $OPTESTS_SCREENSHOTS if set, else in the test's temporary folder; printed."""
    keep = Path(os.environ.get("OPTESTS_SCREENSHOTS") or tmp_path)
    keep.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(keep / name), full_page=full_page)
    print(f"screenshot: {keep / name}")


def test_dashboard_in_a_browser(nights: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sync_api = _browser()
    with _dashboard(sync_api, nights, tmp_path, capsys) as page:
        expect = sync_api.expect

        section = page.locator("section.configuration")
        expect(section).to_have_count(1)  # two nights of one configuration
        expect(section.locator(".regressions-count")).to_have_text("4 new failures")
        expect(section.locator(".fixes-count")).to_have_text("4 fixes")
        expect(page.locator("#latest")).to_contain_text("2 runs in the history, in 1 configuration")
        # Regressions since the previous night, each with its sample and message.
        failures = page.locator("table.new_failure tbody tr")
        expect(failures).to_have_count(4)
        expect(failures.first).to_contain_text("beta")
        expect(failures.first).to_contain_text("passed -> forward")
        expect(failures.first).to_contain_text("but expected equal to eager within tolerance [beta static float32 cpu sample 0]")
        expect(page.locator("table.fix tbody tr")).to_have_count(4)
        expect(page.locator("table.fix tbody tr").first).to_contain_text("alpha")
        expect(page.locator("table.stage_change tbody tr").first).to_contain_text("forward -> metadata")
        expect(page.locator("h4.added + p")).to_contain_text("12 samples over 3 ops: dynamic 12")
        # The trend: one line per mode; static has two points, dynamic one.
        expect(page.locator("svg.trend polyline")).to_have_count(2)
        expect(page.locator('svg.trend polyline[data-mode="static"]')).to_have_attribute("points", _two_points())
        # The status matrix, marked where things changed, each op with its history strip.
        beta = page.locator('.matrix tr[data-op="beta"]')
        expect(beta.locator("td").nth(1)).to_have_text("0/4 ▼ new")  # and no registry expects it
        expect(beta.locator("td").nth(1)).to_have_class("v-new regressed")
        expect(beta.locator(".strip i")).to_have_count(2)
        expect(beta.locator(".strip i").nth(0)).to_have_class("p")  # night 1: passed
        expect(beta.locator(".strip i").nth(1)).to_have_class("n")  # night 2: new failures
        expect(page.locator('.matrix tr[data-op="gamma"] .strip')).to_have_class("strip all-n")
        expect(page.locator('.matrix tr[data-op="alpha"] td').nth(1)).to_have_text("4/4 ▲")
        # A failing cell shows its samples; these ops are no OpInfo database's, so no command.
        beta.locator("td").nth(1).click()
        expect(page.locator("#detail")).to_be_visible()
        expect(page.locator("#detail-title")).to_have_text("beta static: 4 of 4 samples fail")
        expect(page.locator("#detail-samples tbody tr")).to_have_count(4)
        expect(page.locator("#detail-samples tbody tr").first).to_contain_text("[beta static float32 cpu sample 0]")
        expect(page.locator("#detail-samples tbody tr").first).to_contain_text("optests check names the ops of op_db")
        page.locator("#detail-close").click()
        expect(page.locator("#detail")).to_be_hidden()
        rows = section.locator(".matrix tbody tr:visible")
        expect(rows).to_have_count(3)
        section.locator(".only").check()
        expect(rows).to_have_count(2)  # alpha passes everywhere now
        section.locator(".only").uncheck()
        section.locator(".filter").fill("gam")
        expect(rows).to_have_count(1)
        expect(section.locator(".shown")).to_have_text("1 ops")
        section.locator(".filter").fill("")
        expect(section.locator("table.runs tbody tr")).to_have_count(2)
        expect(page.locator("#compare")).to_have_count(0)  # one configuration: nothing to compare

        _screenshot(page, tmp_path, "dashboard.png")


def _two_points() -> Any:
    return re.compile(r"^[\d.]+,[\d.]+ [\d.]+,[\d.]+$")


CPU = ROOT / "sweep-results" / "2026-11-23-torch-2.13.0-cpu-float32-static-dynamic.json"
CUDA = ROOT / "sweep-results" / "2026-11-22-torch-2.11.0-cu130-cuda-float32-static-dynamic.json"


def test_configurations_in_a_browser(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The committed sweeps of two configurations (torch 2.13 on CPU, 2.11 on CUDA), ingested one
    after the other: each is the first run of its own, and the comparison sets them side by side."""
    sync_api = _browser()
    with _dashboard(sync_api, [CPU, CUDA], tmp_path, capsys) as page:
        expect = sync_api.expect
        cpu = page.locator('section[data-config="torch 2.13, cpu, float32, transforms none"]')
        cuda = page.locator('section[data-config="torch 2.11, cuda, float32, transforms none"]')
        # (a) No diff crosses configurations: neither run is the other's previous one.
        for section in (cpu, cuda):
            expect(section.locator(".since")).to_have_text(re.compile("^This is the first run of this configuration"))
        expect(page.locator(".change-summary")).to_have_count(0)
        # (b) The comparison marks an op that differs: CUDA fails 3 of the 6 samples it has.
        softmax = page.locator('#compare tr[data-op="_softmax_backward_data"] td')
        expect(softmax.nth(0)).to_have_text("3/3")
        expect(softmax.nth(0)).to_have_class("v-pass differs")
        expect(softmax.nth(1)).to_have_class("v-new differs")  # the CUDA run's registry did not expect it
        expect(page.locator('#compare tr[data-op="__radd__"] td.differs')).to_have_count(0)
        page.locator("#compare").locator("xpath=..").locator(".only").check()
        expect(page.locator('#compare tr[data-op="_softmax_backward_data"]')).to_be_visible()
        expect(page.locator('#compare tr[data-op="__radd__"]')).to_be_hidden()
        expect(page.locator('#compare tbody tr:visible[data-differs="0"]')).to_have_count(0)
        # (c) A failing cell shows its samples, their messages and the command that checks them.
        unsafe_split = cpu.locator('.matrix tr[data-op="unsafe_split"] td').nth(1)  # static
        expect(unsafe_split).to_have_class("v-xfail")  # the registry expects it: not painted as a new failure
        expect(unsafe_split).to_have_text("0/2 xfail")
        unsafe_split.click()
        expect(page.locator("#detail-title")).to_have_text("unsafe_split static: 2 of 2 samples fail")
        expect(page.locator("#detail-samples tbody tr")).to_have_count(2)
        first = page.locator("#detail-samples tbody tr").first
        expect(first.locator("td.verdict")).to_have_text("expected failure")  # the committed registry's
        expect(first.locator("td").nth(3)).to_have_text(
            "traced out[0] aliases=[], but expected [args[0]] [unsafe_split static float32 cpu sample 0]"
        )
        expect(first.locator("td").nth(4)).to_have_text(
            "optests check unsafe_split --modes static --dtypes float32 --device cpu --transforms none"
        )
        softmax.nth(1).click()  # and in the comparison
        expect(page.locator("#detail-where")).to_contain_text("torch 2.11, cuda, float32, transforms none")
        expect(first).to_contain_text("expected scalar type Float but found Half")
        expect(first).to_contain_text(
            "optests check _softmax_backward_data --modes static --dtypes float32 --device cuda --transforms none"
        )
        page.locator("#compare").scroll_into_view_if_needed()
        _screenshot(page, tmp_path, "configurations.png", full_page=False)  # the whole page is 700 ops long, three times


# -- the page's parts, without a browser --------------------------------------------------------------


def _rec(op: str, sample: int, outcome: str = "passed", device: str = "cpu", transform: str = "") -> SampleResult:
    key = SampleKey(op, "", Mode.STATIC, "float32", device, sample, transform=transform)
    failed = outcome == "failed"
    message = f"out=1, but expected 2 [{key.context}]\nmore detail" if failed else ""
    return SampleResult(key, "op_db", Outcome(outcome), Stage.FORWARD if failed else None, message)


def test_the_repro_command_checks_the_sample_on_its_device_dtype_mode_and_transform() -> None:
    assert dashboard.repro_command(_rec("nn.functional.pad", 3)) == (
        "optests check nn.functional.pad --modes static --dtypes float32 --device cpu --transforms none"
    )
    assert dashboard.repro_command(_rec("sin", 3, device="cuda", transform="grad-subset-1")) == (
        "optests check sin --modes static --dtypes float32 --device cuda --transforms grad-subset"
    )
    theirs = dataclasses.replace(_rec("alpha", 0), db="nightly_ops:ops")
    assert dashboard.repro_command(theirs) is None  # optests check cannot name it


def test_configurations_that_differ_are_marked() -> None:
    base = dashboard.cells([_rec("sin", 0), _rec("sin", 1, "failed")])[("sin", "static")]
    same = dashboard.cells([_rec("sin", 0, device="cuda"), _rec("sin", 1, "failed", device="cuda")])[("sin", "static")]
    other = dashboard.cells([_rec("sin", 0, "failed"), _rec("sin", 1)])[("sin", "static")]  # 1/2 too, but sample 0 fails
    more = dashboard.cells([_rec("sin", 0), _rec("sin", 1, "failed"), _rec("sin", 2)])[("sin", "static")]
    assert not dashboard.differs([base, same])
    assert dashboard.differs([base, other])
    assert dashboard.differs([base, more])
    assert dashboard.differs([base, None])  # missing from one


def _history(tmp_path: Path, runs: list[tuple[str, str, list[SampleResult]]]) -> History:
    db = History(tmp_path / "h.db", create=True)
    for date, torch, records in runs:
        db.ingest({"torch": torch, "date": date}, records, f"{date}.json")
    return db


def test_the_previous_run_is_the_previous_run_of_its_configuration(tmp_path: Path) -> None:
    cpu = [_rec("sin", 0), _rec("sin", 1)]
    cuda = [_rec("sin", 0, "failed", device="cuda")]
    with _history(
        tmp_path,
        [("2026-11-20", "2.13.0+cpu", cpu), ("2026-11-21", "2.11.0+cu130", cuda), ("2026-11-22", "2.13.0+cpu", cpu[:1])],
    ) as db:
        groups = dashboard.by_configuration(db.runs())
        assert [(c.label, [r.id for r in runs]) for c, runs in groups.items()] == [
            ("torch 2.13, cpu, float32, transforms none", [1, 3]),  # the newest first; run 2 is not run 3's previous
            ("torch 2.11, cuda, float32, transforms none", [2]),
        ]
        dashboard.build(db, tmp_path / "site")
    changes = json.loads((tmp_path / "site" / "changes.json").read_text())["configurations"]
    assert [(c["old_run"], c["new_run"], c["summary"]) for c in changes] == [
        (1, 3, {"added": 0, "fix": 0, "new_failure": 0, "outcome_change": 0, "removed": 1, "stage_change": 0, "unchanged": 1}),
        (None, 2, {}),
    ]
    page = (tmp_path / "site" / "index.html").read_text()
    assert "Since the previous run of this configuration (run 1, 2026-11-20T00:00:00+00:00)" in page
    assert page.count("This is the first run of this configuration") == 1  # CUDA's


def _failing_data(page: str) -> Any:
    start = page.index('<script type="application/json" id="failing-data">') + len(
        '<script type="application/json" id="failing-data">'
    )
    return json.loads(page[start : page.index("</script>", start)])


def test_a_failing_cell_lists_its_samples_up_to_a_cap(tmp_path: Path) -> None:
    records = [_rec("sin", i, "failed") for i in range(dashboard.MAX_FAILING + 5)]
    records += [_rec("sin", 0, "failed", transform="transposed-1"), _rec("cos", 0), _rec("cos", 1, "failed")]
    with _history(tmp_path, [("2026-11-20", "2.13.0+cpu", records)]) as db:
        dashboard.build(db, tmp_path / "site")
    page = (tmp_path / "site" / "index.html").read_text()
    data = _failing_data(page)
    cos, sin = sorted(data["cells"], key=lambda c: c[1])
    assert cos[:6] == [0, "cos", "static", 1, 2, 0]  # run, op, mode, failed, checked, more; then the samples

    def sample(s: list[int]) -> dict[str, Any]:  # a sample's fields by name, and its command
        return {**{f: data["values"][i] for f, i in zip(data["fields"], s)}, "command": s[-1]}

    (cos1,) = map(sample, cos[6])
    assert (cos1["sample"], cos1["stage"], cos1["command"]) == (1, "forward", 0)
    assert cos1["message"] == "out=1, but expected 2 [cos static float32 cpu sample 1]"  # the first line
    assert data["runs"] == ["run 1 (2026-11-20T00:00:00+00:00), torch 2.13, cpu, float32, transforms transposed"]
    assert data["commands"][0] == "optests check cos --modes static --dtypes float32 --device cpu --transforms none"
    assert sin[3:6] == [dashboard.MAX_FAILING + 6, dashboard.MAX_FAILING + 6, 6]
    assert [(s["sample"], s["transform"]) for s in map(sample, sin[6][:3])] == [(0, ""), (0, "transposed-1"), (1, "")]
    assert data["commands"][sample(sin[6][1])["command"]].endswith("--transforms transposed")
    assert '<tr data-op="cos" data-failing="1"><th>cos</th><td class="history"><span class="strip all-f"></span></td>' in page


def test_the_page_escapes_every_value_the_history_holds(tmp_path: Path) -> None:
    """A history database is a file anyone can edit, and SQLite keeps text in an INTEGER column:
    every column the page shows (each of ``runs``, a message, the per-run counts' modes) holding
    markup comes out as text, never as an element or attribute."""
    import sqlite3

    records = [_rec("sin", 0), _rec("sin", 1, "failed"), _rec("cos", 0, "failed")]
    with _history(tmp_path, [("2026-11-20", "2.13.0+cpu", records), ("2026-11-21", "2.13.0+cpu", records[:2])]):
        pass
    payload = '"><img src=x onerror=alert({})>'
    con = sqlite3.connect(tmp_path / "h.db")
    runs = [c[1] for c in con.execute("PRAGMA table_info(runs)") if c[1] != "id"]
    for column in runs:  # both runs alike, so that they stay one configuration
        con.execute(
            f"UPDATE runs SET {column} = ? || CASE WHEN ? THEN id ELSE '' END", (payload.format(column), column == "fingerprint")
        )
    con.execute("UPDATE messages SET text = ? || text", (payload.format("message"),))
    con.execute("UPDATE run_counts SET mode = ? WHERE run = 1", (payload.format("mode"),))  # run 2's matrix stays
    con.commit()
    con.close()
    with History(tmp_path / "h.db") as db:
        index = dashboard.build(db, tmp_path / "site")
    page = index.read_text()
    for column in [*runs, "message", "mode"]:
        if f"alert({column})" in page:  # shown: as text only
            assert f'"><img src=x onerror=alert({column})>' not in page, column
    assert "<img" not in page
    assert {"date", "torch", "samples", "source", "message", "mode", "backends"} <= set(re.findall(r"alert\((\w+)\)", page))


def _configurations(path: Path, torches: Sequence[str], samples: int) -> History:
    """Per torch release, a night where ``samples`` samples of two ops fail and the next where
    they all pass: that many fixes in each configuration."""
    ops = ("sin", "cos")
    db = History(path, create=True)
    for night, outcome in enumerate(("failed", "passed")):
        for torch in torches:
            db.ingest(
                {"torch": torch, "date": f"2026-11-2{night}"},
                [_rec(ops[i % 2], i, outcome) for i in range(samples)],
                f"{torch}-{night}.json",
            )
    return db


def test_changes_json_is_what_json_dumps_would_write_whole(tmp_path: Path) -> None:
    """Written a change at a time, ``changes.json`` is byte for byte the document it always was:
    per configuration, its runs, the summary and every change with both records."""
    from optests import _diff

    with _configurations(tmp_path / "h.db", ("2.12.0", "2.13.0"), 5) as db:
        db.ingest({"torch": "2.11.0", "date": "2026-11-22"}, [_rec("tan", 0)], "first.json")  # a first run: no diff
        dashboard.build(db, tmp_path / "site")
        whole = []
        for config, runs in dashboard.by_configuration(db.runs()).items():
            d = _diff.diff(db.records(runs[-2]), db.records(runs[-1])) if len(runs) > 1 else None
            whole.append(
                {"configuration": config.label, "old_run": runs[-2].id if d else None, "new_run": runs[-1].id,
                 **(_diff.to_json(d) if d else {"summary": {}, "changes": []})}
            )  # fmt: skip
    text = (tmp_path / "site" / "changes.json").read_text()
    assert text == json.dumps({"configurations": whole}, indent=2, sort_keys=True) + "\n"
    assert [len(c["changes"]) for c in whole] == [0, 5, 5]


def test_the_dashboard_holds_one_configuration_s_changes_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory is bounded by the page, not the history: four configurations of 3,000 fixes each
    take about the memory of one (``changes.json`` streamed, one configuration's runs read at a
    time), where holding every change would take four times as much."""
    import tracemalloc

    monkeypatch.setattr(dashboard, "MAX_LISTED", 10)  # the page lists a few: its size is not what is measured
    peaks, sizes = [], []
    for n, torches in enumerate((["2.13.0"], ["2.10.0", "2.11.0", "2.12.0", "2.13.0"])):
        with _configurations(tmp_path / f"h{n}.db", torches, 3000) as db:
            tracemalloc.start()
            try:
                dashboard.build(db, tmp_path / f"site{n}")
                peaks.append(tracemalloc.get_traced_memory()[1])
            finally:
                tracemalloc.stop()
        sizes.append((tmp_path / f"site{n}" / "changes.json").stat().st_size)
    assert sizes[1] > 3.9 * sizes[0]  # four times the changes were written
    assert peaks[1] < 1.6 * peaks[0], peaks


# -- verdicts, causes and flakes -------------------------------------------------------------------

#: A failure the catalog knows, and one it does not (a signature).
KNOWN_MESSAGE = "compiled grad[0] (second order)=None, but expected a tensor [{}]"
OTHER_MESSAGE = "out=1, but expected 2 [{}]"
HAS_FLAKY = "flaky" in {v.value for v in Verdict}


def _judged(
    op: str, sample: int, verdict: str | None, message: str = "", stage: Stage | None = None, transform: str = ""
) -> SampleResult:
    """A record of ``op`` with a verdict (None: unjudged); it failed where it has a message."""
    key = SampleKey(op, "", Mode.STATIC, "float32", "cpu", sample, transform=transform)
    outcome = Outcome.FAILED if message else Outcome.SKIPPED if verdict == "skipped" else Outcome.PASSED
    return SampleResult(
        key,
        "op_db",
        outcome,
        stage if message else None,
        message.format(key.context),
        verdict=Verdict(verdict) if verdict else None,
    )


def _night(known: int, other: int, flaky: bool = True) -> list[SampleResult]:
    """Records of each verdict: ``known`` expected failures of the known bug (op ``xf``), ``other``
    new failures of a signature (op ``nf``), a pass, an unexpected pass, a skip and a flake."""
    records = [_judged("ok", i, "passed") for i in range(3)]
    records += [_judged("xf", i, "xfailed", KNOWN_MESSAGE, Stage.BACKWARD, "backward-2") for i in range(known)]  # double backward
    records += [_judged("nf", i, "unexpected_failure", OTHER_MESSAGE, Stage.FORWARD) for i in range(other)]
    records += [_judged("fx", 0, "unexpected_pass"), _judged("sk", 0, "skipped")]
    if flaky and HAS_FLAKY:
        records.append(_judged("fl", 0, "flaky", OTHER_MESSAGE, Stage.FORWARD))
    return records


def test_every_verdict_is_shown_as_a_kind_of_its_own() -> None:
    """Each verdict maps to a kind, and the kinds the issue names are apart: an expected failure
    is not painted as a new one."""
    assert {v.value for v in Verdict} <= set(dashboard._BY_VERDICT)
    kinds = {v: dashboard._BY_VERDICT[v] for v in ("xfailed", "unexpected_failure", "unexpected_pass", "flaky", "skipped")}
    assert len(set(kinds.values())) == 5, kinds
    assert dashboard._BY_VERDICT["stage_changed"] == kinds["unexpected_failure"]
    assert len({k.tag for k in dashboard.KINDS}) == len(dashboard.KINDS)  # told apart in words, not by colour alone
    (cell,) = dashboard.cells([_judged("op", 0, "passed"), _judged("op", 1, "xfailed", OTHER_MESSAGE, Stage.FORWARD)]).values()
    assert cell.kind == "xfail"
    (cell,) = dashboard.cells(
        [_judged("op", 0, "xfailed", OTHER_MESSAGE, Stage.FORWARD), _judged("op", 1, None, OTHER_MESSAGE)]
    ).values()
    assert cell.kind == "failed"  # not judged: neither expected nor new


def test_the_registry_judges_the_records_that_carry_no_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from optests._registry import dump, parse

    records = [_judged("sin", 0, None, OTHER_MESSAGE, Stage.FORWARD), _judged("cos", 0, None, OTHER_MESSAGE, Stage.FORWARD)]
    with _history(tmp_path, [("2026-11-20", "2.13.0+cpu", records)]):
        pass
    registry = tmp_path / "expected.json"
    entry = {"op": "sin", "variant": "", "mode": "static", "dtype": "float32", "device": "cpu", "status": "xfail",
             "stage": "forward", "reason": "known", "samples": "0"}  # fmt: skip
    dump(registry, parse(json.dumps({"schema_version": 1, "entries": [entry]}), "x"))
    db, plain, judged = tmp_path / "h.db", tmp_path / "plain", tmp_path / "judged"
    assert cli.main(["dashboard", "--db", str(db), "--out", str(plain)]) == 0
    assert cli.main(["dashboard", "--db", str(db), "--out", str(judged), "--registry", str(registry)]) == 0
    unjudged, page = (plain / "index.html").read_text(), (judged / "index.html").read_text()
    assert '<td class="v-failed"' in unjudged and 'class="v-xfail' not in re.sub(
        r'<section id="legend">.*?</section>', "", unjudged
    )
    assert "2 records carry no verdict and are shown as failed, not judged" in unjudged
    matrix = page[page.index('class="matrix"') :]
    assert re.search(r'<tr data-op="sin".*?<td class="v-xfail"', matrix)
    assert re.search(r'<tr data-op="cos".*?<td class="v-new"', matrix)
    assert f"judged here by <code>{registry}</code>, under their run's torch release: 2 in the latest runs" in page
    capsys.readouterr()
    assert cli.main(["dashboard", "--db", str(db), "--out", str(judged), "--registry", str(tmp_path / "none.json")]) == 2
    assert capsys.readouterr().err.strip().endswith(f"{tmp_path / 'none.json'}: no registry there")
    registry.write_text("{")
    assert cli.main(["dashboard", "--db", str(db), "--out", str(judged), "--registry", str(registry)]) == 2
    (line,) = capsys.readouterr().err.splitlines()  # one line, no traceback
    assert line.startswith(f"optests dashboard: error: {registry}:1:2: not valid JSON")


def test_causes_and_verdicts_are_counted_per_night_also_where_the_history_stored_no_cause(tmp_path: Path) -> None:
    """Per run, op, verdict and cause, the samples that failed, were fixed or were flaky; a run
    stored before causes were (schema 7: an empty cause) has its failures' causes made from their
    records, as the records read back have them."""
    import sqlite3

    with _history(tmp_path, [("2026-11-20", "2.13.0+cpu", _night(2, 3)), ("2026-11-21", "2.13.0+cpu", _night(1, 1))]):
        pass
    con = sqlite3.connect(tmp_path / "h.db")
    con.execute("UPDATE outcomes SET cause = '' WHERE run = 1")
    con.commit()
    con.close()
    other = "forward/call/aot_eager: out=N, but expected N"
    flaky = int(HAS_FLAKY)
    known = "aot_double_backward_silently_dropped"
    with History(tmp_path / "h.db") as db:
        counts = db.flagged(db.runs())
    flakes = {("fl", "flaky", other): 1} if flaky else {}
    fixed = ("fx", "unexpected_pass", "")
    assert counts == {
        1: Counter({("xf", "xfailed", known): 2, ("nf", "unexpected_failure", other): 3, fixed: 1, **flakes}),
        2: Counter({("xf", "xfailed", known): 1, ("nf", "unexpected_failure", other): 1, fixed: 1, **flakes}),
    }


def test_the_history_counts_the_nights_a_sample_was_flaky(tmp_path: Path) -> None:
    """Counted in SQL on the stored verdict, among the runs of one configuration."""
    import sqlite3

    with _history(tmp_path, [(f"2026-11-2{i}", "2.13.0+cpu", _night(1, 1, flaky=False)) for i in range(3)]):
        pass
    con = sqlite3.connect(tmp_path / "h.db")
    (case,) = con.execute("SELECT id FROM cases WHERE key = 'static-float32-cpu-nf-sample0'").fetchone()
    con.execute("UPDATE outcomes SET verdict = 'flaky' WHERE case_id = ? AND run IN (1, 3)", (case,))
    con.commit()
    con.close()
    with History(tmp_path / "h.db") as db:
        runs = db.runs()
        assert db.flaky_samples(runs) == [("static-float32-cpu-nf-sample0", 2, 3, "2026-11-22T00:00:00+00:00")]
        assert db.flaky_samples(runs[1:2]) == []
        assert db.flaky_samples(runs[1:]) == [("static-float32-cpu-nf-sample0", 1, 2, "2026-11-22T00:00:00+00:00")]


def test_verdicts_and_causes_in_a_browser(tmp_path: Path) -> None:
    """Records of each verdict and two causes (a known bug, a signature) over two configurations
    (torch 2.13 over two nights, torch 2.15): the legend names each kind, cells of each kind
    have their own colour, and the view by cause counts each cause per configuration and night."""
    with _history(
        tmp_path,
        [
            ("2026-11-19", "2.15.0", _night(1, 4)),
            ("2026-11-20", "2.13.0+cpu", _night(2, 1)),
            ("2026-11-21", "2.13.0+cpu", _night(3, 2)),
        ],
    ) as db:
        index = dashboard.build(db, tmp_path / "site")
    assert (tmp_path / "site" / "findings" / "aot_double_backward_silently_dropped.py").is_file()  # the link's target
    html = index.read_text()
    assert '<tr data-cause="aot_double_backward_silently_dropped">' in html
    assert '<tr data-cause="forward/call/aot_eager: out=N, but expected N">' in html
    sync_api = _browser()  # what follows needs a browser
    with _page(sync_api) as page:
        page.goto(index.as_uri())
        expect = sync_api.expect
        legend = page.locator("#legend")
        expect(legend).to_be_visible()
        for kind in dashboard.KINDS:
            expect(legend.locator(f'tr[data-kind="{kind.name}"] th')).to_have_text(kind.title)
        expect(page.locator("#judged-by")).to_contain_text("No registry was given")

        def background(selector: str) -> str:
            return str(page.eval_on_selector(selector, "e => getComputedStyle(e).backgroundColor"))

        swatches = {k.name: background(f'#legend tr[data-kind="{k.name}"] td.swatch') for k in dashboard.KINDS}
        assert len(set(swatches.values())) == len(swatches), swatches
        section = '#config-1 .matrix tr[data-op="{}"] td:nth-child(3)'  # torch 2.13's latest run, static
        ops = {"pass": "ok", "xfail": "xf", "new": "nf", "fixed": "fx", "skip": "sk"} | ({"flaky": "fl"} if HAS_FLAKY else {})
        cells = {kind: background(section.format(op)) for kind, op in ops.items()}
        assert cells == {kind: swatches[kind] for kind in ops}  # each as its legend says, so all apart
        expect(page.locator(section.format("xf"))).to_have_text("0/3 xfail")
        expect(page.locator(section.format("nf"))).to_have_text("0/2 new")
        expect(page.locator(section.format("fx"))).to_have_text("1/1 fixed")
        # each op's history strip: a square per night of torch 2.13, by its verdicts that night
        strips = {op: page.locator(f'#config-1 .matrix tr[data-op="{op}"] .strip') for op in ("ok", "xf", "nf", "fx", "sk")}
        for op, letter in (("ok", "p"), ("xf", "e"), ("nf", "n"), ("fx", "d"), ("sk", "x")):
            expect(strips[op]).to_have_class(f"strip all-{letter}")
        strip_colours = {  # a strip of one state is one element, its squares a gradient
            op: page.eval_on_selector(f'#config-1 .matrix tr[data-op="{op}"] .strip', "e => getComputedStyle(e).backgroundImage")
            for op in strips
        }
        assert len(set(strip_colours.values())) == len(strip_colours), strip_colours  # drawn in colours of their own

        causes = page.locator("#causes tbody tr")
        expect(causes).to_have_count(2)
        other, known = causes.nth(0), causes.nth(1)  # the most frequent first: 6 (and the flakes) and 4
        expect(page.locator("#causes a.known")).to_have_text("known PyTorch bug: aot_double_backward_silently_dropped")
        expect(page.locator("#causes a.known")).to_have_attribute("href", "findings/aot_double_backward_silently_dropped.py")
        expect(known.locator("td.count")).to_have_count(2)
        expect(known.locator("td.count").nth(0)).to_have_attribute("data-count", "3")  # torch 2.13: the latest night
        expect(known.locator("td.count").nth(1)).to_have_attribute("data-count", "1")
        expect(known.locator("td.count .nights").nth(0)).to_have_attribute("data-nights", "2, 3")
        expect(known.locator("td.count").nth(0)).to_contain_text("none new")
        expect(other.locator("code.signature")).to_have_text("forward/call/aot_eager: out=N, but expected N")
        expect(other.locator("td.count").nth(0)).to_have_attribute("data-count", str(2 + HAS_FLAKY))
        expect(other.locator("td.count").nth(1)).to_have_attribute("data-count", str(4 + HAS_FLAKY))
        expect(other.locator("td.count").nth(1)).to_contain_text("4 new")
        expect(other.locator("td.ops")).to_contain_text("nf")
        other.locator("button.samples").nth(1).click()
        expect(page.locator("#detail-title")).to_have_text(
            f"forward/call/aot_eager: out=N, but expected N: {4 + HAS_FLAKY} failed samples"
        )
        expect(page.locator("#detail-where")).to_contain_text("torch 2.15")
        last = page.locator("#detail-samples tbody tr").last  # by id: fl's flake first, where there is one
        expect(last.locator("td").nth(0)).to_have_text("nf static sample 3")
        expect(last.locator("td.verdict")).to_have_text("new failure")
        page.locator("#detail-close").click()
        if HAS_FLAKY:
            expect(page.locator("#config-1 table.flaky tbody tr")).to_contain_text("flaky in 2 of 2 runs")
        _screenshot(page, tmp_path, "verdicts.png")
