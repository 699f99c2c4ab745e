"""The history database: runs and their per-sample outcomes, in SQLite (stdlib). Torch-free.

All SQL lives in this module, in plain SQL-92 apart from ``WITHOUT ROWID`` and the connection:
moving to PostgreSQL means a new ``_connect``, ``%s`` placeholders and ``SERIAL`` keys, nothing
outside this file. Schema changes are appended to ``MIGRATIONS``, never edited in place: a
database records how many it has applied (``meta.schema_version``) and opening it applies the rest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import itertools
import json
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ._env import now
from ._files import Busy, WriteError, locked, open_input
from ._findings import Outcome
from ._key import DEFAULT_BACKEND, transform_name
from ._registry import RegistryError, release_series
from ._results import FIELDS, Field, SampleResult, attribute, describe_os_error
from ._sanitize import shell_join
from .errors import HistoryError as HistoryError

APPLICATION = "optests-history"
#: Seconds a writer waits for another (the lock file, then SQLite's busy timeout) before giving up.
BUSY_TIMEOUT = 60.0


def _add_configurations(cur: sqlite3.Cursor) -> None:
    """3: each run's :class:`Configuration`, and its passed and failed samples per op (the
    dashboard's history strips). Computed here for the runs already stored, from their samples."""
    for column in ("torch_series", "devices", "dtypes", "transforms"):
        cur.execute(f"ALTER TABLE runs ADD COLUMN {column} TEXT NOT NULL DEFAULT ''")
    cur.execute(
        "CREATE TABLE op_counts (run INTEGER NOT NULL REFERENCES runs (id), op TEXT NOT NULL,"
        " passed INTEGER NOT NULL, failed INTEGER NOT NULL, PRIMARY KEY (run, op))"
    )
    seen: dict[int, list[set[str]]] = defaultdict(lambda: [set(), set(), set()])
    for run, device, dtype, transform in cur.execute(
        "SELECT DISTINCT o.run, c.device, c.dtype, c.transform FROM outcomes o JOIN cases c ON c.id = o.case_id"
    ).fetchall():
        for found, value in zip(seen[run], (device, dtype, transform)):
            found.add(value)
    for run, torch in cur.execute("SELECT id, torch FROM runs").fetchall():
        config = Configuration.of(torch, *seen[run])
        cur.execute(
            "UPDATE runs SET torch_series = ?, devices = ?, dtypes = ?, transforms = ? WHERE id = ?",
            (config.torch, config.device, config.dtype, config.transforms, run),
        )
    cur.execute(
        "INSERT INTO op_counts (run, op, passed, failed)"
        " SELECT o.run, c.op || CASE WHEN c.variant = '' THEN '' ELSE '.' || c.variant END,"
        " SUM(CASE WHEN o.outcome = 'passed' THEN 1 ELSE 0 END), SUM(CASE WHEN o.outcome = 'failed' THEN 1 ELSE 0 END)"
        " FROM outcomes o JOIN cases c ON c.id = o.case_id GROUP BY o.run, c.op, c.variant"
    )


#: One entry per schema version; entry i takes a database from version i to i + 1: SQL
#: statements, or a function where the new columns are computed from what is stored.
MIGRATIONS: list[str | Callable[[sqlite3.Cursor], None]] = [
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        fingerprint TEXT NOT NULL UNIQUE,  -- sha256 of the results: ingesting a run twice is a no-op
        date TEXT NOT NULL,                -- when the run happened, ISO 8601 UTC
        torch TEXT NOT NULL,
        torch_git TEXT NOT NULL,
        device TEXT NOT NULL,
        python TEXT NOT NULL,
        optests TEXT NOT NULL,
        platform TEXT NOT NULL,
        source TEXT NOT NULL,              -- the results file it came from
        ingested TEXT NOT NULL,
        samples INTEGER NOT NULL
    );
    CREATE INDEX runs_by_date ON runs (date, id);
    CREATE TABLE cases (
        id INTEGER PRIMARY KEY,
        key TEXT NOT NULL UNIQUE,          -- the sample's id, e.g. static-float32-cpu-sin-sample3
        op TEXT NOT NULL, variant TEXT NOT NULL, db TEXT NOT NULL,
        mode TEXT NOT NULL, dtype TEXT NOT NULL, device TEXT NOT NULL, sample INTEGER
    );
    CREATE TABLE messages (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);
    CREATE TABLE outcomes (
        run INTEGER NOT NULL REFERENCES runs (id),
        case_id INTEGER NOT NULL REFERENCES cases (id),
        outcome TEXT NOT NULL, stage TEXT, verdict TEXT NOT NULL, duration REAL NOT NULL,
        message INTEGER REFERENCES messages (id),
        PRIMARY KEY (run, case_id)
    ) WITHOUT ROWID;
    -- Per-run counts, written at ingest, so the trend over hundreds of runs reads a few rows each.
    CREATE TABLE run_counts (
        run INTEGER NOT NULL REFERENCES runs (id),
        mode TEXT NOT NULL, outcome TEXT NOT NULL, count INTEGER NOT NULL,
        PRIMARY KEY (run, mode, outcome)
    );
    """,
    # 2: the input transform that derived a sample (empty for a sample as the OpInfo gives it)
    """
    ALTER TABLE cases ADD COLUMN transform TEXT NOT NULL DEFAULT ''
    """,
    _add_configurations,
    # 4: a record's tolerance (results schema 2), which ingest had left out
    """
    ALTER TABLE outcomes ADD COLUMN tolerance TEXT NOT NULL DEFAULT ''
    """,
    # 5: the backend that compiled a sample (ids end in @NAME for any but aot_eager); what was
    # stored before could only be aot_eager's, as its ids name no backend
    """
    ALTER TABLE cases ADD COLUMN backend TEXT NOT NULL DEFAULT 'aot_eager'
    """,
    # 6: the backends of a run's configuration; the runs stored before are aot_eager's (see 5)
    """
    ALTER TABLE runs ADD COLUMN backends TEXT NOT NULL DEFAULT 'aot_eager'
    """,
    # 7: a failure's cause (results schema 4); the outcomes stored before have it made when read
    """
    ALTER TABLE outcomes ADD COLUMN cause TEXT NOT NULL DEFAULT ''
    """,
    # 8: what checking a failure again found (results schema 4), as JSON text ('' for nothing);
    # and the rows of a verdict found fast (flaky ones are few among millions: History.flakes)
    """
    ALTER TABLE outcomes ADD COLUMN reruns TEXT NOT NULL DEFAULT '';
    CREATE INDEX outcomes_by_verdict ON outcomes (verdict)
    """,
]


def _columns(table: str) -> list[Field]:
    """The record fields the history keeps in ``table`` (``cases``, ``outcomes``, ``messages``)."""
    return [f for f in FIELDS if f.column.split(".")[0] == table]


#: Where each field of a record is stored (see ``Field.column``): the sample's identity once per
#: sample id in ``cases``; what happened in each run in ``outcomes``; texts once in ``messages``,
#: referenced from ``outcomes`` by a column named after the field.
_CASES, _OUTCOMES, _TEXTS = _columns("cases"), _columns("outcomes"), _columns("messages")
assert len(_TEXTS) == 1 and len(FIELDS) == len(_CASES) + len(_OUTCOMES) + len(_TEXTS)
#: The positions in :data:`_SELECT` of the fields stored as JSON text (``reruns``).
_NESTED = frozenset(i for i, f in enumerate(FIELDS) if f.nested)
_SELECT = ", ".join(
    f"c.{f.column.split('.')[1]}" if f in _CASES else f"o.{f.column.split('.')[1]}" if f in _OUTCOMES else "COALESCE(m.text, '')"
    for f in FIELDS
)


@dataclasses.dataclass(frozen=True)
class Configuration:
    """What two runs must share for their difference to mean something: the torch release series,
    the device, the dtype, the input transforms and the backends. Trends and "since the previous run" compare
    runs of one configuration only; a CPU run against a CUDA run would list every sample as added
    and removed (their ids differ), and 2.13 against 2.15 is a comparison, not a regression.

    A run over several devices or dtypes is one configuration that lists them all
    (``cpu+cuda``): it is compared with runs over the same set, not split into parts."""

    torch: str  #: the release series, ``2.13`` for ``2.13.0+cpu``
    device: str  #: ``cpu``, or ``cpu+cuda`` for a run over both
    dtype: str  #: ``float32``, or ``float32+float64``
    transforms: str  #: the input transforms applied, ``dtypes,transposed``, or ``none``
    #: the backends that compiled the checks, ``aot_eager`` (the default), or ``aot_eager+inductor``
    backends: str = DEFAULT_BACKEND

    @classmethod
    def of(
        cls,
        torch: str,
        devices: Iterable[str],
        dtypes: Iterable[str],
        transforms: Iterable[str],
        backends: Iterable[str] = (DEFAULT_BACKEND,),
    ) -> Configuration:
        """From the torch version and the devices, dtypes, transforms (with their index,
        ``transposed-0``; empty for a sample as the OpInfo gives it) and backends of a run's samples."""
        try:
            series = release_series(torch)
        except RegistryError:  # no version recorded, or not one: compared only with its like
            series = torch or "unknown"
        names = sorted({transform_name(t) for t in transforms if t})
        compilers = "+".join(sorted(set(backends))) or DEFAULT_BACKEND
        return cls(series, "+".join(sorted(devices)), "+".join(sorted(dtypes)), ",".join(names) or "none", compilers)

    @property
    def label(self) -> str:
        """``torch 2.13, cpu, float32, transforms none``; the backends where they are not just
        aot_eager: ``..., transforms none, backends inductor``."""
        label = f"torch {self.torch}, {self.device}, {self.dtype}, transforms {self.transforms}"
        return label if self.backends == DEFAULT_BACKEND else f"{label}, backends {self.backends}"


def configuration_of(env: Mapping[str, str], records: Iterable[SampleResult]) -> Configuration:
    """A run's configuration, from its results file's environment and records."""
    records = list(records)
    return Configuration.of(
        env.get("torch", ""),
        {r.device for r in records},
        {r.dtype for r in records},
        {r.transform for r in records},
        {r.key.backend for r in records},
    )


@dataclasses.dataclass(frozen=True)
class Run:
    id: int
    date: str
    torch: str
    torch_git: str
    device: str
    python: str
    optests: str
    platform: str
    source: str
    samples: int
    configuration: Configuration


@dataclasses.dataclass(frozen=True)
class Flakes:
    """How often one sample was flaky (:meth:`History.flakes`)."""

    sample: str  #: its id
    flaky: int  #: the runs whose record of it is ``flaky``
    runs: int  #: the runs that recorded it
    last: str  #: the date of the last run in which it was flaky


_RUN_COLUMNS = (
    "id, date, torch, torch_git, device, python, optests, platform, source, samples, torch_series, devices, dtypes, transforms,"
    " backends"
)


def _run(row: tuple[Any, ...]) -> Run:
    """A run from a row of ``_RUN_COLUMNS``."""
    run_id, date, torch, torch_git, device, python, optests, platform, source, samples, *config = row
    return Run(run_id, date, torch, torch_git, device, python, optests, platform, source, samples, Configuration(*config))


def fingerprint(env: Mapping[str, str], records: Sequence[SampleResult]) -> str:
    """The sha256 of a run: its environment and every field of its records, sorted by id. A field
    added to results after version 1 counts only where it holds more than its default, so a run
    ingested before it existed hashes the same."""
    later = [f for f in FIELDS if f.since > 1 and not f.derived]
    derived = [f.name for f in FIELDS if f.derived]
    h = hashlib.sha256(json.dumps(dict(env), sort_keys=True).encode())
    for r in sorted(records, key=lambda r: r.id):
        d = r.to_json()
        for name in derived:
            d.pop(name, None)
        for f in later:
            if d.get(f.name, f.default) == f.default:
                d.pop(f.name, None)
        h.update(json.dumps(d, sort_keys=True).encode())
    return h.hexdigest()


def _stored(f: Field) -> Callable[[Any], Any]:
    """How the history stores a field's value: as its JSON value, a nested one as JSON text
    (``""`` for none)."""
    if not f.nested:
        return f.encode
    return lambda value: json.dumps(f.encode(value), sort_keys=True) if value else ""


def _busy(path: Path) -> HistoryError:
    return HistoryError(f"{path}: the database is busy (another optests is writing it); try again")


class History:
    """One open history database. ``create=False`` refuses a path with no database.

    Writers (``create=True``: ``optests history ingest``) hold an exclusive ``flock`` on
    ``PATH.lock`` beside the database from opening (and creating, and migrating) it until they
    close it, so two ingests into one new database do not race. Readers take no lock (and
    create no file): a reader that finds the database empty or behind migrates it in one
    ``BEGIN IMMEDIATE`` transaction, looking again once it holds SQLite's write lock."""

    def __init__(self, path: Path, *, create: bool = False) -> None:
        self.path = path
        self._lock: contextlib.ExitStack | None = None
        if path.is_dir():
            raise HistoryError(f"{path}: is a directory, not a history database")
        if path.exists():
            try:
                open_input(path).close()  # SQLite would only say "unable to open database file"
            except OSError as e:
                raise HistoryError(f"{path}: {describe_os_error(path, e)}") from None
        elif not create:
            if path.parent.exists() and not path.parent.is_dir():
                raise HistoryError(f"{path}: cannot read: {path.parent} is not a directory")
            raise HistoryError(
                f"{path}: no such history database (create one with: {shell_join(['optests', 'history', 'ingest', 'RESULTS', '--db', str(path)])})"
            )
        self._lock = self._acquire_lock() if create else None
        try:
            try:
                self._db = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None)  # transactions are explicit
            except sqlite3.Error as e:
                raise HistoryError(f"{path}: cannot open: {e}") from None
            try:
                with self._errors():
                    self._migrate()
            except BaseException:
                self._db.close()
                raise
        except BaseException:
            self._release_lock()
            raise

    def _acquire_lock(self) -> contextlib.ExitStack:
        """The writers' lock on ``PATH.lock``, waited for up to BUSY_TIMEOUT."""
        stack = contextlib.ExitStack()
        try:
            stack.enter_context(locked(self.path, timeout=BUSY_TIMEOUT))
        except Busy:
            raise _busy(self.path) from None
        except WriteError as e:
            raise HistoryError(str(e)) from None
        return stack

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def close(self) -> None:
        self._db.close()
        self._release_lock()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """SQLite's errors as one line that names the culprit: another writer, the file system,
        or the database itself."""
        try:
            yield
        except sqlite3.OperationalError as e:
            name = getattr(e, "sqlite_errorname", "")
            if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in str(e):
                raise _busy(self.path) from None
            if name.startswith("SQLITE_READONLY"):
                raise HistoryError(f"{self.path}: cannot write: {e}") from None
            if name.startswith(("SQLITE_CANTOPEN", "SQLITE_IOERR", "SQLITE_FULL", "SQLITE_PERM")):
                raise HistoryError(f"{self.path}: cannot open or write: {e}") from None
            raise HistoryError(f"{self.path}: not a usable optests history database ({e})") from None
        except sqlite3.DatabaseError as e:
            raise HistoryError(f"{self.path}: not a usable optests history database ({e})") from None
        except UnicodeEncodeError as e:  # a lone surrogate, as a file name can hold one
            raise HistoryError(f"{self.path}: cannot store {e.object[e.start : e.end]!r}: it is not text") from None

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Cursor]:
        """All or nothing: a run killed mid-ingest leaves the database as it was."""
        cur = self._db.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            yield cur
            cur.execute("COMMIT")
        except BaseException:
            # SQLite may have rolled back already (a full disk does): a second ROLLBACK would
            # fail and hide the error that says what went wrong
            if self._db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    cur.execute("ROLLBACK")
            raise

    def _version(self) -> int | None:
        """The schema version the database records; None for an empty database."""
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return None
        if "meta" not in tables:
            raise HistoryError(f"{self.path}: not an optests history database (its tables: {', '.join(sorted(tables))})")
        meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("application") != APPLICATION:
            raise HistoryError(f"{self.path}: not an optests history database (application {meta.get('application')!r})")
        try:
            version = int(meta.get("schema_version", "-1"))
        except ValueError:
            version = -1
        if version > len(MIGRATIONS):
            raise HistoryError(
                f"{self.path}: schema version {version} is newer than this optests knows ({len(MIGRATIONS)}); upgrade optests"
            )
        if version < 0:
            raise HistoryError(f"{self.path}: no schema version recorded; the database is damaged")
        return version

    def _migrate(self) -> None:
        if self._version() == len(MIGRATIONS):
            return
        with self._transaction() as cur:  # one writer at a time: look again, then create or migrate
            version = self._version()
            if version is None:
                cur.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                cur.executemany("INSERT INTO meta VALUES (?, ?)", [("application", APPLICATION), ("schema_version", "0")])
                version = 0
            for i in range(version, len(MIGRATIONS)):
                step = MIGRATIONS[i]
                if callable(step):
                    step(cur)
                else:
                    for statement in filter(str.strip, step.split(";")):
                        cur.execute(statement)
                cur.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(i + 1),))

    @property
    def schema_version(self) -> int:
        with self._errors():
            return int(self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])

    # -- writing -------------------------------------------------------------------------------

    def ingest(
        self, env: Mapping[str, str], records: Sequence[SampleResult], source: str, date: str | None = None
    ) -> tuple[Run, bool]:
        """Store one run; returns it and whether it is new (the same results again are a no-op)."""
        date = date or env.get("date", "")
        if not date:
            raise HistoryError(f"{source}: the results record no date (written by an older optests): give one with --date")
        try:
            parsed = datetime.datetime.fromisoformat(date)
        except ValueError:
            raise HistoryError(f"{source}: date {date!r} is not ISO 8601 (e.g. 2026-11-22T03:00:00+00:00)") from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=datetime.timezone.utc)
        try:
            date = parsed.astimezone(datetime.timezone.utc).isoformat(timespec="seconds")
        except OverflowError:  # 0001-01-01T00:00:00+01:00 is in year 0 in UTC
            raise HistoryError(f"{source}: date {date!r} is out of range (years 1 to 9999 in UTC)") from None
        records = sorted(records, key=lambda r: r.id)
        twice = next((a.id for a, b in itertools.pairwise(records) if a.id == b.id), None)
        if twice is not None:
            raise HistoryError(f"{source}: id {twice!r} is recorded twice; a run holds one record per sample")
        key = fingerprint(env, records)
        with self._errors():
            row = self._db.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE fingerprint = ?", (key,)).fetchone()
            if row is not None:
                return _run(row), False
            devices = sorted({r.device for r in records})
            config = configuration_of(env, records)
            with self._transaction() as cur:
                cur.execute(
                    "INSERT INTO runs (fingerprint, date, torch, torch_git, device, python, optests, platform, source, ingested,"
                    " samples, torch_series, devices, dtypes, transforms, backends)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (key, date, env.get("torch", ""), env.get("torch_git", ""),
                     ",".join(devices) + (f" (CUDA {env['cuda']})" if "cuda" in devices and env.get("cuda") else ""),
                     env.get("python", ""), env.get("optests", ""), env.get("platform", ""), source, now(), len(records),
                     *dataclasses.astuple(config)),
                )  # fmt: skip
                run_id = cur.lastrowid
                assert run_id is not None
                self._insert_records(cur, run_id, records)
                counts = Counter((r.mode.value, r.outcome.value) for r in records)
                cur.executemany(
                    "INSERT INTO run_counts (run, mode, outcome, count) VALUES (?, ?, ?, ?)",
                    [(run_id, mode, outcome, n) for (mode, outcome), n in sorted(counts.items())],
                )
                per_op = Counter((r.op_id, r.outcome) for r in records)
                cur.executemany(
                    "INSERT INTO op_counts (run, op, passed, failed) VALUES (?, ?, ?, ?)",
                    [(run_id, op, per_op[(op, Outcome.PASSED)], per_op[(op, Outcome.FAILED)])
                     for op in sorted({r.op_id for r in records})],
                )  # fmt: skip
            return self.run(run_id), True

    @staticmethod
    def _insert_records(cur: sqlite3.Cursor, run_id: int, records: Sequence[SampleResult]) -> None:
        """Each record's fields into the columns :data:`FIELDS` names, a row at a time (a run of a
        million records is not copied into rows first)."""

        def values(fields: Sequence[Field]) -> Callable[[SampleResult], tuple[Any, ...]]:
            plan = [(attribute(f), _stored(f)) for f in fields]
            return lambda r: tuple([encode(get(r)) for get, encode in plan])

        names = [f.column.split(".")[1] for f in _CASES]
        case = values(_CASES)
        cur.executemany(
            f"INSERT INTO cases ({', '.join(names)}) VALUES ({', '.join('?' * len(names))}) ON CONFLICT (key) DO NOTHING",
            (case(r) for r in records),
        )
        (text,) = _TEXTS
        cur.executemany(
            "INSERT INTO messages (text) VALUES (?) ON CONFLICT (text) DO NOTHING",
            ((m,) for r in records if (m := getattr(r, text.name))),
        )
        names = [f.column.split(".")[1] for f in _OUTCOMES]
        outcome = values(_OUTCOMES)
        (case_key,) = (f.column.split(".")[1] for f in _CASES if f.name == "id")
        cur.executemany(
            f"INSERT INTO outcomes (run, case_id, {', '.join(names)}, {text.name}) VALUES (?,"
            f" (SELECT id FROM cases WHERE {case_key} = ?), {', '.join('?' * len(names))},"
            " (SELECT id FROM messages WHERE text = ?))",
            ((run_id, r.id, *outcome(r), getattr(r, text.name) or None) for r in records),
        )

    # -- reading -------------------------------------------------------------------------------

    def runs(self) -> list[Run]:
        """Oldest first (by date, then by ingest order)."""
        with self._errors():
            return [_run(row) for row in self._db.execute(f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY date, id")]

    def run(self, ref: int | str, configuration: Configuration | None = None) -> Run:
        """A run by id, or by position from the newest: ``-1`` is the latest, ``-2`` the one before
        (among the runs of ``configuration``, where one is given)."""
        runs = self.runs()
        n = int(ref)
        if n < 0:
            if configuration is not None:
                runs = [r for r in runs if r.configuration == configuration]
            if -n > len(runs):
                of = f" of configuration {configuration.label}" if configuration is not None else ""
                raise HistoryError(f"{self.path}: run {n} asked for, but the history holds {len(runs)} run(s){of}")
            return runs[n]
        for r in runs:
            if r.id == n:
                if configuration is not None and r.configuration != configuration:
                    raise HistoryError(
                        f"{self.path}: run {n} is of configuration {r.configuration.label}, not {configuration.label}"
                    )
                return r
        raise HistoryError(f"{self.path}: no run with id {n} (ids: {', '.join(str(r.id) for r in runs) or 'none'})")

    def records(self, run: Run) -> list[SampleResult]:
        """The run's records, sorted by id, each checked as a results file's are: a damaged row
        is a :class:`HistoryError` that names it."""
        names = [f.name for f in FIELDS]
        out = []
        with self._errors():
            rows = self._db.execute(
                f"SELECT {_SELECT} FROM outcomes o JOIN cases c ON c.id = o.case_id"
                " LEFT JOIN messages m ON m.id = o.message WHERE o.run = ? ORDER BY c.key",
                (run.id,),
            )
            for row in rows:
                out.append(self._record(run.id, names, row))
        return out

    def _record(self, run: int, names: list[str], row: tuple[Any, ...]) -> SampleResult:
        """A record from a row of :data:`_SELECT` (``names``: the fields' names), checked as a
        results file's are: a damaged row is a :class:`HistoryError` that names it."""
        try:
            if _NESTED:
                row = tuple(json.loads(v or "[]") if i in _NESTED else v for i, v in enumerate(row))
            return SampleResult.from_json(dict(zip(names, row)))
        except (ValueError, TypeError) as e:
            raise HistoryError(f"{self.path}: run {run}, sample {row[0]!r}: {e}; the database is damaged") from None

    def environment(self, run: Run) -> dict[str, str]:
        """The run's environment, as a results file records it."""
        env = {"torch": run.torch, "torch_git": run.torch_git, "python": run.python, "platform": run.platform}
        env.update({"optests": run.optests, "date": run.date})
        return env

    def flaky_counts(self) -> Counter[int]:
        """Per run id: how many of its samples were flaky (runs with none are left out)."""
        with self._errors():
            return Counter(dict(self._db.execute("SELECT run, COUNT(*) FROM outcomes WHERE verdict = 'flaky' GROUP BY run")))

    def flakes(self) -> list[Flakes]:
        """Every sample that was flaky in some run: in how many of the runs that recorded it, and
        when last; the most often flaky first."""
        with self._errors():
            rows = self._db.execute(
                "SELECT c.key, COUNT(*), MAX(r.date), o.case_id FROM outcomes o JOIN cases c ON c.id = o.case_id"
                " JOIN runs r ON r.id = o.run WHERE o.verdict = 'flaky' GROUP BY o.case_id, c.key"
            ).fetchall()
            out = []
            for key, flaky, last, case_id in rows:
                (runs,) = self._db.execute("SELECT COUNT(*) FROM outcomes WHERE case_id = ?", (case_id,)).fetchone()
                out.append(Flakes(key, flaky, runs, last))
        return sorted(out, key=lambda f: (-f.flaky, f.sample))

    def counts(self) -> dict[int, Counter[tuple[str, str]]]:
        """Per run id: (mode, outcome) -> samples."""
        out: dict[int, Counter[tuple[str, str]]] = {}
        with self._errors():
            for run, mode, outcome, n in self._db.execute("SELECT run, mode, outcome, count FROM run_counts"):
                out.setdefault(run, Counter())[(mode, outcome)] = n
        return out

    def op_counts(self, runs: Sequence[Run]) -> dict[int, dict[str, tuple[int, int]]]:
        """Per run id: op id -> (passed, failed) samples; what the history strips show."""
        out: dict[int, dict[str, tuple[int, int]]] = {r.id: {} for r in runs}
        ids = [r.id for r in runs]
        with self._errors():
            for i in range(0, len(ids), 500):
                part = ids[i : i + 500]
                marks = ", ".join("?" * len(part))
                for run, op, passed, failed in self._db.execute(
                    f"SELECT run, op, passed, failed FROM op_counts WHERE run IN ({marks})", part
                ):
                    out[run][op] = (passed, failed)
        return out

    def flagged(self, runs: Sequence[Run]) -> dict[int, Counter[tuple[str, str, str]]]:
        """Per run id: (op id, verdict, cause) -> samples, over the samples that failed or whose
        verdict is ``unexpected_pass`` or ``flaky`` (what the dashboard's history strips and its
        view by cause count per night; the verdict "" where none was recorded, the cause "" where
        the sample did not fail). Grouped in SQL on the stored verdict and cause; a run with
        failures stored before causes were (schema 7: an empty cause) has those records read and
        their cause made as :meth:`records` makes it."""
        out: dict[int, Counter[tuple[str, str, str]]] = {r.id: Counter() for r in runs}
        unstored: set[int] = set()
        ids = [r.id for r in runs]
        names = [f.name for f in FIELDS]
        with self._errors():
            for i in range(0, len(ids), 500):
                part = ids[i : i + 500]
                marks = ", ".join("?" * len(part))
                for run, op, variant, verdict, cause, outcome, n in self._db.execute(
                    "SELECT o.run, c.op, c.variant, o.verdict, o.cause, o.outcome, COUNT(*) FROM outcomes o"
                    f" JOIN cases c ON c.id = o.case_id WHERE o.run IN ({marks})"
                    " AND (o.outcome = 'failed' OR o.verdict IN ('unexpected_pass', 'flaky'))"
                    " GROUP BY o.run, c.op, c.variant, o.verdict, o.cause, o.outcome",
                    part,
                ):
                    if outcome == "failed" and not cause:
                        unstored.add(run)
                    else:
                        out[run][(f"{op}.{variant}" if variant else op, verdict, cause)] += n
            for run in sorted(unstored):
                rows = self._db.execute(
                    f"SELECT {_SELECT} FROM outcomes o JOIN cases c ON c.id = o.case_id LEFT JOIN messages m ON m.id = o.message"
                    " WHERE o.run = ? AND o.outcome = 'failed' AND o.cause = ''",
                    (run,),
                )
                for row in rows:
                    r = self._record(run, names, row)
                    out[run][(r.op_id, r.verdict.value if r.verdict else "", r.cause)] += 1
        return out

    def flaky_samples(self, runs: Sequence[Run]) -> list[tuple[str, int, int, str]]:
        """The samples whose record is ``flaky`` in some of ``runs`` (those of one configuration):
        each as (its id, the runs in which it was flaky, the runs of ``runs`` that recorded it, the
        date of the last in which it was flaky), the most often flaky first."""
        ids = [r.id for r in runs]
        flaky: dict[int, list[Any]] = {}
        with self._errors():
            for i in range(0, len(ids), 500):
                part = ids[i : i + 500]
                marks = ", ".join("?" * len(part))
                for case_id, key, n, last in self._db.execute(
                    "SELECT o.case_id, c.key, COUNT(*), MAX(r.date) FROM outcomes o JOIN cases c ON c.id = o.case_id"
                    f" JOIN runs r ON r.id = o.run WHERE o.verdict = 'flaky' AND o.run IN ({marks}) GROUP BY o.case_id, c.key",
                    part,
                ):
                    seen = flaky.setdefault(case_id, [key, 0, 0, ""])
                    seen[1] += n
                    seen[3] = max(seen[3], last)
            for case_id, seen in flaky.items():
                for i in range(0, len(ids), 500):
                    part = ids[i : i + 500]
                    marks = ", ".join("?" * len(part))
                    (n,) = self._db.execute(
                        f"SELECT COUNT(*) FROM outcomes WHERE case_id = ? AND run IN ({marks})", (case_id, *part)
                    ).fetchone()
                    seen[2] += n
        return sorted(((k, n, total, last) for k, n, total, last in flaky.values()), key=lambda f: (-f[1], f[0]))
