"""Two real sweeps that differ like two nights do, their diff, and the dashboard in a real browser.

The browser test needs Debian's ``chromium`` (``apt-get install chromium``; ``.ci/run`` installs
it) and the ``playwright`` package (a test extra); it skips, saying which is missing, without them,
and fails instead where ``OPTESTS_REQUIRE_BROWSER`` is set.
Set ``OPTESTS_SCREENSHOTS=DIR`` to keep the screenshot it takes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sweepdir import install_sweep

from optests import cli

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


def test_dashboard_in_a_browser(nights: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sync_api = _browser()
    db, site = tmp_path / "history.db", tmp_path / "site"
    assert cli.main(["history", "ingest", *map(str, nights), "--db", str(db)]) == 0
    assert cli.main(["dashboard", "--db", str(db), "--out", str(site)]) == 0
    capsys.readouterr()
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
            page.goto((site / "index.html").as_uri())
            expect = sync_api.expect

            expect(page.locator("#regressions-count")).to_have_text("4 new failures")
            expect(page.locator("#fixes-count")).to_have_text("4 fixes")
            expect(page.locator("#latest")).to_contain_text("2 runs in the history")
            # Regressions since the previous night, each with its sample and message.
            failures = page.locator("table.new_failure tbody tr")
            expect(failures).to_have_count(4)
            expect(failures.first).to_contain_text("beta")
            expect(failures.first).to_contain_text("passed -> forward")
            expect(failures.first).to_contain_text(
                "but expected equal to eager within tolerance [beta static float32 cpu sample 0]"
            )
            expect(page.locator("table.fix tbody tr")).to_have_count(4)
            expect(page.locator("table.fix tbody tr").first).to_contain_text("alpha")
            expect(page.locator("table.stage_change tbody tr").first).to_contain_text("forward -> metadata")
            expect(page.locator("#added + p")).to_contain_text("12 samples over 3 ops: dynamic 12")
            # The trend: one line per mode; static has two points, dynamic one.
            expect(page.locator("#trend polyline")).to_have_count(2)
            expect(page.locator('#trend polyline[data-mode="static"]')).to_have_attribute("points", _two_points())
            # The status matrix, marked where things changed, and its filters.
            beta = page.locator('#matrix tr[data-op="beta"]')
            expect(beta.locator("td").nth(0)).to_have_text("0/4 ▼")
            expect(beta.locator("td").nth(0)).to_have_class("fail regressed")
            expect(page.locator('#matrix tr[data-op="alpha"] td').nth(0)).to_have_text("4/4 ▲")
            expect(page.locator("#matrix tbody tr:visible")).to_have_count(3)
            page.locator("#only-failing").check()
            expect(page.locator("#matrix tbody tr:visible")).to_have_count(2)  # alpha passes everywhere now
            page.locator("#only-failing").uncheck()
            page.locator("#filter").fill("gam")
            expect(page.locator("#matrix tbody tr:visible")).to_have_count(1)
            expect(page.locator("#shown")).to_have_text("1 ops")
            page.locator("#filter").fill("")
            expect(page.locator("#runs tbody tr")).to_have_count(2)

            shot = tmp_path / "dashboard.png"
            page.screenshot(path=str(shot), full_page=True)
            if os.environ.get("OPTESTS_SCREENSHOTS"):
                keep = Path(os.environ["OPTESTS_SCREENSHOTS"])
                keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(shot, keep / "dashboard.png")
        finally:
            browser.close()
    assert errors == []
    assert all(url.startswith("file://") for url in requests), requests  # offline: nothing fetched from anywhere


def _two_points() -> Any:
    import re

    return re.compile(r"^[\d.]+,[\d.]+ [\d.]+,[\d.]+$")
