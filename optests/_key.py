"""The identity of a sample: :class:`SampleKey` and the :class:`Mode` it runs in. Torch-free.

One key names one check of one sample everywhere: sweep test ids, author checks, results records,
registry matching, diff and history. ``docs/contract.md`` (section "Sample ids") is the contract.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable
from typing import NamedTuple


class Mode(str, enum.Enum):
    """How the check compiles: static or dynamic shapes, with or without functionalization."""

    STATIC = "static"
    DYNAMIC = "dynamic"
    STATIC_NOFUNC = "static-nofunc"
    DYNAMIC_NOFUNC = "dynamic-nofunc"

    @property
    def dynamic(self) -> bool:
        """Traced with symbolic shapes."""
        return self in (Mode.DYNAMIC, Mode.DYNAMIC_NOFUNC)

    @property
    def functionalized(self) -> bool:
        """AOTAutograd functionalizes the graph (the ``-nofunc`` modes turn it off)."""
        return self in (Mode.STATIC, Mode.DYNAMIC)

    def __str__(self) -> str:
        return self.value


MODES = tuple(m.value for m in Mode)
DEVICES = ("cpu", "cuda")
#: The databases of ``torch.testing._internal`` that the sweep walks by default, by our name.
BUILTIN_DBS = ("op_db", "hop_db", "custom_op_db")
#: ``module_db``: torch.nn modules (``ModuleInfo``); swept when chosen, not by default.
MODULE_DBS = ("module_db",)
#: Every database optests knows by name (``optests check`` finds its names in all of them).
KNOWN_DBS = BUILTIN_DBS + MODULE_DBS
DTYPES = (
    "float32",
    "float64",
    "float16",
    "bfloat16",
    "complex64",
    "complex128",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "bool",
)


#: Input transforms and call patterns, the one axis of derived samples, by the names users type,
#: each with where it is implemented (``MODULE:ATTRIBUTE``, an ``optests._transforms.Transform``,
#: imported when a sample is derived: this module stays torch-free). This is where one is
#: registered: a new transform or pattern is its module and a line here. A derived sample's id is
#: its base id plus the name, and an index where one derives several.
INPUT_TRANSFORMS: dict[str, str] = {  # other inputs, called as the base sample is
    "noncontiguous": "optests._transforms:NONCONTIGUOUS",
    "transposed": "optests._transforms:TRANSPOSED",
    "duplicated": "optests._transforms:DUPLICATED",
    "aliased": "optests._transforms:ALIASED",
    "grad-subset": "optests._transforms:GRAD_SUBSET",
    "dtypes": "optests._transforms:DTYPES_TRANSFORM",
    "resized": "optests._transforms:RESIZED",
    "special": "optests._patterns.special:SPECIAL",
}
CALL_PATTERNS: dict[str, str] = {  # the function called, or its outputs used, otherwise (optests._patterns)
    "tangents": "optests._patterns.tangents:TANGENTS",
    "grad-mode": "optests._patterns.grad_mode:GRAD_MODE",
    "backward": "optests._patterns.backward:BACKWARD",
    "outputs": "optests._patterns.outputs:OUTPUTS",
    "inplace": "optests._patterns.inplace:INPLACE",
    "out": "optests._patterns.out:OUT",
    "subclass": "optests._patterns.subclass:SUBCLASS",
    "autocast": "optests._patterns.autocast:AUTOCAST",
    "sequence": "optests._patterns.sequence:SEQUENCE",
    "func": "optests._patterns.func:FUNC",
    "checkpoint": "optests._patterns.checkpoint:CHECKPOINT",
    "hooks": "optests._patterns.hooks:HOOKS_PATTERN",
    "inplace-between": "optests._patterns.inplace_between:INPLACE_BETWEEN",
    "rng": "optests._patterns.rng:RNG",
}
DERIVATIONS = {**INPUT_TRANSFORMS, **CALL_PATTERNS}

#: The names of :data:`DERIVATIONS`, in order.
TRANSFORMS = tuple(DERIVATIONS)


def parse_transforms(value: str) -> tuple[str, ...]:
    """``none``, ``all``, or a comma-separated list of names, as users type them (an option, an
    ini key). Returns the names in :data:`TRANSFORMS` order, without duplicates; raises
    ``ValueError`` with a one-line message naming the valid names."""
    text = value.strip()
    if text == "none":
        return ()
    if text == "all":
        return TRANSFORMS
    names = [n.strip() for n in text.split(",")]
    bad = [n for n in names if n not in TRANSFORMS]
    if bad:
        raise ValueError(
            f"unknown transform {bad[0]!r}; expected none, all, or a comma-separated list of: {', '.join(TRANSFORMS)}"
        )
    return tuple(t for t in TRANSFORMS if t in names)


def transform_name(suffix: str) -> str:
    """The transform a derived sample's suffix names: ``grad-subset-1`` -> ``grad-subset``."""
    head, _, index = suffix.rpartition("-")
    return head if index.isascii() and index.isdigit() else suffix  # "٣".isdigit() too


#: The backend of a key that names none: ``optests._backends.DEFAULT_BACKEND`` (this module is torch-free).
DEFAULT_BACKEND = "aot_eager"
#: What a backend's name may be (a regular expression): ids spell it after ``@``.
BACKEND_NAME = r"[A-Za-z_][A-Za-z0-9_.:]*"  # ASCII, as sample indices are


class Scope(NamedTuple):
    """What one registry entry covers: the samples of one op in one mode, dtype and device, as
    they are or derived by one transform (``transposed``, ``duplicated-1``), compiled by one
    backend (an entry without one means ``aot_eager``)."""

    op: str
    variant: str
    mode: str
    dtype: str
    device: str
    transform: str = ""
    backend: str = DEFAULT_BACKEND


def op_id(op: str, variant: str) -> str:
    """``NAME.VARIANT``, or ``NAME`` for an op without a variant."""
    return f"{op}.{variant}" if variant else op


#: Sample indices are below this, in results records and in the registry. The largest OpInfo makes
#: 1,440 samples (the committed results' largest index is 1439), so this leaves room for seventy
#: times as many. A registry range past it is refused before it is expanded: ``"0-100000000"`` is
#: one line of error, not a hundred million indices in memory.
SAMPLE_LIMIT = 100_000

#: How an id ends when there is no sample to check (``sample`` is None).
NOT_APPLICABLE = "not_applicable"
BROKEN = "samples"

_ALTERNATIVES = "|".join(sorted(TRANSFORMS, key=len, reverse=True))  # the longest first: "outputs" before "out"
_ID = re.compile(
    rf"^(?P<mode>{'|'.join(sorted(MODES, key=len, reverse=True))})-(?P<dtype>{'|'.join(DTYPES)})-"
    rf"(?P<device>{'|'.join(DEVICES)})-(?P<op_id>.+)-(?P<tail>sample(?P<sample>[0-9]+)"
    rf"(?:-(?P<transform>(?:{_ALTERNATIVES})(?:-[0-9]+)?))?|{BROKEN}|{NOT_APPLICABLE})"
    rf"(?:@(?P<backend>{BACKEND_NAME}))?\Z"
)
#: A transform as ids and the registry name it: its name, and an index where it derives several.
TRANSFORM = re.compile(rf"^(?:{_ALTERNATIVES})(?:-[0-9]+)?\Z")


@dataclasses.dataclass(frozen=True)
class SampleKey:
    """One sample of one op in one mode, dtype and device.

    ``sample`` is None when there is nothing to check: the op does not apply (``broken=False``)
    or its OpInfo could not make its samples (``broken=True``). ``transform`` names the sample
    derived from sample ``sample`` by an input transform (``transposed``, ``duplicated-1``).
    ``backend`` names the compile step (``optests._backends``); an id names it after ``@``
    unless it is ``aot_eager``, whose ids have no backend in them.
    """

    op: str
    variant: str
    mode: Mode
    dtype: str
    device: str
    sample: int | None
    broken: bool = False
    transform: str = ""
    backend: str = DEFAULT_BACKEND

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", Mode(self.mode))
        if self.broken and self.sample is not None:
            raise ValueError(f"sample {self.sample} of {self.op_id}: a key with a sample is not broken")
        if self.transform and (self.sample is None or not TRANSFORM.match(self.transform)):
            raise ValueError(f"transform {self.transform!r} of {self.op_id}: expected a transform's name (and index) of a sample")

    @property
    def op_id(self) -> str:
        return op_id(self.op, self.variant)

    @property
    def id(self) -> str:
        """The stable test id: ``static-float32-cpu-sin-sample3``."""
        if self.sample is not None:
            tail = f"sample{self.sample}-{self.transform}" if self.transform else f"sample{self.sample}"
        else:
            tail = BROKEN if self.broken else NOT_APPLICABLE
        at = f"@{self.backend}" if self.backend != DEFAULT_BACKEND else ""
        return f"{self.mode}-{self.dtype}-{self.device}-{self.op_id}-{tail}{at}"

    @property
    def context(self) -> str:
        """What the bracket that ends its messages starts with: ``sin static float32 cpu sample 3``
        (a derived sample's adds what its transform changed: ``... transposed-0: args[0] ...``)."""
        base = f"{self.op_id} {self.mode} {self.dtype} {self.device} sample {self.sample}"
        base = f"{base} {self.transform}" if self.transform else base
        return f"{base} @{self.backend}" if self.backend != DEFAULT_BACKEND else base

    @property
    def sample_text(self) -> str:
        """The sample as reports show it: ``3``, or ``3 transposed`` for a derived one."""
        return f"{self.sample} {self.transform}" if self.transform else str(self.sample)

    @property
    def scope(self) -> Scope:
        return Scope(self.op, self.variant, self.mode.value, self.dtype, self.device, self.transform, self.backend)

    @classmethod
    def of_record(
        cls,
        id: str,
        op: str,
        variant: str,
        mode: str,
        dtype: str,
        device: str,
        sample: int | None,
        transform: str = "",
        backend: str = DEFAULT_BACKEND,
    ) -> SampleKey:
        """The key of a stored record (a results file, the history), which keeps its id beside
        the fields that make it; a ``ValueError`` if they disagree."""
        broken = sample is None and id.removesuffix(f"@{backend}").endswith(f"-{BROKEN}")
        key = cls(op, variant, Mode(mode), dtype, device, sample, broken, transform, backend)
        if key.id != id:
            raise ValueError(f"id={id!r}, but expected {key.id!r}, as its op, variant, mode, dtype, device and sample make it")
        return key

    @staticmethod
    def is_id(text: str) -> bool:
        """Whether ``text`` has the form of a sample id."""
        return _ID.match(text) is not None

    @staticmethod
    def id_in_nodeid(nodeid: str) -> str:
        """The sample id a pytest node id ends in (``...::test_aot_autograd[ID]``), or "" where
        it ends in none: its parameter, after the first ``[`` (an op's name may hold one)."""
        _, bracket, param = nodeid.partition("[")
        return param[:-1] if bracket and param.endswith("]") and SampleKey.is_id(param[:-1]) else ""

    @staticmethod
    def run_of_id(text: str) -> tuple[str, str, str, str, str] | None:
        """What a sample id says of the run its op's samples are checked in, as :attr:`run` does:
        ``(op id, mode, dtype, device, backend)``; None if ``text`` is not an id."""
        m = _ID.match(text)
        return (m["op_id"], m["mode"], m["dtype"], m["device"], m["backend"] or DEFAULT_BACKEND) if m is not None else None

    @property
    def run(self) -> tuple[str, str, str, str, str]:
        """``(op id, mode, dtype, device, backend)``: the samples checked alike, the sample
        itself and its transform aside."""
        return (self.op_id, self.mode.value, self.dtype, self.device, self.backend)

    @classmethod
    def parse(cls, text: str, split: Callable[[str], tuple[str, str] | None]) -> SampleKey | None:
        """The key an id names, or None if ``text`` is not one.

        An id does not say where an op's name ends and its variant begins (``nn.functional.dropout``
        is one name; ``linalg.pinv.hermitian`` is ``linalg.pinv`` and variant ``hermitian``), so
        ``split`` maps an op id to ``(name, variant)``, or to None for an op it does not know.
        """
        m = _ID.match(text)
        if m is None:
            return None
        parts = split(m["op_id"])
        if parts is None:
            return None
        sample = int(m["sample"]) if m["sample"] is not None else None
        backend = m["backend"] or DEFAULT_BACKEND
        return cls(*parts, Mode(m["mode"]), m["dtype"], m["device"], sample, m["tail"] == BROKEN, m["transform"] or "", backend)
