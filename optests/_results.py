"""Results files (``docs/contract.md``, "Results"): one record per sample, versioned JSON. Torch-free."""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ._files import WriteError, write_json_atomic
from ._findings import Outcome, Stage, Verdict
from ._key import DEFAULT_BACKEND, DEVICES, DTYPES, MODES, Mode, SampleKey

#: 2 added ``tolerance`` to records and ``complete`` to the file; 3 added ``transform`` to records
#: (the input transform that derived the sample). Files of versions 1 and 2 still read.
SCHEMA_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
KIND = "optests-results"
#: A results file being written: JSON lines, a header then one record a line (see Journal).
JOURNAL_KIND = "optests-results-journal"


@dataclasses.dataclass(frozen=True)
class SampleResult:
    """What happened to one sample in one mode, dtype and device."""

    key: SampleKey
    #: The OpInfo database the op comes from (empty for an author's op).
    db: str
    outcome: Outcome
    stage: Stage | None = None
    message: str = ""
    duration: float = 0.0
    #: How the expected-failures registry judged it; None if it was not judged.
    verdict: Verdict | None = None
    #: Tolerances beyond ``assert_close``'s defaults that judged it: the OpInfo's own
    #: ``toleranceOverride``, or differences put down to float32 rounding (see the check).
    tolerance: str = ""

    @property
    def id(self) -> str:
        return self.key.id

    @property
    def op(self) -> str:
        return self.key.op

    @property
    def variant(self) -> str:
        return self.key.variant

    @property
    def op_id(self) -> str:
        return self.key.op_id

    @property
    def mode(self) -> Mode:
        return self.key.mode

    @property
    def dtype(self) -> str:
        return self.key.dtype

    @property
    def device(self) -> str:
        return self.key.device

    @property
    def sample(self) -> int | None:
        return self.key.sample

    @property
    def transform(self) -> str:
        return self.key.transform

    def to_json(self) -> dict[str, Any]:
        k = self.key
        backend = {"backend": k.backend} if k.backend != DEFAULT_BACKEND else {}  # aot_eager's records as they were
        return backend | {
            "id": k.id,
            "op": k.op,
            "variant": k.variant,
            "db": self.db,
            "mode": k.mode.value,
            "dtype": k.dtype,
            "device": k.device,
            "sample": k.sample,
            "transform": k.transform,
            "outcome": self.outcome.value,
            "stage": self.stage.value if self.stage else None,
            "message": self.message,
            "duration": round(self.duration, 4),
            "verdict": self.verdict.value if self.verdict else "",
            "tolerance": self.tolerance,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SampleResult:
        """A record as ``to_json`` writes it, every field checked: a ``ValueError`` names the
        field and its value (``sample=-1, but expected null or an integer >= 0``)."""
        if not isinstance(d, Mapping):
            raise ValueError(f"a record must be a JSON object, got {type(d).__name__}")
        unknown = set(d) - set(_FIELDS)
        if unknown:
            raise ValueError(f"unknown fields {sorted(unknown)}")
        for name, required in _FIELDS.items():
            if name not in d:
                if required:
                    raise ValueError(f"missing field {name!r}")
            elif name in _TEXT and not isinstance(d[name], str):
                raise ValueError(_bad(name, d[name], "a string"))
        for name, valid in (("mode", MODES), ("dtype", DTYPES), ("device", DEVICES)):
            if d[name] not in valid:
                raise ValueError(_bad(name, d[name], f"one of {', '.join(valid)}"))
        sample = d["sample"]
        if sample is not None and (type(sample) is not int or sample < 0):
            raise ValueError(_bad("sample", sample, "null or an integer >= 0"))
        duration = d.get("duration", 0.0)
        if type(duration) not in (int, float) or not math.isfinite(duration) or duration < 0:
            raise ValueError(_bad("duration", duration, "a finite number of seconds >= 0"))
        outcomes, stages = tuple(o.value for o in Outcome), tuple(s.value for s in Stage)
        if d["outcome"] not in outcomes:
            raise ValueError(_bad("outcome", d["outcome"], f"one of {', '.join(outcomes)}"))
        stage = d.get("stage")
        if stage is not None and stage not in stages:  # None: no stage, or an internal error of optests
            raise ValueError(_bad("stage", stage, f"null or one of {', '.join(stages)}"))
        verdict = d.get("verdict", "")
        verdicts = tuple(v.value for v in Verdict)
        if verdict and verdict not in verdicts:
            raise ValueError(_bad("verdict", verdict, f"empty or one of {', '.join(verdicts)}"))
        key = SampleKey.of_record(
            d["id"], d["op"], d["variant"], d["mode"], d["dtype"], d["device"], sample, d.get("transform", ""),
            d.get("backend", DEFAULT_BACKEND),
        )  # fmt: skip
        return cls(
            key=key,
            db=d["db"],
            outcome=Outcome(d["outcome"]),
            stage=Stage(stage) if stage is not None else None,
            message=d.get("message", ""),
            duration=duration,
            verdict=Verdict(verdict) if verdict else None,
            tolerance=d.get("tolerance", ""),
        )


#: A record's JSON fields, and whether each is required.
_FIELDS = {
    "id": True,
    "op": True,
    "variant": True,
    "db": True,
    "mode": True,
    "dtype": True,
    "device": True,
    "sample": True,
    "transform": False,
    "outcome": True,
    "stage": False,
    "message": False,
    "duration": False,
    "verdict": False,
    "tolerance": False,
    "backend": False,  # written for backends other than aot_eager
}
_TEXT = (
    "id",
    "op",
    "variant",
    "db",
    "mode",
    "dtype",
    "device",
    "transform",
    "outcome",
    "message",
    "verdict",
    "tolerance",
    "backend",
)


def _bad(name: str, value: object, expected: str) -> str:
    return f"{name}={value!r}, but expected {expected}"


def write(path: Path, results: Iterable[SampleResult], env: Mapping[str, str], complete: bool = True) -> None:
    """``complete=False`` marks the results of a run that did not check all it collected
    (interrupted, stopped by ``-x``, or merged from a killed run's journal)."""
    records = sorted(results, key=lambda r: r.id)
    try:
        write_json_atomic(
            path,
            {
                "schema_version": SCHEMA_VERSION,
                "kind": KIND,
                "complete": complete,
                "environment": dict(env),
                "samples": [r.to_json() for r in records],
            },
        )
    except OSError as e:
        raise ResultsError(f"{path}: {describe_os_error(path, e, writing=True)}") from None


class ResultsError(ValueError):
    """A results file that cannot be read or written; the message names the file and what is wrong."""


def describe_os_error(path: Path, e: OSError | UnicodeDecodeError, *, writing: bool = False) -> str:
    """What is wrong with ``path``, from the error reading (UTF-8 text) or writing it, for a
    one-line message: ``is a directory, not a file``, ``cannot write: out is not a directory``."""
    if isinstance(e, WriteError):
        return e.reason
    if isinstance(e, UnicodeDecodeError):
        return f"not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start})"
    for parent in path.parents:  # out/x.json where out is a file: "File exists" or "Not a directory"
        if parent.exists():
            if not parent.is_dir():
                return f"cannot {'write' if writing else 'read'}: {parent} is not a directory"
            break
    if isinstance(e, IsADirectoryError) or path.is_dir():
        return "is a directory, not a file"
    if isinstance(e, FileNotFoundError) and not writing:
        return "no such file"
    return f"cannot {'write' if writing else 'read'}: {e.strerror or e}"


class _NonFinite(ValueError):
    """NaN or Infinity in a JSON file: Python's ``json`` reads them, but they are not JSON."""


def _no_constant(name: str) -> Any:
    raise _NonFinite(f"{name} is not valid JSON (optests never writes NaN or Infinity)")


def loads(text: str) -> Any:
    """``json.loads`` refusing NaN and Infinity, which it accepts by default: a
    ``json.JSONDecodeError`` or a ``ValueError`` naming the constant."""
    return json.loads(text, parse_constant=_no_constant)


class Journal:
    """The records of a run as they arrive, one JSON line each, beside the results file
    (``RESULTS.partial``): a run that is killed keeps what it checked, and ``read`` (so
    ``optests merge``, ``accept`` and ``history ingest``) takes the journal as it is."""

    def __init__(self, results: Path, env: Mapping[str, str]) -> None:
        self.path = results.with_name(results.name + ".partial")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("w")
        self._file.write(
            json.dumps({"kind": JOURNAL_KIND, "schema_version": SCHEMA_VERSION, "environment": dict(env)}, allow_nan=False) + "\n"
        )

    def add(self, record: SampleResult) -> None:
        self._file.write(json.dumps(record.to_json(), sort_keys=True, allow_nan=False) + "\n")
        self._file.flush()  # to the OS: a killed process loses nothing; no fsync per record

    def finish(self) -> None:
        """The results file is written: the journal is no longer needed."""
        self._file.close()
        self.path.unlink(missing_ok=True)


def _read_journal(path: Path, text: str) -> tuple[dict[str, str], list[SampleResult]]:
    lines = text.split("\n")
    header = loads(lines[0])
    if header.get("schema_version") not in READABLE_VERSIONS:
        raise ResultsError(
            f"{path}:1: journal schema_version {header.get('schema_version')!r} is not supported (this optests reads "
            f"{', '.join(map(str, READABLE_VERSIONS))})"
        )
    records = []
    seen: dict[str, int] = {}
    for n, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        try:
            record = SampleResult.from_json(loads(line))
        except json.JSONDecodeError:
            if n == len(lines):  # the last line, cut off when the writer was killed
                break
            raise ResultsError(f"{path}:{n}: not a valid journal line") from None
        except (KeyError, TypeError, ValueError) as e:
            raise ResultsError(f"{path}:{n}: {e}") from None
        if record.id in seen:
            raise ResultsError(f"{path}:{n}: id {record.id!r} is recorded twice (first on line {seen[record.id]})")
        seen[record.id] = n
        records.append(record)
    return _environment(path, header), records


def _environment(path: Path, data: Mapping[str, Any]) -> dict[str, str]:
    env = data.get("environment", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise ResultsError(f'{path}: "environment" must be an object of strings, got {env!r}')
    return dict(env)


def read(path: Path) -> tuple[dict[str, str], list[SampleResult]]:
    """A results file, or the journal of a run that did not finish (``RESULTS.partial``)."""
    env, records, _ = read_with_status(path)
    return env, records


def _text(content: bytes) -> str:
    """A results file's text, gzip-compressed or not (``optests merge --out run.json.gz``)."""
    return (gzip.decompress(content) if content[:2] == b"\x1f\x8b" else content).decode("utf-8")


def read_with_status(path: Path) -> tuple[dict[str, str], list[SampleResult], bool]:
    """:func:`read`, and whether the file holds a whole run: false for a journal, and for a
    results file marked ``"complete": false`` (version 1 files did not say: taken as whole)."""
    try:
        text = _text(path.read_bytes())
    except (OSError, UnicodeDecodeError) as e:
        raise ResultsError(f"{path}: {describe_os_error(path, e)}") from None
    except (EOFError, zlib.error, gzip.BadGzipFile):
        raise ResultsError(f"{path}: a truncated or corrupt gzip file") from None
    try:
        first = text.split("\n", 1)[0]
        if first.startswith("{") and f'"kind": "{JOURNAL_KIND}"' in first:
            return (*_read_journal(path, text), False)
        data = loads(text)
    except json.JSONDecodeError as e:
        raise ResultsError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    except _NonFinite as e:
        raise ResultsError(f"{path}: {e}") from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise ResultsError(f'{path}: not an optests results file (no "kind": "{KIND}")')
    if data.get("schema_version") not in READABLE_VERSIONS:
        raise ResultsError(
            f"{path}: schema_version {data.get('schema_version')!r} is not supported (this optests reads "
            f"{', '.join(map(str, READABLE_VERSIONS))})"
        )
    samples = data.get("samples", [])
    if not isinstance(samples, list):
        raise ResultsError(f'{path}: "samples" must be a list, got {type(samples).__name__}')
    records = []
    seen: dict[str, int] = {}
    for i, d in enumerate(samples):
        try:
            record = SampleResult.from_json(d)
        except (KeyError, TypeError, ValueError) as e:
            raise ResultsError(f"{path}: samples[{i}]: {e}") from None
        if record.id in seen:
            raise ResultsError(f"{path}: samples[{i}]: id {record.id!r} is recorded twice (first at samples[{seen[record.id]}])")
        seen[record.id] = i
        records.append(record)
    complete = data.get("complete", True)
    if not isinstance(complete, bool):
        raise ResultsError(f'{path}: "complete" must be true or false, got {complete!r}')
    return _environment(path, data), records, complete


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


def merge_files(paths: Iterable[Path]) -> tuple[dict[str, str], list[SampleResult], bool]:
    """Shards of one run (``--splits``, ``-k``, per mode) as one: the records merged, the
    environment of the shards (which must agree on torch), dated at the earliest shard's start,
    and whether every shard was whole (a journal or an interrupted shard makes the merge partial)."""
    envs, record_sets, complete = [], [], True
    for path in paths:
        env, records, whole = read_with_status(path)
        envs.append((path, env))
        record_sets.append(records)
        complete = complete and whole
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
    return env, sorted(merge(record_sets).values(), key=lambda r: r.id), complete
