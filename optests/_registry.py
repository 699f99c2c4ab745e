"""The expected-failures registry (``docs/contract.md``, "Registry"): load and validate, look up, judge, accept.

Torch-free. One entry covers samples of one scope (op, variant, mode, dtype, device, and the
input transform that derived them, if any) that fail
at one stage; ``samples`` lists them (``xfail``), or is absent for a ``skip`` of the whole scope.
The file is sorted, indented by 2 and ends with a newline, so an accept produces small diffs.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from ._errors import JSONError
from ._files import locked, read_input, write_json_atomic
from ._findings import Outcome, Stage, Verdict
from ._json import loads
from ._key import BACKEND_NAME, DEFAULT_BACKEND, DEVICES, DTYPES, MODES, SAMPLE_LIMIT, TRANSFORM, TRANSFORMS, Scope, op_id
from ._results import SampleResult, describe_os_error, readable_version
from .errors import RegistryError as RegistryError

#: 2 writes ``samples`` as ranges (``"0-323, 330"``); 3 adds ``transform`` (entries for samples an
#: input transform derived); 4 adds ``torch_versions`` (the release series accepted into the file,
#: which an accept's version ranges are drawn between). Files of versions 1 to 3 still load.
SCHEMA_VERSION = 4
READABLE_VERSIONS = (1, 2, 3, 4)
DEFAULT_PATH = "expected_failures.json"
#: The oldest torch release series optests supports (``pyproject.toml``: ``torch>=2.13``): an
#: entry's range must hold for it or a later one.
OLDEST_TORCH = "2.13"


class Status(str, enum.Enum):
    #: The listed samples fail at ``stage``; anything else (a pass, another stage) is red.
    XFAIL = "xfail"
    #: The samples (or the whole scope) are not run: they crash or hang too slowly to run in CI.
    SKIP = "skip"
    #: The samples (or the whole scope) are run and recorded, and their outcome varies from run to
    #: run: a failure (at any stage) is ``flaky``, a pass is a pass; neither fails the run.
    FLAKY = "flaky"


def _same(value: Any) -> Any:
    return value


def _value(member: enum.Enum) -> Any:
    return member.value


@dataclasses.dataclass(frozen=True)
class EntryField:
    """One field of a registry entry, declared once as the metadata of :class:`Entry`'s field
    (:func:`_declared`): reading and checking a file (:func:`parse`), writing one
    (:meth:`Entry.to_json`, :func:`dump`), an accept's new entries and the contract's table of
    fields all derive from :data:`FIELDS`. An entry's :attr:`~Entry.scope` is made of the fields
    :class:`Scope` names (a sample key's scope too: ``optests._key``), which are fields here. Fields:

    - ``name``, ``required`` (a field without a default: every entry has it in the file) and
      ``default`` (what an entry without it means; it is left out of the file where it holds it):
      :class:`Entry`'s own;
    - ``types``: the JSON types its value may have, and ``kind``: what a message says it must be;
    - ``valid``: the values it may take (empty: any), and ``not_empty``: ``"empty"`` where it may
      not be ``""``, ``"blank"`` where it may not be whitespace either;
    - ``encode``: the JSON value of the attribute; ``decode``: the attribute of a checked value.

    Checks that span fields or need more than a field's value (``samples``' ranges against the
    file's budget, ``transform``, ``backend`` against ``mode``, the ``torch`` range) are
    :func:`_entry`'s, after these.
    """

    name: str = ""
    required: bool = False
    default: Any = None
    types: type | tuple[type, ...] = str
    kind: str = "string"
    valid: tuple[str, ...] = ()
    not_empty: Literal["", "empty", "blank"] = ""
    encode: Callable[[Any], Any] = _same
    decode: Callable[[Any], Any] = _same


_METADATA = "optests.registry"


def _declared(**declared: Any) -> dict[str, EntryField]:
    """The metadata of an :class:`Entry` field: how the registry file holds it (:class:`EntryField`)."""
    return {_METADATA: EntryField(**declared)}


_STATUSES = tuple(s.value for s in Status)
_STAGES = tuple(s.value for s in Stage)


@dataclasses.dataclass(frozen=True)
class Entry:
    """One entry of the registry. Its fields are declared here once, each with how the file holds
    it (:class:`EntryField`, collected in :data:`FIELDS`), in the order the file and the contract
    list them."""

    op: str = dataclasses.field(metadata=_declared(not_empty="empty"))
    variant: str = dataclasses.field(metadata=_declared())
    mode: str = dataclasses.field(metadata=_declared(valid=MODES))
    dtype: str = dataclasses.field(metadata=_declared(valid=DTYPES))
    device: str = dataclasses.field(metadata=_declared(valid=DEVICES))
    status: Status = dataclasses.field(metadata=_declared(valid=_STATUSES, encode=_value, decode=Status))
    stage: Stage = dataclasses.field(metadata=_declared(valid=_STAGES, encode=_value, decode=Stage))
    reason: str = dataclasses.field(metadata=_declared(not_empty="blank"))
    #: The samples it covers (``"0-3, 7"`` in the file: :func:`ranges`, read by :func:`_entry`
    #: against the file's budget); None: every sample of the scope (``skip`` only).
    samples: tuple[int, ...] | None = dataclasses.field(
        default=None, metadata=_declared(types=(str, list), kind="list or a string of ranges", encode=lambda s: ranges(s))
    )
    issue: str = dataclasses.field(default="", metadata=_declared())
    #: A version specifier such as ``">=2.13,<2.14"``; empty: every version.
    torch: str = dataclasses.field(default="", metadata=_declared())
    #: The transform that derived the samples (``transposed``, ``duplicated-1``); empty: as they are.
    transform: str = dataclasses.field(default="", metadata=_declared())
    #: The backend whose samples it covers (``optests._backends``); an entry without one covers aot_eager's.
    backend: str = dataclasses.field(default=DEFAULT_BACKEND, metadata=_declared())

    @functools.cached_property
    def scope(self) -> Scope:
        """The samples it covers: its fields that :class:`Scope` names (made once: a registry's
        checks ask for it per listed sample)."""
        return Scope(*[getattr(self, name) for name in Scope._fields])

    @property
    def key(self) -> tuple[str, ...]:
        """What no two entries share: a ``skip`` entry for some samples and an ``xfail`` entry for
        others may name one scope, stage and range."""
        return (*self.scope, self.stage.value, self.torch, self.status.value)

    @property
    def op_id(self) -> str:
        return op_id(self.op, self.variant)

    @property
    def label(self) -> str:
        transform = f" {self.transform}" if self.transform else ""
        transform += f" @{self.backend}" if self.backend != DEFAULT_BACKEND else ""
        return f"{self.op_id} {self.mode} {self.dtype} {self.device}{transform} {self.stage.value}"

    def covers(self, sample: int | None) -> bool:
        return self.samples is None or (sample is not None and sample in self.samples)

    def applies_to(self, torch_version: str) -> bool:
        if not self.torch:
            return True
        return Version(torch_version) in SpecifierSet(self.torch, prereleases=True)

    def to_json(self) -> dict[str, Any]:
        """The entry as the file holds it: every field of :data:`FIELDS`, but those that hold
        their default and need not be written."""
        out = {}
        for f in FIELDS:
            value = getattr(self, f.name)
            if f.required or value != f.default:
                out[f.name] = f.encode(value)
        return out


#: The fields of :class:`Entry`, each as the registry file holds it, in their order.
FIELDS: tuple[EntryField, ...] = tuple(
    dataclasses.replace(f.metadata[_METADATA], name=f.name, required=f.default is dataclasses.MISSING, default=f.default)
    for f in dataclasses.fields(Entry)
)
_FIELD_NAMES = frozenset(f.name for f in FIELDS)


def ranges(samples: Iterable[int]) -> str:
    """Sample indices as the registry writes them: consecutive runs as ranges, ``"0-3, 7, 9-10"``."""
    out: list[str] = []
    ordered = sorted(set(samples))
    start = 0
    for i, s in enumerate(ordered):
        if i + 1 == len(ordered) or ordered[i + 1] != s + 1:
            first = ordered[start]
            out.append(f"{first}-{s}" if s > first else str(s))
            start = i + 1
    return ", ".join(out)


#: ASCII digits only: ``\d`` would take ``"٣"`` (an Arabic-Indic digit) for 3.
_RANGE = re.compile(r"^([0-9]+)(?:-([0-9]+))?\Z")
#: A registry lists at most this many samples in all, counted before any range is expanded (the
#: committed one lists about 6,200). With :data:`SAMPLE_LIMIT`, what reading a registry takes is
#: bounded whatever its ranges say: a range's width costs no memory before it is checked.
LISTED_LIMIT = 1_000_000


def parse_ranges(text: str, budget: int = LISTED_LIMIT) -> tuple[int, ...]:
    """The indices ``"0-3, 7"`` names; a ``ValueError`` unless the ranges ascend without overlap,
    each index below :data:`SAMPLE_LIMIT`, and they name at most ``budget`` indices. Every part
    is checked before any is expanded."""
    bounds: list[tuple[int, int]] = []
    for part in text.split(","):
        m = _RANGE.match(part.strip())
        if m is None:
            raise ValueError(f"{_clip(part.strip())} is not an index or a range such as 3-7")
        if any(len(d.lstrip("0")) > len(str(SAMPLE_LIMIT)) or int(d) >= SAMPLE_LIMIT for d in m.groups() if d):
            raise ValueError(f"{_clip(part.strip())} reaches past {SAMPLE_LIMIT - 1:,}, the largest sample index optests reads")
        first, last = int(m[1]), int(m[2] or m[1])
        if last < first:
            raise ValueError(f"the range {_clip(part.strip())} runs backwards")
        if bounds and first <= bounds[-1][1]:
            raise ValueError(f"{_clip(part.strip())} comes after {bounds[-1][1]}: indices must ascend without repeats")
        bounds.append((first, last))
    if sum(last - first + 1 for first, last in bounds) > budget:
        raise ValueError(_too_many(budget))
    return tuple(i for first, last in bounds for i in range(first, last + 1))


def _clip(text: str) -> str:
    """``text`` quoted for a message, cut short: a hostile field may be megabytes long."""
    return repr(text) if len(text) <= 40 else f"{text[:30]!r}... ({len(text):,} characters)"


def _too_many(budget: int) -> str:
    return f"more samples than the {LISTED_LIMIT:,} a registry lists in all" + (
        f" ({budget:,} left for this entry)" if budget < LISTED_LIMIT else ""
    )


# -- reading and writing --------------------------------------------------------------------------

_SERIES = re.compile(r"^[0-9]+\.[0-9]+$")
#: A version-range clause that holds for a whole release series or none of it: <2.15, >=2.13,
#: ==2.13.* and !=2.14.* (not <=2.13, which excludes 2.13.1, nor ==2.13.0).
_SERIES_CLAUSE = re.compile(r"^(?:(?:<|>=)[0-9]+\.[0-9]+|(?:==|!=)[0-9]+\.[0-9]+\.\*)$")


def _entry(raw: object, where: str, budget: int = LISTED_LIMIT) -> Entry:
    """One entry of the registry; ``budget``: how many samples it may list (what
    :data:`LISTED_LIMIT` leaves after the entries before it)."""
    if not isinstance(raw, dict):
        raise RegistryError(f"{where}: an entry must be an object, got {type(raw).__name__}")
    label = f"{where} ({raw.get('op', '?')} {raw.get('mode', '?')})"
    for f in FIELDS:  # the required ones first, one by one
        if f.required and f.name not in raw:
            raise RegistryError(f"{label}: missing field {f.name!r}")
        if f.required and not isinstance(raw[f.name], f.types):
            raise RegistryError(f"{label}: field {f.name!r} must be a {f.kind}, got {raw[f.name]!r}")
    unknown = raw.keys() - _FIELD_NAMES
    if unknown:
        raise RegistryError(f"{label}: unknown field {sorted(unknown)[0]!r}; fields: {', '.join(f.name for f in FIELDS)}")
    for f in FIELDS:
        if not f.required and f.name in raw and not isinstance(raw[f.name], f.types):
            raise RegistryError(f"{label}: field {f.name!r} must be a {f.kind}, got {raw[f.name]!r}")
    for f in FIELDS:
        if f.valid and f.name in raw and raw[f.name] not in f.valid:
            raise RegistryError(f"{label}: unknown {f.name} {raw[f.name]!r}; valid: {', '.join(f.valid)}")
    for f in FIELDS:
        if f.not_empty and f.name in raw and not (raw[f.name].strip() if f.not_empty == "blank" else raw[f.name]):
            raise RegistryError(f"{label}: {f.name} must not be empty")
    samples = raw.get("samples")
    if isinstance(samples, str):
        try:
            samples = list(parse_ranges(samples, budget))
        except ValueError as e:
            raise RegistryError(f"{label}: samples {_clip(raw['samples'])}: {e}") from None
    if samples is not None:
        if not samples or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in samples):
            raise RegistryError(f"{label}: samples must be a non-empty list of sample indices (integers >= 0), got {samples!r}")
        big = next((s for s in samples if s >= SAMPLE_LIMIT), None)
        if big is not None:
            raise RegistryError(f"{label}: sample {big} is past {SAMPLE_LIMIT - 1:,}, the largest sample index optests reads")
        if len(samples) > budget:
            raise RegistryError(f"{label}: samples: {_too_many(budget)}")
        if samples != sorted(set(samples)):
            raise RegistryError(f"{label}: samples must be sorted and unique, got {samples!r}")
    elif raw["status"] == Status.XFAIL.value:
        raise RegistryError(f"{label}: an xfail entry must list its samples")
    if raw.get("transform") and not TRANSFORM.match(raw["transform"]):
        raise RegistryError(
            f"{label}: unknown transform {raw['transform']!r}; valid: {', '.join(TRANSFORMS)}, each with an optional -INDEX"
        )
    if "backend" in raw and not re.fullmatch(BACKEND_NAME, raw["backend"]):
        raise RegistryError(f"{label}: backend {raw['backend']!r} is not a backend's name (letters, digits, '_', '.', ':')")
    backend = raw.get("backend", DEFAULT_BACKEND)
    problem = _backend_problem(backend, raw["mode"])
    if problem:
        raise RegistryError(f"{label}: backend {backend!r} {problem}, so the entry can never match")
    if raw.get("torch"):
        try:
            clauses = list(SpecifierSet(raw["torch"]))
        except InvalidSpecifier:
            raise RegistryError(f"{label}: torch {raw['torch']!r} is not a version range such as '>=2.13,<2.14'") from None
        # ranges are drawn between release series (an accept compares releases, not patches)
        if not all(_SERIES_CLAUSE.match(str(c)) for c in clauses):
            raise RegistryError(
                f"{label}: torch {raw['torch']!r} names a finer version than a release series; use bounds such as '>=2.13,<2.15' or '==2.13.*'"
            )
        if not _holds_for_some_release(raw["torch"]):
            raise RegistryError(f"{label}: torch {raw['torch']!r} holds for no torch release, so the entry can never match")
        if not _holds_for_some_release(raw["torch"], OLDEST_TORCH):
            raise RegistryError(
                f"{label}: torch {raw['torch']!r} holds only for releases before {OLDEST_TORCH}, the oldest optests "
                "supports, so the entry can never match"
            )
    values = {f.name: f.decode(raw[f.name]) for f in FIELDS if f.name in raw}
    values["samples"] = tuple(samples) if samples is not None else None  # read above, within the budget
    return Entry(**values)


def _holds_for_some_release(torch: str, oldest: str = "0.0") -> bool:
    """Whether the range ``torch`` (clauses of release series: ``<2.15``, ``>=2.13``, ``==2.13.*``,
    ``!=2.14.*``) holds for some release series at or after ``oldest``. The least series it holds
    for, if any, is ``oldest``, a series a clause names, the next after one (``2.14`` -> ``2.15``)
    or the first of the next major (``3.0``): those are the ones tried."""
    specifier = SpecifierSet(torch, prereleases=True)
    named = [Version(oldest), *(Version(c.version.removesuffix(".*")) for c in specifier)]
    tried = {Version(f"{v.major}.{v.minor + step}") for v in named for step in (0, 1)} | {
        Version(f"{v.major + 1}.0") for v in named
    }
    return any(v >= Version(oldest) and v in specifier for v in tried)


def _backend_problem(backend: str, mode: str) -> str:
    """What makes an entry of ``backend`` in ``mode`` one no run can make, as far as it is known
    for sure before any backend is registered; "" where it may match. A plain name that is not
    built in may be registered later (``optests.register_backend``): it is judged by the run
    (:func:`stale`)."""
    from ._backends import BACKENDS, DYNAMO

    if backend.startswith(DYNAMO):
        if not backend.removeprefix(DYNAMO):
            return "names no Dynamo backend (dynamo:NAME)"
        nofunc = False  # torch.compile: no switch to turn functionalization off
    elif ":" in backend:
        module, _, attribute = backend.partition(":")
        if not all(part.isidentifier() for part in module.split(".")) or not attribute.isidentifier():
            return "is neither a known backend, dynamo:NAME nor MODULE:ATTRIBUTE"
        nofunc = False  # a user's backend runs through torch.compile
    elif backend in BACKENDS:
        nofunc = BACKENDS[backend].nofunc
    else:
        return ""
    if mode.endswith("-nofunc") and not nofunc:
        return f"cannot compile without functionalization, as mode {mode!r} asks"
    return ""


def release_series(version: str) -> str:
    """The release series of a torch version, which version ranges are drawn between:
    ``2.15.0+cu130`` -> ``2.15``; a ``RegistryError`` for a string that is not a version."""
    try:
        v = Version(version)
    except InvalidVersion:
        raise RegistryError(f"torch version {version!r} is not a version such as 2.13.0") from None
    return f"{v.major}.{v.minor}"


def run_torch(path: object, env: Mapping[str, str]) -> str:
    """The torch version a results file's run was of (its environment's ``torch``), which its
    records are judged and accepted under: a ``RegistryError`` naming the file where it records
    none or one that is not a version, since every torch-ranged entry would apply to it."""
    version = env.get("torch", "")
    try:
        release_series(version)
    except RegistryError as e:
        raise RegistryError(f"{path}: {e}") from None
    return version


def parse(text: str, path: str) -> list[Entry]:
    """The entries of a registry file's text (``path`` names it in errors)."""
    return parse_file(text, path)[0]


def parse_file(text: str, path: str) -> tuple[list[Entry], tuple[str, ...]]:
    """The entries of a registry file's text and the release series accepted into it."""
    try:
        data = loads(text)
    except JSONError as e:
        raise RegistryError(e.at(path)) from None
    if not isinstance(data, dict):
        raise RegistryError(f'{path}: the registry must be a JSON object with "schema_version" and "entries"')
    if not readable_version(data.get("schema_version"), READABLE_VERSIONS):
        raise RegistryError(
            f"{path}: schema_version {data.get('schema_version')!r} is not supported (this optests reads "
            f"{', '.join(map(str, READABLE_VERSIONS))})"
        )
    unknown = set(data) - {"schema_version", "entries", "comment", "torch_versions"}
    if unknown:
        raise RegistryError(f"{path}: unknown top-level field {sorted(unknown)[0]!r}")
    series = data.get("torch_versions", [])
    if not isinstance(series, list) or not all(isinstance(v, str) and _SERIES.match(v) for v in series):
        raise RegistryError(f'{path}: "torch_versions" must be a list of release series such as "2.13", got {series!r}')
    if series != sorted(set(series), key=Version):
        raise RegistryError(f'{path}: "torch_versions" must ascend without repeats, got {series!r}')
    raw_entries = data.get("entries")
    if not isinstance(raw_entries, list):
        raise RegistryError(f'{path}: "entries" must be a list')
    entries: list[Entry] = []
    listed = 0
    try:
        for i, raw in enumerate(raw_entries):
            entries.append(_entry(raw, f"entries[{i}]", LISTED_LIMIT - listed))
            listed += len(entries[-1].samples or ())
    except RegistryError as e:
        raise RegistryError(f"{path}: {e}") from None
    _check_consistency(entries, path, series)
    return entries, tuple(series)


def _check_consistency(entries: Sequence[Entry], path: str, series: Sequence[str]) -> None:
    keys: dict[tuple[str, ...], int] = {}
    for i, e in enumerate(entries):
        if e.key in keys:
            raise RegistryError(f"{path}: entries[{i}] ({e.label}): duplicate of entries[{keys[e.key]}]")
        keys[e.key] = i
    by_scope: dict[tuple[str, ...], list[tuple[int, Entry]]] = defaultdict(list)
    for i, e in enumerate(entries):
        by_scope[(*e.scope, e.torch)].append((i, e))
    for group in by_scope.values():
        whole = [i for i, e in group if e.samples is None]
        if whole and len(group) > 1:
            i = next(i for i, _ in group if i != whole[0])
            raise RegistryError(
                f"{path}: entries[{i}] ({entries[i].label}): its scope is already covered whole by entries[{whole[0]}]"
            )
        owner: dict[int, int] = {}
        for i, e in group:
            for sample in e.samples or ():
                if sample in owner:
                    raise RegistryError(
                        f"{path}: entries[{i}] ({e.label}): sample {sample} is also listed by entries[{owner[sample]}]"
                    )
                owner[sample] = i
    # entries of other ranges may overlap, but never for a sample on a release accepted here
    for version in series:
        owner_at: dict[tuple[Scope, int], int] = {}
        for i, e in enumerate(entries):
            if _applies(e, version):
                for sample in e.samples or ():
                    j = owner_at.setdefault((e.scope, sample), i)
                    if j != i:
                        raise RegistryError(
                            f"{path}: entries[{i}] ({e.label}): sample {sample} is also listed by entries[{j}] for torch {version}"
                        )


def load(path: Path) -> list[Entry]:
    """The entries of the registry at ``path`` (none if the file does not exist)."""
    return load_file(path)[0]


def load_file(path: Path) -> tuple[list[Entry], tuple[str, ...]]:
    """The entries of the registry at ``path`` and the release series accepted into it (none of
    either if the file does not exist)."""
    try:
        text = read_input(path).decode("utf-8")
    except FileNotFoundError:
        return [], ()
    except (OSError, UnicodeDecodeError) as e:
        raise RegistryError(f"{path}: {describe_os_error(path, e)}") from None
    return parse_file(text, str(path))


def _sort_key(e: Entry) -> tuple[str, ...]:
    return e.key


def dump(path: Path, entries: Iterable[Entry], series: Iterable[str] = ()) -> None:
    """Write atomically: a crash mid-write leaves the old file intact. ``series``: the release
    series accepted into the file (written only when there are some)."""
    data: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "entries": [e.to_json() for e in sorted(entries, key=_sort_key)]}
    if series:
        data["torch_versions"] = sorted(set(series), key=Version)
    try:
        write_json_atomic(path, data)
    except OSError as e:
        raise RegistryError(f"{path}: {describe_os_error(path, e, writing=True)}") from None


def accept_into(
    path: Path,
    records: Iterable[SampleResult],
    torch_version: str,
    stale_of: Callable[[Sequence[Entry]], Iterable[Entry]] = lambda entries: (),
) -> tuple[list[Entry], list[Entry]]:
    """Rewrite the registry at ``path`` from ``records`` (see :func:`accept`), dropping the
    entries ``stale_of`` names. Read, accept and write happen under the registry's lock, so
    concurrent accepts into one file each land. Returns the entries before and after."""
    with locked(path):
        entries, series = load_file(path)
        stale_entries = set(stale_of(entries))
        new = accept(entries, records, torch_version, series, stale_entries)
        dump(path, new, {*series, release_series(torch_version)})
    return entries, new


# -- judging --------------------------------------------------------------------------------------


class Registry:
    """Entries indexed by scope, restricted to those that apply to one torch version."""

    def __init__(self, entries: Iterable[Entry], torch_version: str) -> None:
        self.entries = list(entries)
        self.torch_version = torch_version
        self._by_scope: dict[Scope, list[Entry]] = defaultdict(list)
        for e in self.entries:
            if _applies(e, torch_version):
                self._by_scope[e.scope].append(e)

    def lookup(self, scope: Scope, sample: int | None) -> Entry | None:
        for e in self._by_scope.get(scope, ()):
            if e.covers(sample):
                return e
        return None

    def skip_entry(self, scope: Scope, sample: int | None) -> Entry | None:
        """The ``skip`` entry that keeps a sample from running: its own, or that of the sample it
        was derived from (a skipped sample takes every sample derived from it along)."""
        scopes = [scope, scope._replace(transform="")] if scope.transform else [scope]
        return next((e for s in scopes for e in self._by_scope.get(s, ()) if e.status is Status.SKIP and e.covers(sample)), None)

    def judge(self, record: SampleResult) -> tuple[Verdict, Entry | None]:
        """The verdict on ``record`` and the entry that gave it (None: none covers it). Where its
        first check's verdict would fail the run and it was checked again (``record.reruns``),
        a rerun whose own verdict would not makes it ``flaky``; if every check's would, the first's
        verdict stands (the failure reproduced, at its stage or another)."""
        verdict, entry = self._judge_one(record)
        if verdict.ok or not record.reruns:
            return verdict, entry
        for t in record.reruns:
            again = dataclasses.replace(record, outcome=t.outcome, stage=t.stage, message=t.message, reruns=())
            if self._judge_one(again)[0].ok:
                return Verdict.FLAKY, entry
        return verdict, entry

    def _judge_one(self, record: SampleResult) -> tuple[Verdict, Entry | None]:
        """The verdict on the record's first check alone."""
        if (skip := self.skip_entry(record.key.scope, record.sample)) is not None:
            return Verdict.SKIPPED, skip  # not run now, whatever a record from before the entry says
        entry = self.lookup(record.key.scope, record.sample)
        if entry is None and (known := self.inherited(record)) is not None:  # its sample's known failure
            return Verdict.XFAILED, known
        if record.outcome is Outcome.NOT_APPLICABLE:
            return Verdict.NOT_APPLICABLE, entry
        if record.outcome is Outcome.SKIPPED:
            return Verdict.SKIPPED, entry
        if record.outcome is Outcome.PASSED:
            if entry is not None and entry.status is Status.XFAIL:
                return Verdict.UNEXPECTED_PASS, entry
            return Verdict.PASSED, entry
        if entry is None:
            return Verdict.UNEXPECTED_FAILURE, None
        if entry.status is Status.FLAKY:  # at whatever stage: its failures vary
            return Verdict.FLAKY, entry
        if entry.stage is not record.stage:
            return Verdict.STAGE_CHANGED, entry
        return Verdict.XFAILED, entry

    def inherited(self, record: SampleResult) -> Entry | None:
        """The xfail entry of the sample a derived sample comes from, where the derived one fails
        at the stage that entry expects: the same known failure, which needs no entry of its own.
        (A derived sample that passes, or fails elsewhere, is judged on its own entries.)"""
        if not record.transform or record.outcome is not Outcome.FAILED:
            return None
        entry = self.lookup(record.key.scope._replace(transform=""), record.sample)
        return entry if entry is not None and entry.status is Status.XFAIL and entry.stage is record.stage else None


def _applies(e: Entry, torch_version: str) -> bool:
    try:
        return e.applies_to(torch_version)
    except InvalidVersion:
        return True


# -- stale entries --------------------------------------------------------------------------------


def stale(
    entries: Iterable[Entry],
    collected: Mapping[Scope, set[int]],
    in_selection: Callable[[Entry], bool],
    torch_version: str,
) -> list[Entry]:
    """Entries that apply to this torch, match no collected sample and lie inside the run's
    selection, or that name a backend no run of this process can have (a plain name neither
    built in nor registered: a misspelt ``inductr``). ``collected`` maps a scope to the indices of
    its collected samples; ``in_selection`` is asked only of entries that match none (it may load
    databases)."""
    from ._backends import BACKENDS

    out = []
    for e in entries:
        if not _applies(e, torch_version):
            continue
        matched = e.scope in collected and (e.samples is None or bool(collected[e.scope].intersection(e.samples)))
        unknown = ":" not in e.backend and e.backend not in BACKENDS
        if unknown or (not matched and in_selection(e)):
            out.append(e)
    return out


# -- accepting ------------------------------------------------------------------------------------

_CONTEXT = re.compile(r"\s*\[(?:[^\[\]]|\[[^\[\]]*\])*\]\s*$")  # a derived sample's context names args[1]


def reason_from(message: str) -> str:
    """A registry reason drawn from a finding's one-line message (the context bracket dropped)."""
    text = _CONTEXT.sub("", message.splitlines()[0] if message else "").strip()
    return text[:300] or "fails (no message)"


def accept(
    entries: Sequence[Entry],
    records: Iterable[SampleResult],
    torch_version: str,
    series: Iterable[str] = (),
    stale: Iterable[Entry] = (),
) -> list[Entry]:
    """The registry rewritten from what ran on ``torch_version``, whose file has had the release
    ``series`` accepted into it. An accept changes only what it saw on its own release:

    - For each scope with run samples, a failing sample is listed by its stage, and a passing or
      not-applicable one is no longer listed for this release. Samples not run (or skipped), ``skip`` entries and
      scopes not run stay as they are.
    - Version ranges are drawn between the series accepted so far and this one. A sample that
      fails on every one of them gets no range; one that passes on the newest gets ``<2.15``;
      one that fails on a new release alone ``>=2.15``. So an entry is narrowed, widened or
      split, never dropped for what another release saw. Where two releases' runs checked the
      same samples, the file does not depend on the order they were accepted in (but for the
      wording of a reason, which stays as first accepted); docs/contract.md says where it may.
    - An entry's reason and issue link stay with the samples it still covers, and so does a
      hand-written range while it names the same releases; a new entry's reason is that of an
      entry of its scope and stage that holds on its releases, else its first sample's message.
    - A derived sample that fails as its sample's entry expects gets no entry of its own (see
      :meth:`Registry.inherited`), and one it had is narrowed to the other releases.
    - The ``stale`` entries (which matched nothing this release's run collected) no longer hold
      for this release: narrowed to the others, or dropped where they held for this one alone.
    - A sample that a ``skip`` entry covers on this release (or the sample it was derived from) is
      not accepted: the entry says it is not run, whatever a run from before it was written saw.
    - A flaky sample (its checks disagreed: :meth:`Registry.judge`) never gets an ``xfail``: it is
      no longer listed by one for this release, and unless a ``flaky`` entry covers it, it gets one,
      for this release, at the stage it failed at, with a reason that lists what each check found.
      ``flaky`` entries, like ``skip`` entries, stay until removed by hand (or as stale).
    """
    skips = Registry(entries, torch_version)
    records = [r for r in records if skips.skip_entry(r.key.scope, r.sample) is None]
    flaky = {r.id: r for r in records if r.sample is not None and skips.judge(r)[0] is Verdict.FLAKY}
    records = [_passed(r) if r.id in flaky else r for r in records]  # no xfail for it
    stale = set(stale)
    versions = sorted({*series, release_series(torch_version)}, key=Version)
    base = _accept(entries, [r for r in records if not r.transform], torch_version, versions, stale)
    registry = Registry(base, torch_version)
    # a derived sample that fails as its sample's entry expects is no longer listed by its own
    # entries for this release: for them it counts as passed
    derived = [r if registry.inherited(r) is None else _passed(r) for r in records if r.transform]
    accepted = _accept(base, derived, torch_version, versions, set())
    return _with_flaky(accepted, flaky.values(), torch_version, versions)


def _passed(record: SampleResult) -> SampleResult:
    """``record`` as a pass: what an accept takes a sample it lists in no ``xfail`` entry for."""
    return dataclasses.replace(record, outcome=Outcome.PASSED, stage=None, message="", cause="", reruns=())


def _with_flaky(entries: list[Entry], flaky: Iterable[SampleResult], torch_version: str, versions: list[str]) -> list[Entry]:
    """``entries`` with a ``flaky`` entry for each record of ``flaky`` that none covers on this
    release: one per scope and stage, for this release (a range drawn as an accept draws one),
    merged into a ``flaky`` entry of the same scope, stage and range where there is one."""
    registry = Registry(entries, torch_version)
    this = Version(release_series(torch_version))
    torch = _range([Version(v) for v in versions], [this], {None})
    by_key = {e.key: e for e in entries}
    added: dict[tuple[str, ...], Entry] = {}
    for r in sorted(flaky, key=lambda r: r.id):
        covered = registry.lookup(r.key.scope, r.sample)
        failed = next((t for t in r.tries if t.outcome is Outcome.FAILED and t.stage is not None), None)
        if (covered is not None and covered.status is Status.FLAKY) or failed is None or r.sample is None:
            continue
        assert failed.stage is not None
        tries = ", ".join(t.label for t in r.tries)
        entry = Entry(
            **r.key.scope._asdict(),
            status=Status.FLAKY,
            stage=failed.stage,
            reason=f"flaky: its checks found {tries}; {reason_from(failed.message)}",
            samples=(r.sample,),
            torch=torch,
        )
        known = added.get(entry.key, by_key.get(entry.key))
        if known is not None and known.samples is not None:  # one entry per scope, stage and range
            entry = dataclasses.replace(known, samples=tuple(sorted({*known.samples, r.sample})))
        added[entry.key] = entry
    return sorted([e for e in entries if e.key not in added] + list(added.values()), key=_sort_key)


@dataclasses.dataclass(frozen=True)
class _Fact:
    """What the registry says of one sample on one release: it fails at ``stage``, for
    ``reason`` (with ``issue``), as written in an entry of range ``torch`` (None: a new finding)."""

    sample: int
    stage: Stage
    reason: str
    issue: str = ""
    torch: str | None = None


#: Scope -> sample -> release -> what fails there.
_Facts = dict[Scope, dict[int, dict[Version, _Fact]]]


def _accept(
    entries: Sequence[Entry], records: Iterable[SampleResult], torch_version: str, versions: list[str], stale: set[Entry]
) -> list[Entry]:
    """:func:`accept` of one kind of record (samples as given, or derived ones)."""
    this = Version(release_series(torch_version))
    order = [Version(v) for v in versions]
    ran = _ran(records)
    # every xfail entry of a scope that ran or has a stale entry is rewritten, so that what is
    # rewritten never collides with what is kept
    touched = set(ran) | {e.scope for e in stale}
    kept: list[Entry] = []
    facts: _Facts = defaultdict(lambda: defaultdict(dict))
    for e in entries:
        holds = [Version(v) for v in versions if _applies(e, v)]
        if e in stale:  # it matched nothing this release collected: it holds for the others only
            holds = [v for v in holds if v != this]
            if e.status is not Status.XFAIL:  # a skip or flaky entry: narrowed, never made an xfail
                kept.extend(dataclasses.replace(e, torch=_range(order, run, {e.torch})) for run in _runs(order, set(holds)))
                continue
        elif e.scope not in touched or e.status is not Status.XFAIL or not holds:
            kept.append(e)
            continue
        for v in holds:
            for s in e.samples or ():
                facts[e.scope][s][v] = _Fact(s, e.stage, e.reason, e.issue, e.torch)
    for scope, results in ran.items():  # this release's findings replace what was said of it
        for s, r in results.items():
            said = facts[scope][s].pop(this, None)
            if r.stage is not None:  # a known failure keeps its entry's reason and issue link
                known = said is not None and said.stage is r.stage
                facts[scope][s][this] = said if said is not None and known else _Fact(s, r.stage, reason_from(r.message))
    return sorted([*kept, *_entries(facts, order)], key=_sort_key)


def _ran(records: Iterable[SampleResult]) -> dict[Scope, dict[int, SampleResult]]:
    """The records that say something of a sample: passed, not applicable (a derived call that
    eager rejects: nothing to expect of its compile), or failed at a stage. A skipped sample was
    not run (the OpInfo's own skips differ between releases, and an entry may serve several); a
    failure without a stage is an internal error of optests, not an expectation."""
    ran: dict[Scope, dict[int, SampleResult]] = defaultdict(dict)
    said = (Outcome.PASSED, Outcome.NOT_APPLICABLE)
    for r in records:
        if r.sample is not None and (r.outcome in said or (r.outcome is Outcome.FAILED and r.stage is not None)):
            ran[r.key.scope][r.sample] = r
    return ran


def _entries(facts: _Facts, order: list[Version]) -> list[Entry]:
    """The entries that say ``facts``: one per scope, stage and run of consecutive releases.
    Each takes its reason and issue link from an existing entry's fact rather than a new one:
    from one written with the same range where there is one, then from its lowest sample's. An
    entry of new facts alone takes them from an existing entry of its scope and stage that holds
    on a release it covers (a sample that only a newer OpInfo gives, failing as its neighbours
    do), the lowest sample's, on the oldest such release; else from its lowest sample's message."""
    out = []
    for scope, by_sample in facts.items():
        groups: dict[tuple[Stage, str], list[_Fact]] = defaultdict(list)
        covers: dict[tuple[Stage, str], set[Version]] = defaultdict(set)
        written: dict[tuple[Stage, Version], list[_Fact]] = defaultdict(list)
        for by_version in by_sample.values():
            for stage in {f.stage for f in by_version.values()}:
                failing = {v for v, f in by_version.items() if f.stage is stage}
                for run in _runs(order, failing):
                    group = [by_version[v] for v in run]
                    key = (stage, _range(order, run, {f.torch for f in group}))
                    groups[key].extend(group)
                    covers[key].update(run)
                    for v in run:
                        if by_version[v].torch is not None:
                            written[(stage, v)].append(by_version[v])
        for (stage, torch), group in groups.items():
            first = min(group, key=lambda f: (f.torch is None, f.torch != torch, f.sample))
            neighbours = [f for v in order if v in covers[(stage, torch)] for f in written[(stage, v)]]
            if first.torch is None and neighbours:
                first = min(neighbours, key=lambda f: f.sample)  # the first of equals: the oldest release's
            samples = tuple(sorted({f.sample for f in group}))
            out.append(
                Entry(
                    **scope._asdict(),
                    status=Status.XFAIL,
                    stage=stage,
                    reason=first.reason,
                    samples=samples,
                    issue=first.issue,
                    torch=torch,
                )
            )
    return out


def _runs(order: list[Version], failing: set[Version]) -> list[list[Version]]:
    """``failing`` as runs of consecutive releases of ``order``."""
    runs: list[list[Version]] = []
    for i, v in enumerate(order):
        if v in failing:
            if i and order[i - 1] in failing:
                runs[-1].append(v)
            else:
                runs.append([v])
    return runs


def _range(order: list[Version], run: list[Version], written: set[str | None]) -> str:
    """The version range of what holds on the releases ``run``: the range it was ``written``
    with (None: new) where that range names the same releases of ``order``, else the canonical
    one (no bound where the run reaches the first or the last release accepted)."""
    if len(written) == 1 and None not in written:
        torch = written.pop() or ""
        if [v for v in order if not torch or v in SpecifierSet(torch, prereleases=True)] == run:
            return torch
    first, last = order.index(run[0]), order.index(run[-1])
    bounds = ([f">={run[0]}"] if first > 0 else []) + ([f"<{order[last + 1]}"] if last + 1 < len(order) else [])
    return ",".join(bounds)
