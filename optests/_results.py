"""Results files (``docs/contract.md``, "Results"): one record per sample, versioned JSON. Torch-free."""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import functools
import gzip
import io
import json
import math
import operator
import os
import re
import sys
import weakref
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from ._errors import InputError, JSONError
from ._files import Busy, ReadError, WriteError, claim, gunzip, open_input, read_input, reason, write_atomic
from ._findings import Outcome, Stage, Verdict
from ._json import DECODER, check_strings, duplicate_key, loads
from ._key import BACKEND_NAME, DEFAULT_BACKEND, DEVICES, DTYPES, MODES, SAMPLE_LIMIT, Mode, SampleKey
from .errors import ResultsError as ResultsError

#: 2 added ``tolerance`` to records and ``complete`` to the file; 3 added ``transform`` to records
#: (the input transform that derived the sample) and ``backend`` (the compile step, written where it is not
#: aot_eager); 4 added ``cause`` (a failure's, :mod:`optests._causes`; a record of an older file that
#: failed has it made from its message) and ``reruns`` (what checking a failure again found, written
#: where it was). Files of versions 1 to 3 still read.
SCHEMA_VERSION = 4
READABLE_VERSIONS = (1, 2, 3, 4)
KIND = "optests-results"
#: A results file being written: JSON lines, a header then one record a line (see Journal).
JOURNAL_KIND = "optests-results-journal"


@dataclasses.dataclass(frozen=True, slots=True)
class Try:
    """What one more check of a sample in a fresh process found (``--optests-reruns``): its
    outcome, stage and one-line message, as a record holds them."""

    outcome: Outcome
    stage: Stage | None = None
    message: str = ""

    @classmethod
    def of(cls, record: SampleResult) -> Try:
        return cls(record.outcome, record.stage, record.message)

    @property
    def label(self) -> str:
        """``passed``, or the stage it failed at: how summaries list the tries."""
        return str(self.stage) if self.outcome is Outcome.FAILED and self.stage else str(self.outcome)


@dataclasses.dataclass(frozen=True, slots=True)
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
    #: What the failure is an instance of (:mod:`optests._causes`): a known PyTorch bug's name or
    #: a signature; "" for a record that did not fail. Made from the other fields where not given,
    #: and a given one that names no known bug becomes the name of the catalog's bug it matches
    #: (a file written before the catalog had the entry).
    cause: str = ""
    #: Where a verdict that would fail the run made the entry point check the sample again, each in
    #: a fresh process: what each of those checks found, in order (empty: not checked again). The
    #: record's own outcome, stage and message are the first check's.
    reruns: tuple[Try, ...] = ()
    #: ``key.id``, made once: tools that sort, match and store a million records ask for it often.
    _id: str = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_id", self.key.id)
        if self.outcome is Outcome.FAILED:
            from ._causes import by_name, cause, known_bug

            if not self.cause:
                object.__setattr__(self, "cause", sys.intern(cause(self.key, self.outcome, self.stage, self.message)))
            elif by_name(self.cause) is None and (bug := known_bug(self.key, self.stage, self.message)) is not None:
                # a signature written before the catalog knew its bug (or by another optests): the bug's name
                object.__setattr__(self, "cause", bug.name)
        for name in ("message", "tolerance", "cause"):  # texts that come from exceptions: they may hold anything
            text = getattr(self, name)
            if not text.isascii():
                object.__setattr__(self, name, _writable(text))

    @property
    def id(self) -> str:
        return self._id

    @property
    def tries(self) -> tuple[Try, ...]:
        """Every check of the sample, the first (the record's own) and its reruns."""
        return (Try.of(self), *self.reruns)

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
        """The record as results files hold it, one entry per field of :data:`FIELDS`."""
        out = {name: encode(get(self)) for name, get, encode in _WRITE}
        for f in _OMITTED:
            if out[f.name] == f.default:
                del out[f.name]
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SampleResult:
        """A record as ``to_json`` writes it, every field checked: a ``ValueError`` names the
        field and its value (``sample=-1, but expected null or an integer >= 0``)."""
        if not isinstance(d, Mapping):
            raise ValueError(f"a record must be a JSON object, got {type(d).__name__}")
        unknown = d.keys() - FIELD_NAMES
        if unknown:
            raise ValueError(f"unknown fields {sorted(unknown)}")
        key: dict[str, Any] = {}
        record: dict[str, Any] = {}
        get = d.get
        for name, required, default, check, decode, in_key in _PLAN:
            value = get(name, _ABSENT)
            if value is _ABSENT:
                if required:
                    raise ValueError(f"missing field {name!r}")
                value = default
            problem = check(value)
            if problem is not None:
                raise ValueError(_bad(name, value, problem))
            (key if in_key else record)[name] = decode(value)
        return cls(key=SampleKey.of_record(**key), **record)


_ABSENT: Any = object()
_NONE: Any = object()  # no value stands for "none" (a field every record has)


@dataclasses.dataclass(frozen=True)
class Field:
    """One field of a results record, declared once: its JSON name and value, how reading checks
    it, and where the history keeps it. Results JSON (:meth:`SampleResult.to_json`,
    :meth:`~SampleResult.from_json`), the history's columns, inserts and selects, the
    fingerprint, the diff's JSON and the dashboard's data all derive from :data:`FIELDS`: a new
    field is one line there (and, for the history, a migration that adds its column)."""

    name: str
    #: ``"key"``: part of the sample's identity, passed to :meth:`SampleKey.of_record` by name
    #: (``id`` is checked against the others); ``"record"``: a field of :class:`SampleResult`.
    part: str
    required: bool
    #: The JSON value of a record without the field.
    default: Any
    #: None if a JSON value is valid, else what was expected (``a string``).
    check: Callable[[Any], str | None]
    #: The JSON value of the attribute; the attribute of a checked JSON value.
    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]
    #: Where the history keeps it: ``cases.COLUMN`` (one row per sample id), ``outcomes.COLUMN``
    #: (one row per sample and run), or ``messages.text`` (each text stored once).
    column: str
    #: The results schema version that added it. A later field holding its default is left out
    #: of the fingerprint, so that a run ingested before the field existed hashes the same.
    since: int = 1
    #: Left out of results files where it holds its default (a file without it means the
    #: default): files of runs that do not use the field keep the bytes they had before it.
    omit_default: bool = False
    #: Made from the other fields (and what optests knows), not observed: left out of the
    #: history's fingerprint, so that a run ingested again hashes the same whatever optests knew.
    derived: bool = False
    #: Its JSON value is a list of objects, not a scalar: the history stores it as JSON text
    #: (``""`` for the default), and a results file writes it as ``indent=2`` does.
    nested: bool = False


def _same(value: Any) -> Any:
    return value


def valid_text(value: str) -> str | None:
    """None for text that can be written (as UTF-8, to a terminal or SQLite); else what it
    should have been. JSON can spell a lone surrogate (``"\\ud800"``), which is no text."""
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "text without a lone surrogate"
    return None


def _is_text(value: Any) -> str | None:
    if type(value) is str and value.isascii():
        return None
    return valid_text(value) if isinstance(value, str) else "a string"


def _name(value: Any) -> str | None:
    """An op's name: text, not empty (every id names its op)."""
    if value == "":
        return "a non-empty string"
    return _is_text(value)


def _choice(values: Sequence[str], none: Any = _NONE) -> Callable[[Any], str | None]:
    """One of ``values``, or ``none`` (``None``, ``""``) where a record may have none."""
    allowed = frozenset(values)
    words = f"one of {', '.join(values)}"

    def check(value: Any) -> str | None:
        if (isinstance(value, str) and value in allowed) or (none is not _NONE and value == none and type(value) is type(none)):
            return None
        if none is None:
            return f"null or {words}"
        if not isinstance(value, str):
            return "a string"
        return words if none is _NONE else f"empty or {words}"

    return check


def _enum(cls: type[enum.Enum], none: Any = _NONE) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """Encode and decode an enum field; ``none`` (``None``, ``""``) stands for no value."""

    def encode(value: Any) -> Any:
        return none if value is None else value.value

    def decode(value: Any) -> Any:
        return None if none is not _NONE and value == none else cls(value)

    return encode, decode


def _writable(text: str) -> str:
    """``text`` as UTF-8 can hold it: a lone surrogate (an exception that names a file whose name
    is not UTF-8) becomes its escape, ``\\udcff``, so that optests never writes a file its own
    reader refuses."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _sample(value: Any) -> str | None:
    # the registry's bound too: a record that is read can be accepted, and its entry read again
    ok = value is None or (type(value) is int and 0 <= value < SAMPLE_LIMIT)
    return None if ok else f"null or an integer from 0 to {SAMPLE_LIMIT - 1:,}"


def _duration(value: Any) -> str | None:
    ok = type(value) in (int, float) and math.isfinite(value) and value >= 0
    return None if ok else "a finite number of seconds >= 0"


def _backend(value: Any) -> str | None:
    ok = type(value) is str and re.fullmatch(BACKEND_NAME, value) is not None
    return None if ok else "a backend's name (ASCII letters, digits, '_', '.', ':')"


def _seconds(value: float) -> float:
    return round(value, 4)


_TRY_KEYS = frozenset(("outcome", "stage", "message"))


def _tries(value: Any) -> str | None:
    """A list of ``{"outcome": ..., "stage": ..., "message": ...}``, each checked as a record's."""
    expected = 'a list of {"outcome", "stage", "message"} objects'
    if type(value) is not list:
        return expected
    for t in value:
        if type(t) is not dict or t.keys() != _TRY_KEYS:
            return expected
        if _is_outcome(t["outcome"]) or _is_stage(t["stage"]) or _is_text(t["message"]):
            return expected + " (outcomes, stages and text as a record has them)"
    return None


def _encode_tries(tries: tuple[Try, ...]) -> list[dict[str, Any]]:
    return [{"outcome": t.outcome.value, "stage": t.stage.value if t.stage else None, "message": t.message} for t in tries]


def _decode_tries(value: list[dict[str, Any]]) -> tuple[Try, ...]:
    return tuple(Try(Outcome(t["outcome"]), Stage(t["stage"]) if t["stage"] else None, t["message"]) for t in value)


_words = functools.partial(Field, check=_is_text, encode=_same, decode=sys.intern)  # repeated words: stored once
_is_outcome = _choice([o.value for o in Outcome])
_is_stage = _choice([s.value for s in Stage], None)

#: A results record, field by field, in the order the contract lists them.
FIELDS: tuple[Field, ...] = (
    Field("id", "key", True, "", _is_text, _same, _same, "cases.key"),
    _words("op", "key", True, "", column="cases.op", check=_name),
    _words("variant", "key", True, "", column="cases.variant"),
    _words("db", "record", True, "", column="cases.db"),
    Field("mode", "key", True, "", _choice(MODES), str, sys.intern, "cases.mode"),
    Field("dtype", "key", True, "", _choice(DTYPES), _same, sys.intern, "cases.dtype"),
    Field("device", "key", True, "", _choice(DEVICES), _same, sys.intern, "cases.device"),
    Field("sample", "key", True, None, _sample, _same, _same, "cases.sample"),
    _words("transform", "key", False, "", column="cases.transform", since=3),
    Field("outcome", "record", True, "", _is_outcome, *_enum(Outcome), "outcomes.outcome"),
    # null: no stage, or an internal error of optests
    Field("stage", "record", False, None, _is_stage, *_enum(Stage, None), "outcomes.stage"),
    Field("message", "record", False, "", _is_text, _same, _same, "messages.text"),
    Field("duration", "record", False, 0.0, _duration, _seconds, _same, "outcomes.duration"),
    Field("verdict", "record", False, "", _choice([v.value for v in Verdict], ""), *_enum(Verdict, ""), "outcomes.verdict"),
    _words("tolerance", "record", False, "", column="outcomes.tolerance", since=2),
    Field("backend", "key", False, DEFAULT_BACKEND, _backend, _same, sys.intern, "cases.backend", since=3, omit_default=True),
    # made from the fields above (and the catalog of known bugs): not part of what a run is
    _words("cause", "record", False, "", column="outcomes.cause", since=4, omit_default=True, derived=True),
    Field(
        "reruns",
        "record",
        False,
        [],
        _tries,
        _encode_tries,
        _decode_tries,
        "outcomes.reruns",
        since=4,
        omit_default=True,
        nested=True,
    ),
)
FIELD_NAMES = frozenset(f.name for f in FIELDS)
#: What ``from_json`` does with each field, unpacked once: a million records are read in a loop.
_OMITTED = tuple(f for f in FIELDS if f.omit_default)


def attribute(f: Field) -> Callable[[SampleResult], Any]:
    """How a record gives a field's value: its own attribute, its key's, or its id (made once)."""
    return operator.attrgetter("_id" if f.name == "id" else f"key.{f.name}" if f.part == "key" else f.name)


_WRITE = tuple((f.name, attribute(f), f.encode) for f in FIELDS)
_PLAN = tuple((f.name, f.required, f.default, f.check, f.decode, f.part == "key") for f in FIELDS)


def _bad(name: str, value: object, expected: str) -> str:
    return f"{name}={value!r}, but expected {expected}"


def write(path: Path, results: Iterable[SampleResult], env: Mapping[str, str], complete: bool = True) -> None:
    """``complete=False`` marks the results of a run that did not check all it collected
    (interrupted, stopped by ``-x``, or merged from a killed run's journal)."""
    records = sorted(results, key=lambda r: r.id)
    try:
        write_atomic(path, _document(records, env, complete))
    except OSError as e:
        raise ResultsError(f"{path}: {describe_os_error(path, e, writing=True)}") from None


def _document(records: Iterable[SampleResult], env: Mapping[str, str], complete: bool) -> Iterator[str]:
    """A results file's text a record at a time: byte for byte what ``write_json_atomic`` makes
    of the whole (sorted keys, indent 2, a trailing newline), without the whole in memory."""
    head = {"complete": complete, "environment": dict(env), "kind": KIND, "samples": [], "schema_version": SCHEMA_VERSION}
    before, after = json.dumps(head, indent=2, sort_keys=True, allow_nan=False).split('"samples": []')
    yield before + '"samples": ['
    sep = "\n    "
    encode = _RECORD.encode
    for r in records:
        if r.reruns:  # a list among its values: as indent=2 writes it, two levels in
            yield sep + json.dumps(r.to_json(), indent=2, sort_keys=True, allow_nan=False).replace("\n", "\n    ")
        else:
            # a record's values are scalars, and a newline in a string is escaped: its items, one
            # a line, are what indent=2 makes of them (by json's C encoder, which indent would turn off)
            yield sep + "{\n      " + encode(r.to_json())[1:-1] + "\n    }"
        sep = ",\n    "
    yield ("]" if sep == "\n    " else "\n  ]") + after + "\n"


_RECORD = json.JSONEncoder(sort_keys=True, allow_nan=False, separators=(",\n      ", ": "))


def describe_os_error(path: Path, e: OSError | UnicodeDecodeError, *, writing: bool = False) -> str:
    """What is wrong with ``path``, from the error reading (UTF-8 text) or writing it, for a
    one-line message: ``is a directory, not a file``, ``cannot write: out is not a directory``."""
    if isinstance(e, (WriteError, ReadError)):
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


def readable_version(version: object, readable: tuple[int, ...]) -> bool:
    """Whether a file's ``schema_version`` is one of ``readable``: an integer, not ``true`` (which
    Python compares equal to 1) nor ``3.0``."""
    return type(version) is int and version in readable


#: What a resumed run's environment must share with the journal it goes on from: the torch build
#: (its results would not be one run's otherwise). The date, the machine and optests may differ.
RESUMED_UNDER = ("torch", "torch_git", "cuda")


def journal_path(results: Path) -> Path:
    """Where a run writing ``results`` keeps its journal: ``RESULTS.partial`` beside it."""
    return results.with_name(results.name + ".partial")


def _is_journal_header(line: str) -> bool:
    return line.startswith("{") and f'"kind": "{JOURNAL_KIND}"' in line


def _decided_again(record: SampleResult) -> bool:
    """A dead run's record that a resumed run does not replay but decides again, appending the new
    record to the journal: a skip (a skip entry or decoration since removed must not pass its test
    unchecked; a skip is cheap to decide again)."""
    return record.outcome is Outcome.SKIPPED


def replayable(records: Iterable[SampleResult]) -> dict[str, SampleResult]:
    """The records of a dead run that a resumed run replays, by id."""
    return {r.id: r for r in records if not _decided_again(r)}


class Journal:
    """The records of a run as they arrive, one JSON line each, beside the results file
    (``RESULTS.partial``): a run that is killed keeps what it checked, and ``read`` (so
    ``optests merge``, ``accept`` and ``history ingest``) takes the journal as it is.

    One run writes a journal: it holds an ``flock`` on it from its start (the kernel releases it
    if the run dies), so a second run on the same results path is refused with :class:`Busy`
    and leaves the first's journal untouched, and a finishing run removes only its own. A write
    that fails raises :class:`WriteError` naming the journal and the errno; the lines written
    before it stay readable.

    ``resume``: a dead run's journal is gone on from, not started afresh: its records are kept
    (:attr:`resumed`) and this run's appended after them, so a run killed again loses nothing
    either. It must have been written under the same torch (:data:`RESUMED_UNDER`); a
    :class:`ResultsError` says why not."""

    def __init__(self, results: Path, env: Mapping[str, str], *, resume: bool = False) -> None:
        self.path = journal_path(results)
        try:
            fd = claim(self.path)
        except Busy:
            raise Busy(
                results, f"another run is writing it (it holds the lock on {self.path.name}); wait for it, or write elsewhere"
            ) from None
        self._file = os.fdopen(fd, "w", encoding="utf-8")
        _JOURNALS.add(self)
        #: The records of the dead run this one goes on from (``resume``), by id.
        self.resumed: dict[str, SampleResult] = {}
        #: Let go of and left in place (:meth:`close`), not removed (:meth:`finish`).
        self.kept = False
        try:
            if not (resume and self._go_on(env)):
                self._file.seek(0)
                self._file.truncate(0)  # a dead run's journal: only now, with the lock held
                self._write(
                    json.dumps(
                        {"kind": JOURNAL_KIND, "schema_version": SCHEMA_VERSION, "environment": dict(env)}, allow_nan=False
                    )
                )
        except BaseException:
            self.close()
            raise

    def _go_on(self, env: Mapping[str, str]) -> bool:
        """Read the dead run's journal (the lock held) into :attr:`resumed` and place the next
        write after its last whole line (a line cut off by the kill is dropped). False where there
        is nothing to go on from: no journal, or not even its header was written whole."""
        fd = self._file.fileno()
        with open(fd, "rb", closefd=False) as f:
            first = f.readline()
            end = f.seek(0, os.SEEK_END)
            while end > 0:  # back to the last newline: the kill may have cut the last line off
                f.seek(max(0, end - _CHUNK))
                tail = f.read(end - f.tell())
                if b"\n" in tail:
                    end -= len(tail) - tail.rindex(b"\n") - 1
                    break
                end -= len(tail)
        if not first.endswith(b"\n"):
            return False
        if not _is_journal_header(first.decode("utf-8", "replace")):
            raise ResultsError(f"{self.path}: not an optests journal; remove it, or write the results elsewhere")
        os.ftruncate(fd, end)  # read what the workers will read: the whole lines alone
        old, records = read(self.path)
        for key in RESUMED_UNDER:
            if old.get(key, "") != env.get(key, ""):
                raise ResultsError(
                    f"{self.path}: written under {key} {old.get(key, '') or 'none'}, this run has "
                    f"{env.get(key, '') or 'none'}: resume under the same one, or start afresh without --optests-resume"
                )
        self.resumed = replayable(records)
        self._file.seek(0, os.SEEK_END)
        return True

    def _write(self, line: str) -> None:
        try:
            self._file.write(line + "\n")
            self._file.flush()  # to the OS: a killed process loses nothing; no fsync per record
        except OSError as e:
            raise WriteError(self.path, f"cannot be written: {reason(e)}") from None

    def add(self, record: SampleResult) -> None:
        self._write(json.dumps(record.to_json(), sort_keys=True, allow_nan=False))

    def close(self) -> None:
        """Release the journal and keep it: the results lack some of its records, or were not
        written."""
        self._release()
        self.kept = True

    def finish(self) -> None:
        """The results file is written and holds every record: the journal is no longer needed.
        Removed while its lock is held, so never another run's."""
        self.path.unlink(missing_ok=True)
        self._release()

    def _release(self) -> None:
        with contextlib.suppress(OSError):  # a buffer that a full disk would not take
            self._file.close()

    def _disown(self) -> None:
        """In a forked child (the sweep's runner): let go of the journal, so that the lock lives
        and dies with the run that took it, not with a child orphaned on a hanging sample. The
        descriptor is pointed at ``/dev/null`` rather than closed: the child's copy of the file
        object stays harmless, and the number is not reused under it."""
        with contextlib.suppress(OSError, ValueError):  # ValueError: already closed
            null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
            os.dup2(null, self._file.fileno(), inheritable=False)
            os.close(null)


#: The journals this process holds; a forked child lets go of each (:meth:`Journal._disown`).
_JOURNALS: weakref.WeakSet[Journal] = weakref.WeakSet()


def _disown_journals() -> None:
    for journal in list(_JOURNALS):
        journal._disown()


os.register_at_fork(after_in_child=_disown_journals)


def _read_journal(path: Path, lines: Iterator[tuple[str, bool]]) -> tuple[dict[str, str], list[SampleResult]]:
    """A journal from its lines, each with whether a newline ends it (the last line of a killed
    writer may be cut off: it is left out). An id is recorded once, unless a resumed run decided its
    record again (:func:`_decided_again`) and appended the one that takes its place."""
    header = loads(next(lines)[0])
    if not readable_version(header.get("schema_version"), READABLE_VERSIONS):
        raise ResultsError(
            f"{path}:1: journal schema_version {header.get('schema_version')!r} is not supported (this optests reads "
            f"{', '.join(map(str, READABLE_VERSIONS))})"
        )
    records: dict[str, tuple[int, SampleResult]] = {}  # by id: the line that stands, and its record
    for n, (line, ended) in enumerate(lines, 2):
        if not line.strip():
            continue
        try:
            record = SampleResult.from_json(loads(line))
        except JSONError as e:
            if e.lineno is None:  # JSON, but not what optests writes
                raise ResultsError(f"{path}:{n}: {e}") from None
            if not ended:  # the last line, cut off when the writer was killed
                break
            raise ResultsError(f"{path}:{n}: not a valid journal line") from None
        except (KeyError, TypeError, ValueError) as e:
            raise ResultsError(f"{path}:{n}: {e}") from None
        before = records.get(record.id)
        if before is not None and not _decided_again(before[1]):
            raise ResultsError(f"{path}:{n}: id {record.id!r} is recorded twice (first on line {before[0]})")
        records[record.id] = (n, record)
    return _environment(path, header), [r for _, r in records.values()]


def _lines(f: IO[str], buf: str) -> Iterator[tuple[str, bool]]:
    """The lines of ``buf`` and what follows in ``f``, split at ``\n`` only."""
    while True:
        *done, buf = buf.split("\n")
        for line in done:
            yield line, True
        chunk = f.read(_CHUNK)
        if not chunk:
            yield buf, False
            return
        buf += chunk


def _environment(path: Path, data: Mapping[str, Any]) -> dict[str, str]:
    env = data.get("environment", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) and valid_text(v) is None for v in env.values()):
        raise ResultsError(f'{path}: "environment" must be an object of strings, got {env!r}')
    return dict(env)


def read(path: Path) -> tuple[dict[str, str], list[SampleResult]]:
    """A results file, or the journal of a run that did not finish (``RESULTS.partial``)."""
    env, records, _ = read_with_status(path)
    return env, records


def _text(path: Path, content: bytes) -> str:
    """A results file's text, gzip-compressed or not (``optests merge --out run.json.gz``)."""
    return (gunzip(path, content) if content[:2] == b"\x1f\x8b" else content).decode("utf-8")


def read_text(path: Path) -> str:
    """A file's UTF-8 text, gzip-compressed or not, read whole; an :class:`InputError`
    ``PATH: what is wrong`` where it cannot be (no such file, a truncated or corrupt gzip file,
    not UTF-8 text, not a regular file, larger than :data:`~optests._files.INPUT_LIMIT` read or
    expanded)."""
    try:
        content = read_input(path)
    except OSError as e:
        raise InputError(f"{path}: {describe_os_error(path, e)}") from None
    try:
        return _text(path, content)
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: {describe_os_error(path, e)}") from None
    except (EOFError, zlib.error, gzip.BadGzipFile):
        raise InputError(f"{path}: a truncated or corrupt gzip file") from None


#: How much of a results file is read at a time.
_CHUNK = 1 << 20
#: The most text one record may take before a reader gives up looking for its end.
_MAX_VALUE = 64 << 20


class _Odd(Exception):
    """A file the streaming reader leaves to the whole-file one, whose errors say what is wrong."""


class _Scanner:
    """A JSON text read a chunk at a time and decoded a value at a time, so that a file of a
    million records is never in memory whole, as text or as objects. Values are decoded by the
    rules of :func:`~optests._json.loads` (its decoder, and its check for lone surrogates);
    positions in errors are those of the whole text (line and column, as ``json`` gives them)."""

    _SPACE = re.compile(r"[ \t\n\r]*")

    def __init__(self, f: IO[str], buf: str) -> None:
        self.f, self.buf, self.pos, self.eof = f, buf, 0, False
        self.line, self.column = 1, 0  # of buf[0]: its line, and its column less one

    def _more(self) -> bool:
        if self.eof:
            return False
        chunk = self.f.read(_CHUNK)
        if not chunk:
            self.eof = True
            return False
        if self.pos > _CHUNK:  # forget what has been read
            done = self.buf[: self.pos]
            newlines = done.count("\n")
            self.line += newlines
            self.column = self.pos - done.rfind("\n") - 1 if newlines else self.column + self.pos
            self.buf, self.pos = self.buf[self.pos :], 0
        self.buf += chunk
        return True

    def error(self, msg: str, pos: int | None = None) -> JSONError:
        pos = self.pos if pos is None else pos
        newlines = self.buf.count("\n", 0, pos)
        if newlines:
            return JSONError(msg, self.line + newlines, pos - self.buf.rfind("\n", 0, pos))
        return JSONError(msg, self.line, self.column + pos + 1)

    def peek(self) -> str:
        """The next character that is not white space; empty at the end."""
        while True:
            match = self._SPACE.match(self.buf, self.pos)
            assert match is not None
            self.pos = match.end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                return ""

    def expect(self, chars: str, msg: str) -> str:
        c = self.peek()
        if not c or c not in chars:
            raise self.error(msg)
        self.pos += 1
        return c

    def value(self, where: str = "") -> Any:
        """The next value; a lone surrogate in its strings is refused with ``where`` (the record
        or member that holds it) in front of the message."""
        if not self.peek():
            raise self.error("Expecting value")
        while True:
            try:
                value, end = DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as e:
                if len(self.buf) - self.pos > _MAX_VALUE or not self._more():
                    raise self.error(e.msg, e.pos) from None
                continue
            except RecursionError:
                raise JSONError("arrays or objects nested too deeply to read") from None
            if end < len(self.buf) or not self._more():  # a number may go on in the next chunk
                try:
                    check_strings(value, self.buf[self.pos : end])
                except JSONError as e:
                    raise JSONError(f"{where}{e}") from None
                self.pos = end
                return value


def _read_samples(path: Path, sc: _Scanner, records: list[SampleResult]) -> str | None:
    """The records of ``"samples": [...]`` into ``records``; the first that is wrong, said in one
    line, is returned rather than raised, to be reported after what is wrong with the file."""
    sc.pos += 1  # [
    if sc.peek() == "]":
        sc.pos += 1
        return None
    problem, last, seen, i = None, "", None, 0
    while True:
        d = sc.value(f"samples[{i}]: ")
        if problem is None:
            try:
                record = SampleResult.from_json(d)
            except (KeyError, TypeError, ValueError) as e:
                problem = f"samples[{i}]: {e}"
            else:
                id = record.id
                if seen is None and id <= last and records:  # out of order: look for an id recorded twice
                    seen = {r.id: j for j, r in enumerate(records)}
                if seen is not None:
                    if id in seen:
                        problem = f"samples[{i}]: id {id!r} is recorded twice (first at samples[{seen[id]}])"
                    seen[id] = i
                records.append(record)
                last = id
        i += 1
        if sc.expect(",]", "Expecting ',' delimiter") == "]":
            return problem


def _read_document(path: Path, sc: _Scanner) -> tuple[dict[str, str], list[SampleResult], bool]:
    if sc.peek() != "{":
        raise _Odd
    sc.pos += 1
    data: dict[str, Any] = {}
    records: list[SampleResult] = []
    problem = None
    if sc.peek() == "}":
        sc.pos += 1
    else:
        while True:
            if sc.peek() != '"':
                raise sc.error("Expecting property name enclosed in double quotes")
            name = sc.value()
            sc.expect(":", "Expecting ':' delimiter")
            if name in data:
                raise duplicate_key(name)
            if name == "samples" and sc.peek() == "[":
                data[name] = records
                problem = _read_samples(path, sc, records)
            else:
                data[name] = sc.value(f"{json.dumps(name)}: ")
            if sc.expect(",}", "Expecting ',' delimiter") == "}":
                break
    if sc.peek():
        raise sc.error("Extra data")
    if data.get("kind") != KIND:
        raise ResultsError(f'{path}: not an optests results file (no "kind": "{KIND}")')
    if not readable_version(data.get("schema_version"), READABLE_VERSIONS):
        raise ResultsError(
            f"{path}: schema_version {data.get('schema_version')!r} is not supported (this optests reads "
            f"{', '.join(map(str, READABLE_VERSIONS))})"
        )
    samples = data.get("samples", [])
    if not isinstance(samples, list):
        raise ResultsError(f'{path}: "samples" must be a list, got {type(samples).__name__}')
    if problem is not None:
        raise ResultsError(f"{path}: {problem}")
    complete = data.get("complete", True)
    if not isinstance(complete, bool):
        raise ResultsError(f'{path}: "complete" must be true or false, got {complete!r}')
    return _environment(path, data), records, complete


@contextlib.contextmanager
def _open(path: Path) -> Iterator[IO[str]]:
    """A results file as text, gzip-compressed or not, read as it is needed."""
    with open_input(path) as raw:
        compressed = raw.peek(2)[:2] == b"\x1f\x8b"
        with gzip.GzipFile(filename="", mode="rb", fileobj=raw) if compressed else contextlib.nullcontext(raw) as stream:
            yield io.TextIOWrapper(stream, encoding="utf-8", newline="")


def read_with_status(path: Path) -> tuple[dict[str, str], list[SampleResult], bool]:
    """:func:`read`, and whether the file holds a whole run: false for a journal, and for a
    results file marked ``"complete": false`` (version 1 files did not say: taken as whole)."""
    try:
        with _open(path) as f:
            buf = f.read(_CHUNK)
            first = buf.split("\n", 1)[0]
            if _is_journal_header(first):
                return (*_read_journal(path, _lines(f, buf)), False)
            return _read_document(path, _Scanner(f, buf))
    except (OSError, UnicodeDecodeError, _Odd):
        pass  # the whole file, read the usual way, says what is wrong
    except (EOFError, zlib.error, gzip.BadGzipFile):
        raise ResultsError(f"{path}: a truncated or corrupt gzip file") from None
    except JSONError as e:
        raise ResultsError(e.at(path)) from None
    return _read_whole(path)


def _read_whole(path: Path) -> tuple[dict[str, str], list[SampleResult], bool]:
    """A results file read into memory whole: for what the streaming reader does not take (a
    file that is not a JSON object, not UTF-8, or not there), so that the error says why."""
    try:
        text = read_text(path)
    except InputError as e:
        raise ResultsError(str(e)) from None
    try:
        data = loads(text)
    except JSONError as e:
        raise ResultsError(e.at(path)) from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise ResultsError(f'{path}: not an optests results file (no "kind": "{KIND}")')
    raise ResultsError(f"{path}: not readable as a results file")  # the streaming reader takes any other


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


def apply_rerun(records: list[SampleResult], env: Mapping[str, str], path: Path) -> tuple[list[SampleResult], int, int]:
    """``records`` (one run) with each record of the rerun at ``path`` (some of its samples checked
    again, ``--optests-ids``) in place of the run's of the same id. Returns the records, how many
    were replaced, and how many of the rerun's the run does not have (left out: a rerun adds no
    sample). A rerun of another torch, or with no sample of the run, is refused."""
    rerun_env, rerun = read(path)
    if rerun_env.get("torch", "") != env.get("torch", ""):
        raise ResultsError(f"{path}: a rerun of torch {rerun_env.get('torch', '?')}, the run is of torch {env.get('torch', '?')}")
    again = {r.id: r for r in rerun}
    ids = {r.id for r in records}
    replaced = len(again.keys() & ids)
    if rerun and not replaced:
        raise ResultsError(f"{path}: none of its {len(again)} samples is in the run: a rerun replaces samples the run checked")
    return [again.get(r.id, r) for r in records], replaced, len(again.keys() - ids)


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
