"""The sweep's settings: parsed and validated from options and ini keys. Torch-free."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
    """One run option, declared once: every surface that takes it derives from this.

    The sweep's pytest option ``--optests-NAME`` and ini key ``optests_NAME`` (every option;
    ``optests.plugin``), the flag of ``optests check`` (``optests.cli``), the keyword of the
    author API (``check_op``, ``op_test`` and the functions they call, whose signature defaults
    are :data:`AUTHOR_DEFAULTS`), their help texts and defaults, and the options reference
    (``docs/gen_ref.py``). ``tests/test_options.py`` checks each surface against :data:`OPTIONS`.
    Fields:

    - ``name``: ``NAME``, as ``--optests-NAME`` spells it; ``help``: the pytest option's help
      (the ini key's adds the default); ``default``: the sweep's, as typed on a command line
      (``""``: none); ``parse(where, value)``: the value as the run uses it, or a
      :class:`SettingError` naming ``where``; ``flag``: a switch (no value on the command line,
      true or false in the ini); ``ini_path``: a relative path in the ini is taken from the
      rootdir; ``explicit``: a value other than the default makes the run's selection explicit
      (:attr:`Settings.explicit`).
    - The author's surfaces, where ``author_help`` is given: ``author_help``: the help of
      ``optests check``'s flag (which adds the default where it has one); ``author_name``: the
      flag's and keyword's name where it is not ``name`` (``device``: one device, not a list);
      ``metavar`` and ``cli_type``: the flag's argparse ``metavar`` and ``type``;
      ``keywords_of``: the functions of ``optests._author`` that take it as a keyword;
      ``keyword_value``: the keyword's default from the default as typed.
    - ``author_default``: the author's default where it differs from the sweep's (None: the
      same), and ``differs_because``: why, which such an option must say.
    """

    name: str
    help: str
    default: str
    parse: Callable[[str, str], object]
    flag: bool = False
    ini_path: bool = False
    explicit: bool = False
    author_help: str = ""
    author_name: str = ""
    metavar: str | None = None
    cli_type: Callable[[str], Any] | None = None
    keywords_of: tuple[str, ...] = ()
    keyword_value: Callable[[str], Any] = str
    author_default: str | None = None
    differs_because: str = ""

    def __post_init__(self) -> None:
        differs = self.author_default is not None and self.author_default != self.default
        if differs != bool(self.differs_because):
            said = "says why they differ" if self.differs_because else "does not say why"
            raise ValueError(
                f"option {self.name!r}: default={self.default!r}, author_default={self.author_default!r}, but it {said}"
            )
        if not self.author_help and (self.author_default is not None or self.author_name or self.keywords_of):
            raise ValueError(f"option {self.name!r}: author_help is not given, but it has author fields")

    @property
    def option(self) -> str:
        """The pytest option: ``--optests-NAME``."""
        return f"--optests-{self.name}"

    @property
    def ini(self) -> str:
        """The ini key, and the pytest option's ``dest``: ``optests_NAME`` (``-`` as ``_``)."""
        return "optests_" + self.attribute

    @property
    def attribute(self) -> str:
        """The :class:`Settings` field: ``NAME`` with ``-`` as ``_``."""
        return self.name.replace("-", "_")

    @property
    def cli_flag(self) -> str:
        """The flag of ``optests check`` (``--modes``); "" where it has none."""
        return f"--{self.author_name or self.name}" if self.author_help else ""

    @property
    def keyword(self) -> str:
        """The keyword of the functions :attr:`keywords_of` (``modes``); "" where none takes it."""
        return (self.author_name or self.name).replace("-", "_") if self.keywords_of else ""

    @property
    def author_value(self) -> str:
        """The default of ``optests check``'s flag and the keyword, as typed (``""``: none)."""
        return self.default if self.author_default is None else self.author_default

    @property
    def keyword_default(self) -> Any:
        """The keyword's default, as its signature gives it (:data:`AUTHOR_DEFAULTS`)."""
        return self.keyword_value(self.author_value)


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


def parse_seconds(option: str, value: str) -> float:
    """A time limit: more than 0 and at most ``MAX_SECONDS``; a :class:`SettingError` naming ``option``."""
    try:
        seconds = float(value)
    except ValueError:
        raise SettingError(f"{option}: {value!r} is not a number of seconds") from None
    if not 0 < seconds <= MAX_SECONDS:
        raise SettingError(f"{option}: must be more than 0 and at most {MAX_SECONDS:g} seconds (a day), got {value!r}")
    return seconds


#: The most reruns a failing sample may have (each is a check in a fresh process).
MAX_RERUNS = 100


def parse_reruns(option: str, value: str) -> int:
    """How many times a failing sample is checked again: a whole number from 0 (never) to
    :data:`MAX_RERUNS`; a :class:`SettingError` naming ``option``."""
    text = str(value).strip()
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_RERUNS:
        raise SettingError(f"{option}: {value!r} is not a whole number from 0 to {MAX_RERUNS}")
    return int(text)


def _reruns(value: str) -> int:
    return parse_reruns("reruns", value)


def _tuple(value: str) -> tuple[str, ...]:
    return tuple(_csv(value))


def _switch(value: str) -> bool:
    return _bool("", value)


def _optional_path(value: str) -> Path | None:
    return Path(value) if value else None


#: The functions of ``optests._author`` that take the author's keywords (``keywords_of``).
_PLAN, _RUN, _TARGET, _CHECK_OP, _OP_TEST = "plan", "run_planned", "check_target", "check_op", "op_test"
#: Every run option, in the order the help lists them (see :class:`Option`).
OPTIONS: tuple[Option, ...] = (
    Option(
        "ops",
        "op names or globs to sweep, comma-separated (matched against NAME and NAME.VARIANT)",
        "*",
        _globs,
        explicit=True,
    ),
    Option(
        "dtypes",
        f"dtypes, comma-separated; valid: {', '.join(DTYPES)}",
        "float32",
        _choices(DTYPES),
        author_help="dtypes for OpInfo samples, comma-separated",
        keywords_of=(_PLAN, _TARGET, _CHECK_OP),
        keyword_value=_tuple,
    ),
    Option(
        "modes",
        f"modes, comma-separated; valid: {', '.join(MODES)}",
        "static,dynamic",
        _modes,
        author_help="comma-separated: static, dynamic, static-nofunc, dynamic-nofunc",
        keywords_of=(_PLAN, _TARGET, _CHECK_OP, _OP_TEST),
        keyword_value=_tuple,
    ),
    Option(
        "devices",
        "devices, comma-separated; valid: cpu, cuda (cuda samples are not applicable without a GPU)",
        "cpu",
        _choices(DEVICES),
        author_help="cpu or cuda",
        author_name="device",  # one device: an author's samples are made on it
        keywords_of=(_PLAN, _TARGET, _CHECK_OP),
    ),
    Option(
        "dbs",
        f"OpInfo databases: {', '.join(BUILTIN_DBS)} (the default), module_db (torch.nn modules), "
        "or MODULE:ATTRIBUTE for a list of your own (OpInfos or ModuleInfos)",
        ",".join(BUILTIN_DBS),
        _dbs,
        explicit=True,
    ),
    Option(
        "transforms",
        f"input transforms that derive more samples from each: none, all, or names from {', '.join(TRANSFORMS)}",
        "none",
        _transforms,
        author_help=f"input transforms that derive more samples from each: all, none, or names from {', '.join(TRANSFORMS)}",
        metavar="LIST",
        keywords_of=(_PLAN, _TARGET, _CHECK_OP, _OP_TEST),
        author_default="all",
        differs_because="the sweep checks every op of its databases, where the transforms would multiply its samples "
        "(and its hours) several times over, so it derives none unless asked; an author checking an op wants every "
        "code path the derived samples reach",
    ),
    Option(
        "backends",
        "backends that compile the check, comma-separated: aot_eager (AOTAutograd, no-op compilers), "
        "aot_eager_decomp_partition, inductor, dynamo:NAME (torch.compile with a Dynamo backend), "
        "MODULE:ATTRIBUTE (your torch.compile backend), or one registered with optests.register_backend",
        DEFAULT_BACKEND,
        _backends,
        author_help="backends that compile the check, comma-separated: aot_eager, aot_eager_decomp_partition, inductor, "
        "dynamo:NAME (torch.compile with a Dynamo backend), MODULE:ATTRIBUTE (your torch.compile backend), or one "
        "registered with optests.register_backend by a module --import names",
        metavar="LIST",
        keywords_of=(_PLAN, _TARGET, _CHECK_OP, _OP_TEST),
        keyword_value=_tuple,
    ),
    Option(
        "select",
        "which of each op's samples to check: all, first:N (the first N), or signature (the first of each distinct "
        "signature: tensor metadata and other arguments); samples keep their ids",
        "all",
        _select,
        author_help="which samples of each op to check: all, first:N, or signature (the first of each distinct "
        "signature: tensor metadata and other arguments); samples keep their numbers",
        metavar="RULE",
        keywords_of=(_PLAN, _TARGET, _CHECK_OP),
    ),
    Option(
        "ids",
        "check only the samples whose ids this file lists, one a line (as results files and reports give them, "
        "or pytest node ids; gzip-compressed or not): e.g. another release's failures; the other options still apply",
        "",
        _ids,
        ini_path=True,
        explicit=True,
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
    Option(
        "timeout",
        "seconds one sample may take before it is recorded as a timeout",
        "300",
        parse_seconds,
        author_help="seconds one check may take; a check that runs longer, or kills the process running it, is a "
        "timeout or crash finding and the others still run",
        keywords_of=(_RUN, _TARGET),
        keyword_value=float,
    ),
    Option(
        "reruns",
        "how many times a sample whose verdict would fail the run is checked again, each in a fresh process, until "
        "one check's verdict would not: then it is flaky, which is reported and does not fail the run; 0: never. "
        "A timeout is not checked again",
        "1",
        parse_reruns,
        author_help="how many times a check whose verdict would fail the run is made again, each in a fresh process, "
        "until one's verdict would not: then it is FLAKY, which is reported and is not a finding; 0: never (a timeout "
        "is not made again)",
        metavar="N",
        keywords_of=(_RUN, _TARGET, _CHECK_OP, _OP_TEST),
        keyword_value=_reruns,
    ),
    Option(
        "derived-after-death",
        "also check the samples derived from a sample whose check timed out or crashed (by default they are not run: "
        "recorded as skipped, saying why)",
        "false",
        _bool,
        flag=True,
        author_help="also check the samples derived from a sample whose check timed out or crashed (by default they are "
        "not run: SKIP, saying why)",
        keywords_of=(_RUN, _TARGET, _CHECK_OP, _OP_TEST),
        keyword_value=_switch,
    ),
    Option(
        "compile-cache",
        "where inductor keeps what it compiles (its FX graph and AOTAutograd caches): fresh (an empty folder for this "
        "run, removed after it), shared (torch's: TORCHINDUCTOR_CACHE_DIR or its default) or a folder; results record it",
        "fresh",
        parse_compile_cache_option,
        author_help="where inductor keeps what it compiles: fresh (an empty folder for this command, removed after it), "
        "shared (torch's: TORCHINDUCTOR_CACHE_DIR or its default) or a folder; --json records it",
        metavar="CACHE",
        keywords_of=(_CHECK_OP, _OP_TEST),
    ),
    Option(
        "registry",
        "the expected-failures registry (relative to the rootdir)",
        "expected_failures.json",
        _path,
        author_help="an expected-failures registry: findings it lists are expected",
        cli_type=Path,
        keywords_of=(_CHECK_OP, _OP_TEST),
        keyword_value=_optional_path,
        author_default="",
        differs_because="the sweep judges a project's ops against the registry at its rootdir; an author's op has no "
        "entries there, so optests check, check_op and op_test judge against a registry only when given one",
    ),
    Option("accept", "rewrite the registry from this run (only the scopes that ran are touched)", "false", _bool, flag=True),
    Option("strict-registry", "fail the run when registry entries match nothing collected (stale)", "false", _bool, flag=True),
)
#: The options by name.
OPTION = {o.name: o for o in OPTIONS}
#: Seconds one sample may take by default, in the sweep and in ``optests check``.
DEFAULT_TIMEOUT: float = OPTION["timeout"].keyword_default


@dataclasses.dataclass(frozen=True)
class AuthorDefaults:
    """The defaults of the author API's keywords (:attr:`Option.keyword`), made from :data:`OPTIONS`:
    a signature writes ``modes: Sequence[str] = AUTHOR_DEFAULTS.modes``. A field per keyword."""

    dtypes: tuple[str, ...]
    modes: tuple[str, ...]
    device: str
    transforms: str
    backends: tuple[str, ...]
    select: str
    timeout: float
    reruns: int
    derived_after_death: bool
    compile_cache: str
    registry: Path | None


AUTHOR_DEFAULTS = AuthorDefaults(**{o.keyword: o.keyword_default for o in OPTIONS if o.keyword})


@dataclasses.dataclass(frozen=True)
class Settings:
    """The sweep's settings: a field per option of :data:`OPTIONS` (:attr:`Option.attribute`),
    as its ``parse`` makes it, in their order."""

    ops: tuple[str, ...]
    dtypes: tuple[str, ...]
    modes: tuple[Mode, ...]
    devices: tuple[str, ...]
    dbs: tuple[str, ...]
    transforms: tuple[str, ...]
    backends: tuple[str, ...]
    select: Selection
    ids: IdList | None
    results: Path | None
    resume: bool
    timeout: float
    reruns: int
    derived_after_death: bool
    compile_cache: str
    registry: Path | None
    accept: bool
    strict_registry: bool
    #: ops, databases or ids were chosen explicitly (:attr:`Option.explicit`: so they are
    #: validated before collection)
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
        where = opt.option if cli is not None else f"{opt.ini} (ini)"
        values[opt.attribute] = opt.parse(where, raw)
        if opt.explicit and raw != opt.default:
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
