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


class Scope(NamedTuple):
    """What one registry entry covers: the samples of one op in one mode, dtype and device."""

    op: str
    variant: str
    mode: str
    dtype: str
    device: str


def op_id(op: str, variant: str) -> str:
    """``NAME.VARIANT``, or ``NAME`` for an op without a variant."""
    return f"{op}.{variant}" if variant else op


#: How an id ends when there is no sample to check (``sample`` is None).
NOT_APPLICABLE = "not_applicable"
BROKEN = "samples"

_ID = re.compile(
    rf"^(?P<mode>{'|'.join(sorted(MODES, key=len, reverse=True))})-(?P<dtype>{'|'.join(DTYPES)})-"
    rf"(?P<device>{'|'.join(DEVICES)})-(?P<op_id>.+)-(?P<tail>sample(?P<sample>\d+)|{BROKEN}|{NOT_APPLICABLE})$"
)


@dataclasses.dataclass(frozen=True)
class SampleKey:
    """One sample of one op in one mode, dtype and device.

    ``sample`` is None when there is nothing to check: the op does not apply (``broken=False``)
    or its OpInfo could not make its samples (``broken=True``).
    """

    op: str
    variant: str
    mode: Mode
    dtype: str
    device: str
    sample: int | None
    broken: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", Mode(self.mode))
        if self.broken and self.sample is not None:
            raise ValueError(f"sample {self.sample} of {self.op_id}: a key with a sample is not broken")

    @property
    def op_id(self) -> str:
        return op_id(self.op, self.variant)

    @property
    def id(self) -> str:
        """The stable test id: ``static-float32-cpu-sin-sample3``."""
        if self.sample is not None:
            tail = f"sample{self.sample}"
        else:
            tail = BROKEN if self.broken else NOT_APPLICABLE
        return f"{self.mode}-{self.dtype}-{self.device}-{self.op_id}-{tail}"

    @property
    def context(self) -> str:
        """The bracket that ends its messages: ``sin static float32 cpu sample 3``."""
        return f"{self.op_id} {self.mode} {self.dtype} {self.device} sample {self.sample}"

    @property
    def scope(self) -> Scope:
        return Scope(self.op, self.variant, self.mode.value, self.dtype, self.device)

    @classmethod
    def of_record(cls, id: str, op: str, variant: str, mode: str, dtype: str, device: str, sample: int | None) -> SampleKey:
        """The key of a stored record (a results file, the history), which keeps its id beside
        the fields that make it; a ``ValueError`` if they disagree."""
        key = cls(op, variant, Mode(mode), dtype, device, sample, broken=sample is None and id.endswith(f"-{BROKEN}"))
        if key.id != id:
            raise ValueError(f"id={id!r}, but expected {key.id!r}, as its op, variant, mode, dtype, device and sample make it")
        return key

    @staticmethod
    def is_id(text: str) -> bool:
        """Whether ``text`` has the form of a sample id."""
        return _ID.match(text) is not None

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
        return cls(*parts, Mode(m["mode"]), m["dtype"], m["device"], sample, broken=m["tail"] == BROKEN)
