"""Results files (SPEC section 4): one record per sample, versioned JSON. Torch-free."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import platform
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ._findings import Outcome, Stage

SCHEMA_VERSION = 1
KIND = "optests-results"
#: A results file being written: JSON lines, a header then one record a line (see Journal).
JOURNAL_KIND = "optests-results-journal"


@dataclasses.dataclass(frozen=True)
class SampleResult:
    """What happened to one sample in one mode, dtype and device."""

    #: Stable test id, e.g. ``static-float32-cpu-sin-sample3``.
    id: str
    op: str
    variant: str
    db: str
    mode: str
    dtype: str
    device: str
    #: Sample index within the op's samples; ``None`` for a not-applicable record.
    sample: int | None
    outcome: Outcome
    stage: Stage | None = None
    message: str = ""
    duration: float = 0.0
    #: How the expected-failures registry judged it (``xfailed``, ``unexpected_failure``, ...).
    verdict: str = ""

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["outcome"] = self.outcome.value
        d["stage"] = self.stage.value if self.stage else None
        d["duration"] = round(self.duration, 4)
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SampleResult:
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - fields
        if unknown:
            raise ValueError(f"unknown fields {sorted(unknown)}")
        values = dict(d)
        values["outcome"] = Outcome(values["outcome"])
        values["stage"] = Stage(values["stage"]) if values.get("stage") else None
        return cls(**values)

    @property
    def op_id(self) -> str:
        return f"{self.op}.{self.variant}" if self.variant else self.op


def now() -> str:
    """The current time as results files record it: ISO 8601, UTC, seconds."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def environment(date: str | None = None) -> dict[str, str]:
    """Where and when (``date``: the run's start, default now) a run happened. Imports torch
    (callers on the torch-free path pass their own)."""
    import torch

    from . import __version__

    return {
        "date": date or now(),
        "torch": torch.__version__,
        "torch_git": getattr(torch.version, "git_version", "") or "",
        "cuda": torch.version.cuda or "",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "optests": __version__,
    }


def write_json_atomic(path: Path, data: Any) -> None:
    """Sorted keys, indent 2, trailing newline; written to a temp file and renamed into place,
    so a crash mid-write leaves the old file intact. The file keeps the mode of the one it
    replaces, or gets the one ``open`` would give (a temp file's own is owner-only)."""
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write(path: Path, results: Iterable[SampleResult], env: Mapping[str, str]) -> None:
    records = sorted(results, key=lambda r: r.id)
    write_json_atomic(
        path,
        {"schema_version": SCHEMA_VERSION, "kind": KIND, "environment": dict(env), "samples": [r.to_json() for r in records]},
    )


class ResultsError(ValueError):
    """A results file that cannot be read; the message names the file and what is wrong."""


class Journal:
    """The records of a run as they arrive, one JSON line each, beside the results file
    (``RESULTS.partial``): a run that is killed keeps what it checked, and ``read`` (so
    ``optests merge``, ``accept`` and ``history ingest``) takes the journal as it is."""

    def __init__(self, results: Path, env: Mapping[str, str]) -> None:
        self.path = results.with_name(results.name + ".partial")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("w")
        self._file.write(json.dumps({"kind": JOURNAL_KIND, "schema_version": SCHEMA_VERSION, "environment": dict(env)}) + "\n")

    def add(self, record: SampleResult) -> None:
        self._file.write(json.dumps(record.to_json(), sort_keys=True) + "\n")
        self._file.flush()  # to the OS: a killed process loses nothing; no fsync per record

    def finish(self) -> None:
        """The results file is written: the journal is no longer needed."""
        self._file.close()
        self.path.unlink(missing_ok=True)


def _read_journal(path: Path, text: str) -> tuple[dict[str, str], list[SampleResult]]:
    lines = text.split("\n")
    header = json.loads(lines[0])
    records = []
    for n, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        try:
            records.append(SampleResult.from_json(json.loads(line)))
        except json.JSONDecodeError:
            if n == len(lines):  # the last line, cut off when the writer was killed
                break
            raise ResultsError(f"{path}:{n}: not a valid journal line") from None
        except (KeyError, TypeError, ValueError) as e:
            raise ResultsError(f"{path}:{n}: {e}") from None
    return dict(header.get("environment", {})), records


def read(path: Path) -> tuple[dict[str, str], list[SampleResult]]:
    """A results file, or the journal of a run that did not finish (``RESULTS.partial``)."""
    try:
        text = path.read_text()
        first = text.split("\n", 1)[0]
        if first.startswith("{") and f'"kind": "{JOURNAL_KIND}"' in first:
            return _read_journal(path, text)
        data = json.loads(text)
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file") from None
    except json.JSONDecodeError as e:
        raise ResultsError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise ResultsError(f'{path}: not an optests results file (no "kind": "{KIND}")')
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ResultsError(
            f"{path}: schema_version {data.get('schema_version')!r} is not supported (this optests reads {SCHEMA_VERSION})"
        )
    records = []
    for i, d in enumerate(data.get("samples", [])):
        try:
            records.append(SampleResult.from_json(d))
        except (KeyError, TypeError, ValueError) as e:
            raise ResultsError(f"{path}: samples[{i}]: {e}") from None
    return dict(data.get("environment", {})), records


def merge(record_sets: Iterable[Iterable[SampleResult]]) -> dict[str, SampleResult]:
    """One record per test id from several runs or shards. A test id recorded twice with the
    same outcome and stage is fine; with different ones it is a conflict."""
    merged: dict[str, SampleResult] = {}
    for records in record_sets:
        for r in records:
            old = merged.get(r.id)
            if old is not None and (old.outcome, old.stage) != (r.outcome, r.stage):
                raise ResultsError(
                    f"{r.id} is recorded twice with different results ({old.outcome.value}/{old.stage} and {r.outcome.value}/{r.stage})"
                )
            # keep one of two agreeing records, the same one whatever the order
            merged[r.id] = r if old is None else max(old, r, key=lambda x: (x.message, x.duration))
    return merged


def merge_files(paths: Iterable[Path]) -> tuple[dict[str, str], list[SampleResult]]:
    """Shards of one run (``--splits``, ``-k``, per mode) as one: the records merged, the
    environment of the shards (which must agree on torch), dated at the earliest shard's start."""
    envs, record_sets = [], []
    for path in paths:
        env, records = read(path)
        envs.append((path, env))
        record_sets.append(records)
    torches = {env.get("torch", "") for _, env in envs}
    if len(torches) > 1:
        raise ResultsError(
            "the results come from different torch versions ("
            + ", ".join(f"{path}: {env.get('torch', '?')}" for path, env in envs)
            + "); they are not shards of one run"
        )
    env = dict(envs[0][1])
    dates = sorted(e["date"] for _, e in envs if e.get("date"))
    if dates:
        env["date"] = dates[0]
    return env, sorted(merge(record_sets).values(), key=lambda r: r.id)
