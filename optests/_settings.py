"""The sweep's settings: parsed and validated from options and ini keys. Torch-free."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable
from pathlib import Path

from ._errors import InputError
from ._key import BUILTIN_DBS as BUILTIN_DBS
from ._key import DEFAULT_BACKEND, DEVICES, DTYPES, MODES, TRANSFORMS, Mode, SampleKey, parse_transforms
from ._key import KNOWN_DBS as KNOWN_DBS
from ._key import MODULE_DBS as MODULE_DBS
from ._pipeline import Selection
from .errors import SettingError as SettingError

_DB_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


@dataclasses.dataclass(frozen=True)
class Option:
    name: str  # --optests-NAME and ini key optests_NAME
    help: str
    default: str
    parse: Callable[[str, str], object]
    flag: bool = False  # a switch: --optests-NAME takes no value; the ini key takes true/false
    #: a file read as settings are: a relative path in the ini is taken from the rootdir, as
    #: pytest's own ini paths are (one on the command line from the current directory)
    ini_path: bool = False


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def parse_choices(option: str, value: str, valid: tuple[str, ...]) -> tuple[str, ...]:
    """Comma-separated values, each one of ``valid``; a :class:`SettingError` naming ``option``."""
    items = _csv(value)
    if not items:
        raise SettingError(f"{option}: empty; valid: {', '.join(valid)}")
    for item in items:
        if item not in valid:
            raise SettingError(f"{option}: unknown value {item!r}; valid: {', '.join(valid)}")
    return tuple(dict.fromkeys(items))


def _choices(valid: tuple[str, ...]) -> Callable[[str, str], tuple[str, ...]]:
    return lambda option, value: parse_choices(option, value, valid)


def _modes(option: str, value: str) -> tuple[Mode, ...]:
    return tuple(map(Mode, parse_choices(option, value, MODES)))


def _transforms(option: str, value: str) -> tuple[str, ...]:
    try:
        return parse_transforms(value)
    except ValueError as e:
        raise SettingError(f"{option}: {e}") from None


def _backends(option: str, value: str) -> tuple[str, ...]:
    """Each name one :func:`optests._backends.get_backend` resolves: ``dynamo:NAME`` and
    ``MODULE:ATTRIBUTE`` import what they name here (torch), when a run asks for them."""
    from ._backends import parse_backends

    try:
        return parse_backends(value)
    except ValueError as e:
        raise SettingError(f"{option}: {e}") from None


def _select(option: str, value: str) -> Selection:
    try:
        return Selection.parse(value)
    except ValueError as e:
        raise SettingError(f"{option}={e}") from None


def _globs(option: str, value: str) -> tuple[str, ...]:
    items = _csv(value)
    if not items:
        raise SettingError(f"{option}: empty; give op names or globs, e.g. 'sin,nn.functional.conv*'")
    return tuple(items)


def _dbs(option: str, value: str) -> tuple[str, ...]:
    items = _csv(value)
    if not items:
        raise SettingError(f"{option}: empty; valid: {', '.join(KNOWN_DBS)} or MODULE:ATTRIBUTE")
    for item in items:
        if item not in KNOWN_DBS and not _DB_REF.match(item):
            raise SettingError(f"{option}: unknown database {item!r}; valid: {', '.join(KNOWN_DBS)} or MODULE:ATTRIBUTE")
    return tuple(dict.fromkeys(items))


@dataclasses.dataclass(frozen=True)
class IdList:
    """The sample ids a file lists (``--optests-ids``): only those samples are checked."""

    path: Path
    ids: frozenset[str]

    @functools.cached_property
    def runs(self) -> frozenset[tuple[str, str, str, str, str]]:
        """The ops the ids name, each with a mode, dtype, device and backend
        (:attr:`SampleKey.run`): where an op has no sample to check (its samples cannot be made,
        or it does not apply), that is what the run reports in their place."""
        return frozenset(run for run in map(SampleKey.run_of_id, self.ids) if run is not None)

    @functools.cached_property
    def op_ids(self) -> frozenset[str]:
        """The ops (``NAME.VARIANT``) the ids name: the only ones whose samples are made."""
        return frozenset(run[0] for run in self.runs)


def read_ids(option: str, path: Path) -> IdList:
    """The ids in ``path``, one a line, gzip-compressed or not: sample ids as results files and
    reports give them (``static-float32-cpu-sin-sample3``) or pytest node ids that end in one
    (``...::test_aot_autograd[static-float32-cpu-sin-sample3]``); blank lines and lines that
    start with ``#`` are left out. A :class:`SettingError` for a file that cannot be read, a
    line that is not an id, or no id at all."""
    from ._results import read_text

    try:
        text = read_text(path).removeprefix("\ufeff")  # a byte order mark, as some editors save
    except InputError as e:
        raise SettingError(f"{option}: {e}") from None
    ids = set()
    for number, line in enumerate(text.splitlines(), 1):
        item = line.strip()
        if not item or item.startswith("#"):
            continue
        item = SampleKey.id_in_nodeid(item) or item
        if not SampleKey.is_id(item):
            raise SettingError(
                f"{option}: {path}, line {number}: {line.strip()[:120]!r} is not a sample id (such as static-float32-cpu-sin-sample3)"
            )
        ids.add(item)
    if not ids:
        raise SettingError(f"{option}: {path} lists no sample id (one a line, such as static-float32-cpu-sin-sample3)")
    return IdList(path, frozenset(ids))


def _ids(option: str, value: str) -> IdList | None:
    return read_ids(option, Path(value)) if value.strip() else None


def parse_compile_cache_option(option: str, value: str) -> str:
    """``fresh``, ``shared`` or a folder (absolute); a :class:`SettingError` naming ``option``."""
    from ._env import parse_compile_cache

    try:
        return parse_compile_cache(value)
    except ValueError as e:
        raise SettingError(f"{option}: {e}") from None


def _path(option: str, value: str) -> Path | None:
    return Path(value) if value.strip() else None


def _bool(option: str, value: str) -> bool:
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("", "0", "false", "no", "off"):
        return False
    raise SettingError(f"{option}: {value!r} is not true or false")


#: The longest time limit a sample may have: a day (longer ones overflow the clocks they feed).
MAX_SECONDS = 86400.0
#: Seconds one sample may take by default, in the sweep and in ``optests check``.
DEFAULT_TIMEOUT = 300.0


def parse_seconds(option: str, value: str) -> float:
    """A time limit: more than 0 and at most ``MAX_SECONDS``; a :class:`SettingError` naming ``option``."""
    try:
        seconds = float(value)
    except ValueError:
        raise SettingError(f"{option}: {value!r} is not a number of seconds") from None
    if not 0 < seconds <= MAX_SECONDS:
        raise SettingError(f"{option}: must be more than 0 and at most {MAX_SECONDS:g} seconds (a day), got {value!r}")
    return seconds


OPTIONS = (
    Option("ops", "op names or globs to sweep, comma-separated (matched against NAME and NAME.VARIANT)", "*", _globs),
    Option("dtypes", f"dtypes, comma-separated; valid: {', '.join(DTYPES)}", "float32", _choices(DTYPES)),
    Option("modes", f"modes, comma-separated; valid: {', '.join(MODES)}", "static,dynamic", _modes),
    Option(
        "devices",
        "devices, comma-separated; valid: cpu, cuda (cuda samples are not applicable without a GPU)",
        "cpu",
        _choices(DEVICES),
    ),
    Option(
        "dbs",
        f"OpInfo databases: {', '.join(BUILTIN_DBS)} (the default), module_db (torch.nn modules), "
        "or MODULE:ATTRIBUTE for a list of your own (OpInfos or ModuleInfos)",
        ",".join(BUILTIN_DBS),
        _dbs,
    ),
    Option(
        "transforms",
        f"input transforms that derive more samples from each: none, all, or names from {', '.join(TRANSFORMS)}",
        "none",
        _transforms,
    ),
    Option(
        "backends",
        "backends that compile the check, comma-separated: aot_eager (AOTAutograd, no-op compilers), "
        "aot_eager_decomp_partition, inductor, dynamo:NAME (torch.compile with a Dynamo backend), "
        "MODULE:ATTRIBUTE (your torch.compile backend), or one registered with optests._backends.register",
        DEFAULT_BACKEND,
        _backends,
    ),
    Option(
        "select",
        "which of each op's samples to check: all, first:N (the first N), or signature (the first of each distinct "
        "signature: tensor metadata and other arguments); samples keep their ids",
        "all",
        _select,
    ),
    Option(
        "ids",
        "check only the samples whose ids this file lists, one a line (as results files and reports give them, "
        "or pytest node ids; gzip-compressed or not): e.g. another release's failures; the other options still apply",
        "",
        _ids,
        ini_path=True,
    ),
    Option("results", "write the run's results (JSON, merged from all xdist workers) to this path", "", _path),
    Option(
        "resume",
        "go on from the journal a killed run left beside --optests-results (RESULTS.partial): its samples are not "
        "checked again, their records kept; without a journal, the run starts afresh",
        "false",
        _bool,
        flag=True,
    ),
    Option("timeout", "seconds one sample may take before it is recorded as a timeout", f"{DEFAULT_TIMEOUT:g}", parse_seconds),
    Option(
        "derived-after-death",
        "also check the samples derived from a sample whose check timed out or crashed (by default they are not run: "
        "recorded as skipped, saying why)",
        "false",
        _bool,
        flag=True,
    ),
    Option(
        "compile-cache",
        "where inductor keeps what it compiles (its FX graph and AOTAutograd caches): fresh (an empty folder for this "
        "run, removed after it), shared (torch's: TORCHINDUCTOR_CACHE_DIR or its default) or a folder; results record it",
        "fresh",
        parse_compile_cache_option,
    ),
    Option("registry", "the expected-failures registry (relative to the rootdir)", "expected_failures.json", _path),
    Option("accept", "rewrite the registry from this run (only the scopes that ran are touched)", "false", _bool, flag=True),
    Option("strict-registry", "fail the run when registry entries match nothing collected (stale)", "false", _bool, flag=True),
)


@dataclasses.dataclass(frozen=True)
class Settings:
    ops: tuple[str, ...]
    dtypes: tuple[str, ...]
    modes: tuple[Mode, ...]
    transforms: tuple[str, ...]
    backends: tuple[str, ...]
    select: Selection
    ids: IdList | None
    devices: tuple[str, ...]
    dbs: tuple[str, ...]
    results: Path | None
    resume: bool
    timeout: float
    derived_after_death: bool
    compile_cache: str
    registry: Path | None
    accept: bool
    strict_registry: bool
    #: ops, databases or ids were chosen explicitly (so they are validated before collection)
    explicit: bool = False


def parse(get: Callable[[str], object], get_ini: Callable[[str], str], rootdir: Path | None = None) -> Settings:
    """Settings from the command line (``get``) falling back to ini keys, then defaults; the
    ini's relative paths of files read here are taken from ``rootdir``."""
    values = {}
    for opt in OPTIONS:
        cli = get(opt.name)
        if opt.flag and cli is False:
            cli = None  # a switch not given on the command line: the ini key decides
        raw = str(cli) if cli is not None else (get_ini(opt.name) or opt.default)
        if opt.ini_path and cli is None and rootdir is not None and raw.strip() and not Path(raw.strip()).is_absolute():
            raw = str(rootdir / raw.strip())
        where = f"--optests-{opt.name}" if cli is not None else f"optests_{opt.name} (ini)"
        values[opt.name.replace("-", "_")] = opt.parse(where, raw)
        if opt.name in ("ops", "dbs", "ids") and raw != opt.default:
            values["explicit"] = True
    settings = Settings(**values)  # type: ignore[arg-type]
    if settings.resume and settings.results is None:
        raise SettingError("--optests-resume: goes on from the journal of --optests-results, which is not given")
    from ._backends import refuse_modes

    try:
        refuse_modes([m.value for m in settings.modes], settings.backends)
    except ValueError as e:
        raise SettingError(f"--optests-modes, --optests-backends: {e}") from None
    return settings
