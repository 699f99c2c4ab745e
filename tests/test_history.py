"""Run diffs, the history database and the dashboard's data: unit tests, golden reports, properties."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import expecttest
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optests import Outcome, Stage, cli
from optests import _dashboard as dashboard
from optests import _history as history
from optests._diff import Kind, diff, render_markdown, render_text
from optests._history import History, HistoryError
from optests._key import Mode, SampleKey
from optests._results import SampleResult, read, write

ENV = {"torch": "2.13.0+cpu", "torch_git": "abc123", "python": "3.11.7", "platform": "Linux", "optests": "0.1.0"}


def rec(
    op: str,
    mode: str,
    sample: int | None,
    outcome: str = "passed",
    stage: str | None = None,
    message: str = "",
    device: str = "cpu",
    transform: str = "",
    backend: str = "aot_eager",
) -> SampleResult:
    key = SampleKey(op, "", Mode(mode), "float32", device, sample, transform=transform, backend=backend)
    if outcome == "failed" and not message:
        message = f"{stage} finding [{key.context}]"
    return SampleResult(key, "op_db", Outcome(outcome), Stage(stage) if stage else None, message, 0.01)


OLD = [
    rec("sin", "static", 0),
    rec("sin", "static", 1, "failed", "trace"),
    rec("cos", "static", 0, "failed", "forward"),
    rec("cos", "static", 1, "failed", "trace"),
    rec("tan", "static", 0),
    rec("tan", "static", 1),
    rec("gone", "static", 0),
    rec("abs", "static", None, "not_applicable"),
]
NEW = [
    rec(
        "sin",
        "static",
        0,
        "failed",
        "metadata",
        "traced out.dtype=float64, but expected float32 [sin static float32 cpu sample 0]",
    ),
    rec("sin", "static", 1, "failed", "trace"),
    rec("cos", "static", 0),
    rec("cos", "static", 1, "failed", "backward"),
    rec("tan", "static", 0),
    rec("tan", "static", 1, "skipped", "trace"),
    rec("abs", "static", None, "not_applicable"),
    rec("sin", "dynamic", 0),
    rec("sin", "dynamic", 1, "failed", "trace"),
]


def test_diff_sorts_every_change_into_one_kind() -> None:
    d = diff(OLD, NEW)
    kinds = {c.record.id: c.kind for c in d.changes}
    assert kinds == {
        "static-float32-cpu-sin-sample0": Kind.NEW_FAILURE,
        "static-float32-cpu-cos-sample0": Kind.FIX,
        "static-float32-cpu-cos-sample1": Kind.STAGE_CHANGE,
        "static-float32-cpu-tan-sample1": Kind.OUTCOME_CHANGE,
        "static-float32-cpu-gone-sample0": Kind.REMOVED,
        "dynamic-float32-cpu-sin-sample0": Kind.ADDED,
        "dynamic-float32-cpu-sin-sample1": Kind.ADDED,
    }
    assert d.unchanged == 3
    assert [c.record.id for c in d.regressions] == ["static-float32-cpu-sin-sample0"]
    assert list(d.grouped(Kind.ADDED)) == [("sin", "dynamic")]
    assert diff(NEW, NEW).changes == ()


class TestReports(expecttest.TestCase):
    """Golden reports. Rewrite them after an intended change with EXPECTTEST_ACCEPT=1."""

    def test_text(self) -> None:
        self.assertExpectedInline(
            render_text(diff(OLD, NEW), "old.json", "new.json", {**ENV, "date": "2026-11-21T03:00:00+00:00"}, ENV),
            """\
old: old.json (torch 2.13.0+cpu, 2026-11-21T03:00:00+00:00, 8 samples)
new: new.json (torch 2.13.0+cpu, 9 samples)
1 new failures, 1 fixes, 1 stage changes, 1 other outcome changes, 2 samples added, 1 samples removed; 3 unchanged

New failures (1):
  sin static:
    sample 0 float32 cpu: passed -> metadata: traced out.dtype=float64, but expected float32 [sin static float32 cpu sample 0]

Fixes (1):
  cos static:
    sample 0 float32 cpu: forward -> passed: forward finding [cos static float32 cpu sample 0]

Stage changes (1):
  cos static:
    sample 1 float32 cpu: trace -> backward: backward finding [cos static float32 cpu sample 1]

Other outcome changes (1):
  tan static:
    sample 1 float32 cpu: passed -> skipped

Samples added (2):
  sin dynamic: 2 samples (1 passed, 1 trace)

Samples removed (1):
  gone static: 1 samples (1 passed)
""",
        )

    def test_markdown(self) -> None:
        self.assertExpectedInline(
            render_markdown(diff(OLD, NEW), "old.json", "new.json", ENV, ENV),
            """\
### :x: optests: 1 new failure

`old.json` (torch 2.13.0+cpu, 8 samples) -> `new.json` (torch 2.13.0+cpu, 9 samples)

| change | samples |
|---|---:|
| New failures | 1 |
| Fixes | 1 |
| Stage changes | 1 |
| Other outcome changes | 1 |
| Samples added | 2 |
| Samples removed | 1 |
| Unchanged | 3 |

<details open><summary><b>New failures</b> (1)</summary>

| op | mode | sample | change | message |
|---|---|---:|---|---|
| `sin` | static | 0 | passed -> metadata | traced out.dtype=float64, but expected float32 [sin static float32 cpu sample 0] |

</details>

<details><summary><b>Fixes</b> (1)</summary>

| op | mode | sample | change | message |
|---|---|---:|---|---|
| `cos` | static | 0 | forward -> passed | forward finding [cos static float32 cpu sample 0] |

</details>

<details><summary><b>Stage changes</b> (1)</summary>

| op | mode | sample | change | message |
|---|---|---:|---|---|
| `cos` | static | 1 | trace -> backward | backward finding [cos static float32 cpu sample 1] |

</details>

<details><summary><b>Other outcome changes</b> (1)</summary>

| op | mode | sample | change | message |
|---|---|---:|---|---|
| `tan` | static | 1 | passed -> skipped |  |

</details>

<details><summary><b>Samples added</b> (2)</summary>

| op | mode | samples |
|---|---|---|
| `sin` | dynamic | 2 (1 passed, 1 trace) |

</details>

<details><summary><b>Samples removed</b> (1)</summary>

| op | mode | samples |
|---|---|---|
| `gone` | static | 1 (1 passed) |

</details>
""",
        )


_records = st.lists(
    st.builds(
        rec,
        st.sampled_from(["sin", "cos"]),
        st.sampled_from(["static", "dynamic"]),
        st.integers(0, 3),
        st.sampled_from(["passed", "failed", "skipped"]),
        st.sampled_from(["trace", "forward"]),
    ),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(_records, _records)
def test_diff_accounts_for_every_sample_once(old: list[SampleResult], new: list[SampleResult]) -> None:
    d = diff(old, new)
    ids = [c.record.id for c in d.changes]
    assert len(ids) == len(set(ids))
    assert len(ids) + d.unchanged == len({r.id for r in old} | {r.id for r in new})
    back = diff(new, old)
    swap = {Kind.ADDED: Kind.REMOVED, Kind.REMOVED: Kind.ADDED, Kind.FIX: Kind.NEW_FAILURE}
    for c in d.changes:  # reversing the runs turns added into removed and fixes into new failures
        if c.kind in swap:
            assert {b.record.id: b.kind for b in back.changes}[c.record.id] is swap[c.kind]


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_diff_command_exit_status_gates_on_new_failures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    write(old, OLD, ENV)
    write(new, NEW, ENV)
    assert _main(capsys, "diff", str(old), str(new))[0] == 1
    assert _main(capsys, "diff", str(new), str(new))[0] == 0
    code, out, _ = _main(capsys, "diff", str(old), str(new), "--format", "json")
    assert code == 1 and '"new_failure": 1' in out
    code, out, err = _main(capsys, "diff", str(old), str(tmp_path / "missing.json"))
    assert (code, out, err) == (2, "", f"optests diff: error: {tmp_path / 'missing.json'}: no such file\n")


# -- the history database ---------------------------------------------------------------------


def test_ingest_is_idempotent_and_export_gives_the_records_back(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    with History(path, create=True) as db:
        run, new = db.ingest(ENV, NEW, "new.json", date="2026-11-22T03:00:00Z")
        assert new and run.samples == len(NEW) and run.date == "2026-11-22T03:00:00+00:00" and run.device == "cpu"
        again, new = db.ingest(ENV, list(reversed(NEW)), "elsewhere.json", date="2026-11-23T03:00:00Z")
        assert (again, new) == (run, False)
        assert db.runs() == [run]
        assert db.records(run) == sorted(NEW, key=lambda r: r.id)
        assert db.counts()[run.id][("static", "failed")] == 3
    size = path.stat().st_size
    with History(path) as db:  # reopened: nothing migrates, nothing grows
        db.ingest(ENV, NEW, "new.json", date="2026-11-22T03:00:00Z")
        assert db.schema_version == len(history.MIGRATIONS)
    assert path.stat().st_size == size


def test_runs_are_ordered_by_date_and_addressed_from_the_newest(tmp_path: Path) -> None:
    with History(tmp_path / "h.db", create=True) as db:
        late, _ = db.ingest(ENV, NEW, "b", date="2026-11-23T03:00:00+00:00")
        early, _ = db.ingest(ENV, OLD, "a", date="2026-11-22T03:00:00+00:00")
        assert db.runs() == [early, late]
        assert db.run(-1) == late and db.run(-2) == early and db.run(early.id) == early
        with pytest.raises(HistoryError, match=r"run -3 asked for, but the history holds 2 run\(s\)"):
            db.run(-3)
        with pytest.raises(HistoryError, match="no run with id 99"):
            db.run(99)


def test_export_like_a_results_file_takes_the_last_run_of_its_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The nightly diffs each configuration against its own last night: ``--like`` counts
    ``--run`` among the runs of that file's configuration."""
    cpu = tmp_path / "cpu.json"
    write(cpu, NEW, ENV)
    db_path = tmp_path / "h.db"
    with History(db_path, create=True) as db:
        db.ingest(ENV, OLD, "cpu", date="2026-11-22T03:00:00+00:00")
        db.ingest({**ENV, "torch": "2.15.0+cu132"}, NEW, "2.15", date="2026-11-23T03:00:00+00:00")
    out = tmp_path / "last.json"
    assert cli.main(["history", "export", "--db", str(db_path), "--like", str(cpu), "--out", str(out)]) == 0
    assert read(out)[1] == sorted(OLD, key=lambda r: r.id)
    assert cli.main(["history", "export", "--db", str(db_path), "--like", str(cpu), "--run", "2", "--out", str(out)]) == 2
    assert "run 2 is of configuration torch 2.15, cpu, float32, transforms none, not torch 2.13" in capsys.readouterr().err
    assert cli.main(["history", "export", "--db", str(db_path), "--like", str(cpu), "--run", "-2", "--out", str(out)]) == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("run -2 asked for, but the history holds 1 run(s) of configuration torch 2.13, cpu, float32, transforms none")
    )


def test_a_failed_ingest_leaves_the_database_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "h.db"
    with History(path, create=True) as db:
        db.ingest(ENV, OLD, "old", date="2026-11-22")

        def broken(*args: object) -> None:
            raise KeyboardInterrupt  # killed half-way through the inserts: the run's row is in

        monkeypatch.setattr(History, "_insert_records", staticmethod(broken))
        with pytest.raises(KeyboardInterrupt):
            db.ingest(ENV, NEW, "new", date="2026-11-23")
    with History(path) as db:
        assert [r.source for r in db.runs()] == ["old"]
        assert len(db.records(db.run(-1))) == len(OLD)


def test_dates_are_required_and_checked(tmp_path: Path) -> None:
    with History(tmp_path / "h.db", create=True) as db:
        with pytest.raises(HistoryError, match=r"x.json: the results record no date .*give one with --date"):
            db.ingest(ENV, NEW, "x.json")
        with pytest.raises(HistoryError, match=r"x.json: date 'yesterday' is not ISO 8601"):
            db.ingest(ENV, NEW, "x.json", date="yesterday")
        run, _ = db.ingest({**ENV, "date": "2026-11-22T04:00:00+01:00"}, NEW, "x.json")
        assert run.date == "2026-11-22T03:00:00+00:00"


def _foreign(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE accounts (id INTEGER)")
    con.commit()
    con.close()


def _newer(path: Path) -> None:
    History(path, create=True).close()
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.commit()
    con.close()


def _truncated(path: Path) -> None:
    with History(path, create=True) as db:
        for day in range(1, 4):
            db.ingest(ENV, [rec(f"op{i}", "static", 0, message=f"m{i}" * 50) for i in range(300)], "x", date=f"2026-11-0{day}")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda p: p.write_bytes(b"this is not sqlite" * 100), "not a usable optests history database (file is not a database)"),
        (_foreign, "not an optests history database (its tables: accounts)"),
        (_newer, "schema version 99 is newer than this optests knows (7); upgrade optests"),
        (_truncated, "not a usable optests history database (database disk image is malformed)"),
    ],
    ids=["garbage", "foreign", "newer", "half-written"],
)
def test_unusable_databases_give_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], make: object, error: str) -> None:
    path = tmp_path / "h.db"
    make(path)  # type: ignore[operator]
    code, out, err = _main(capsys, "dashboard", "--db", str(path), "--out", str(tmp_path / "site"))
    assert (code, out) == (2, "")
    assert err == f"optests dashboard: error: {path}: {error}\n"


def test_missing_database_says_how_to_make_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "none.db"
    code, _, err = _main(capsys, "history", "list", "--db", str(path))
    assert code == 2
    assert (
        err
        == f"optests history: error: {path}: no such history database (create one with: optests history ingest RESULTS --db {path})\n"
    )
    assert not path.exists()


def test_pending_migrations_are_applied_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "h.db"
    with History(path, create=True) as db:
        run, _ = db.ingest(ENV, OLD, "old", date="2026-11-22")
    monkeypatch.setattr(
        history, "MIGRATIONS", [*history.MIGRATIONS, "ALTER TABLE runs ADD COLUMN note TEXT; UPDATE runs SET note = 'v2'"]
    )
    with History(path) as db:
        assert db.schema_version == len(history.MIGRATIONS)
        assert db.runs() == [run]
    con = sqlite3.connect(path)
    assert con.execute("SELECT note FROM runs").fetchall() == [("v2",)]
    con.close()


def test_a_history_from_before_transforms_reads_on(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    with History(path, create=True) as db:
        run, _ = db.ingest(ENV, OLD, "old", date="2026-11-22")
    _downgrade(path, 1)  # as an optests before transforms wrote it
    with History(path) as db:
        assert db.schema_version == len(history.MIGRATIONS)
        assert db.records(db.run(run.id)) == sorted(OLD, key=lambda r: r.id)
        derived = SampleResult(dataclasses.replace(OLD[0].key, transform="transposed"), "op_db", Outcome.PASSED)
        new, _ = db.ingest(ENV, [derived], "new", date="2026-11-23")
        assert [r.transform for r in db.records(new)] == ["transposed"]


def _downgrade(path: Path, version: int) -> None:
    """Undo the migrations after ``version``, as the optests of that schema left its databases."""
    undo = {
        7: ["ALTER TABLE outcomes DROP COLUMN cause"],
        6: ["ALTER TABLE runs DROP COLUMN backends"],
        5: ["ALTER TABLE cases DROP COLUMN backend"],
        4: ["ALTER TABLE outcomes DROP COLUMN tolerance"],
        3: [
            *(f"ALTER TABLE runs DROP COLUMN {c}" for c in ("torch_series", "devices", "dtypes", "transforms")),
            "DROP TABLE op_counts",
        ],
        2: ["ALTER TABLE cases DROP COLUMN transform"],
    }
    con = sqlite3.connect(path)
    for v in range(len(history.MIGRATIONS), version, -1):
        for statement in undo[v]:
            con.execute(statement)
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
    con.commit()
    con.close()


def test_a_configuration_is_torch_series_device_dtype_and_transforms() -> None:
    derived = [rec("sin", "static", 0, transform=t) for t in ("transposed-0", "transposed-1", "noncontiguous", "grad-subset-2")]
    config = history.configuration_of({"torch": "2.13.0+cpu"}, [*OLD, *derived])
    assert config == history.Configuration("2.13", "cpu", "float32", "grad-subset,noncontiguous,transposed")
    assert config.label == "torch 2.13, cpu, float32, transforms grad-subset,noncontiguous,transposed"
    both = history.configuration_of({"torch": "2.15.0.dev20261001+cu130"}, [*OLD, rec("sin", "static", 0, device="cuda")])
    assert both.label == "torch 2.15, cpu+cuda, float32, transforms none"  # a run over two devices is one configuration
    assert history.configuration_of({}, OLD).torch == "unknown"


def test_an_old_history_gets_the_configuration_of_each_run(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    cuda = [rec("sin", "static", 0, device="cuda"), rec("sin", "static", 1, "failed", "trace", device="cuda")]
    with History(path, create=True) as db:
        runs = [
            db.ingest(ENV, OLD, "old", date="2026-11-21")[0],
            db.ingest({**ENV, "torch": "2.11.0+cu130"}, cuda, "cuda", date="2026-11-22")[0],
            db.ingest(ENV, [*NEW, rec("sin", "static", 0, transform="dtypes-1")], "new", date="2026-11-23")[0],
        ]
        strips = db.op_counts(runs)
    assert [r.configuration.label for r in runs] == [
        "torch 2.13, cpu, float32, transforms none",
        "torch 2.11, cuda, float32, transforms none",
        "torch 2.13, cpu, float32, transforms dtypes",
    ]
    assert strips[runs[1].id] == {"sin": (1, 1)}
    _downgrade(path, 2)  # as the optests before configurations wrote it
    with History(path) as db:
        assert db.schema_version == len(history.MIGRATIONS)
        assert db.runs() == runs  # configurations computed from the stored samples
        assert db.op_counts(runs) == strips


def test_a_backend_is_kept_per_sample_and_apart_in_configurations(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    inductor = [rec("sin", "static", 0, backend="inductor"), rec("sin", "static", 1, "failed", "forward", backend="inductor")]
    with History(path, create=True) as db:
        old = db.ingest(ENV, OLD, "old", date="2026-11-21")[0]
    _downgrade(path, 4)  # as the optests before backends left it: its runs were aot_eager's
    with History(path, create=True) as db:
        assert db.schema_version == len(history.MIGRATIONS)
        assert db.runs() == [old]
        assert old.configuration.backends == "aot_eager"
        other = db.ingest(ENV, inductor, "inductor", date="2026-11-22")[0]
        both = db.ingest(ENV, [*NEW, *inductor], "both", date="2026-11-23")[0]
        assert [r.id for r in db.records(other)] == [
            "static-float32-cpu-sin-sample0@inductor",
            "static-float32-cpu-sin-sample1@inductor",
        ]
        assert db.records(other) == inductor  # ingest -> export keeps the backend
        assert [r.configuration.label for r in (old, other, both)] == [
            "torch 2.13, cpu, float32, transforms none",
            "torch 2.13, cpu, float32, transforms none, backends inductor",
            "torch 2.13, cpu, float32, transforms none, backends aot_eager+inductor",
        ]
        # "the previous run" of an aot_eager run is an aot_eager run's, never another backend's
        assert db.run(-1, old.configuration) == old
        assert db.run(-1, other.configuration) == other
        with pytest.raises(HistoryError, match="holds 1 run"):
            db.run(-2, other.configuration)


def test_history_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db, old, new = tmp_path / "h.db", tmp_path / "old.json", tmp_path / "new.json"
    write(old, OLD, {**ENV, "date": "2026-11-21T03:00:00+00:00"})
    write(new, NEW, {**ENV, "date": "2026-11-22T03:00:00+00:00"})
    code, out, _ = _main(capsys, "history", "ingest", str(old), str(new), "--db", str(db))
    assert code == 0
    assert out.splitlines() == [
        f"{db}: ingested {old} as run 1 (2026-11-21T03:00:00+00:00, torch 2.13.0+cpu, 8 samples)",
        f"{db}: ingested {new} as run 2 (2026-11-22T03:00:00+00:00, torch 2.13.0+cpu, 9 samples)",
    ]
    assert _main(capsys, "history", "ingest", str(new), "--db", str(db))[1] == f"{db}: {new} is already run 2; nothing to do\n"
    code, out, _ = _main(capsys, "history", "list", "--db", str(db))
    assert out.splitlines()[1] == (
        f"run 2  2026-11-22T03:00:00+00:00  [torch 2.13, cpu, float32, transforms none]  torch 2.13.0+cpu  cpu  "
        f"9 samples, 4 failed  {new}"
    )
    back = tmp_path / "back.json"
    assert _main(capsys, "history", "export", "--db", str(db), "--run", "-2", "--out", str(back))[0] == 0
    assert _main(capsys, "diff", str(old), str(back))[1].splitlines()[2].endswith("; 8 unchanged")
    code, out, _ = _main(capsys, "dashboard", "--db", str(db), "--out", str(tmp_path / "site"))
    assert code == 0 and out.startswith(f"{tmp_path / 'site' / 'index.html'}: ")
    page = (tmp_path / "site" / "index.html").read_text()
    assert "http://" not in page and "https://" not in page  # nothing to fetch: works offline


def test_pass_rate_ignores_skips_and_not_applicable() -> None:
    from collections import Counter

    counts = Counter(
        {("static", "passed"): 3, ("static", "failed"): 1, ("static", "skipped"): 5, ("static", "not_applicable"): 2}
    )
    assert dashboard.pass_rate(counts, "static") == 75.0
    assert dashboard.pass_rate(counts, "dynamic") is None


def test_merge_joins_shards_into_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "all.json"
    write(a, NEW[:5], {**ENV, "date": "2026-11-22T03:05:00+00:00"})
    write(b, NEW[4:], {**ENV, "date": "2026-11-22T03:00:00+00:00"})
    code, stdout, _ = _main(capsys, "merge", str(a), str(b), "--out", str(out))
    assert (code, stdout) == (0, f"{out}: {len(NEW)} samples from 2 file(s)\n")
    env, records = read(out)
    assert records == sorted(NEW, key=lambda r: r.id) and env["date"] == "2026-11-22T03:00:00+00:00"
    write(b, [dataclasses.replace(NEW[4], outcome=Outcome.FAILED, stage=Stage.TRACE)], ENV)
    code, _, err = _main(capsys, "merge", str(a), str(b), "--out", str(out))
    assert (code, err) == (
        2,
        f"optests merge: error: {NEW[4].id} is recorded twice with different results (passed/None and failed/trace)\n",
    )
    write(b, NEW[4:], {**ENV, "torch": "2.14.0"})
    code, _, err = _main(capsys, "merge", str(a), str(b), "--out", str(out))
    assert code == 2 and err.startswith("optests merge: error: the results come from different torch versions (")


def test_merge_folds_a_rerun_into_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A rerun of some of a run's samples (after a harness fix, or of last night's failures)
    replaces their records, whatever they were; the run keeps its samples and its environment,
    and what the rerun checked beyond them is left out and counted. A rerun of another torch, or
    of none of the run's samples, is refused."""
    run, again, out = tmp_path / "run.json", tmp_path / "again.json", tmp_path / "all.json"
    write(run, NEW[:4], ENV)
    fixed = dataclasses.replace(NEW[0], outcome=Outcome.NOT_APPLICABLE, stage=None, message="does not apply")
    write(again, [fixed, NEW[5]], {**ENV, "date": "2026-11-29T01:00:00+00:00"})
    code, stdout, _ = _main(capsys, "merge", str(run), "--rerun", str(again), "--out", str(out))
    assert (code, stdout) == (
        0,
        f"{out}: 4 samples from 1 file(s), 1 replaced by {again}; 1 of its samples not in the run, left out\n",
    )
    env, records = read(out)
    assert records == sorted([fixed, *NEW[1:4]], key=lambda r: r.id) and env == ENV
    write(again, [NEW[5]], ENV)
    code, _, err = _main(capsys, "merge", str(run), "--rerun", str(again), "--out", str(out))
    assert (code, err) == (
        2,
        f"optests merge: error: {again}: none of its 1 samples is in the run: a rerun replaces samples the run checked\n",
    )
    write(again, [fixed], {**ENV, "torch": "2.15.0"})
    code, _, err = _main(capsys, "merge", str(run), "--rerun", str(again), "--out", str(out))
    assert (code, err) == (2, f"optests merge: error: {again}: a rerun of torch 2.15.0, the run is of torch 2.13.0+cpu\n")


def test_written_files_get_the_usual_mode_or_keep_their_own(tmp_path: Path) -> None:
    import os
    import stat

    from optests._files import write_json_atomic

    umask = os.umask(0o022)
    try:
        new = tmp_path / "new.json"
        write_json_atomic(new, {})
        assert stat.S_IMODE(new.stat().st_mode) == 0o644  # as open() would make it, not the temp file's 0600
        os.chmod(new, 0o640)
        write_json_atomic(new, {"again": 1})
        assert stat.S_IMODE(new.stat().st_mode) == 0o640
    finally:
        os.umask(umask)
