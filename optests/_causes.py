"""Causes: what a failure is an instance of, so that failures group by it (torch-free).

A failed record's *cause* is one of two things:

- a known PyTorch bug's name, where the failure matches an entry of the shipped catalog
  (:data:`optests._known.KNOWN`: the bug, its repro in ``findings/``, the upstream issue, the torch
  releases it was checked on and where it was fixed); every entry point says so,
  ``known PyTorch bug: NAME (findings/NAME.py)``;
- else its *signature*: the stage, the family of the input transform or call pattern that derived
  the sample (``transposed`` for ``transposed-1``; ``call`` for the sample as made), the backend
  and the message with what varies from sample to sample taken out (the context in brackets at its
  end, tensor values, numbers, dtype names and the op's own name)::

      metadata/transposed/aot_eager: traced out.stride()=(N...), but expected (N...)

The same cause across samples, ops, modes and dtypes is one string, so results, the history, the
diff, ``judge`` and the dashboard group by plain equality. A record carries its cause (the
``cause`` field, written where the sample failed); a record read from a file written before
causes existed has it computed from its message (:func:`of`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ._findings import Outcome, Stage
from ._key import DEFAULT_BACKEND, SampleKey, transform_name
from ._known import KNOWN, KnownBug

if TYPE_CHECKING:
    from ._results import SampleResult

#: Where the signature's message part is cut: past this, two messages are one cause.
SIGNATURE_TEXT = 200


def release(version: str) -> tuple[int, ...]:
    """``(major, minor)`` of a torch version (``2.15.0+cu132`` -> ``(2, 15)``); ``()`` if none."""
    m = re.match(r"(\d+)\.(\d+)", version)
    return (int(m[1]), int(m[2])) if m else ()


def running_torch() -> str:
    """The version of the torch this process runs (imported, or installed), without importing it."""
    torch = sys.modules.get("torch")
    if torch is not None:
        return str(torch.__version__)
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return ""


def strip_context(message: str) -> str:
    """``message`` without the bracketed context at its end (``[op mode dtype device sample N ...]``,
    which may hold brackets itself: ``out= args[0]``)."""
    text = message.rstrip()
    if not text.endswith("]"):
        return text
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        if text[i] == "]":
            depth += 1
        elif text[i] == "[":
            depth -= 1
            if depth == 0:
                return text[:i].rstrip() if i > 0 and text[i - 1] == " " else text
    return text


_TENSOR_REPR = re.compile(r"\b\w*[Tt]ensor\(")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_DTYPE = re.compile(
    r"\b(?:torch\.)?(?:b?float(?:8_\w+|16|32|64)|u?int(?:1|2|4|8|16|32|64)|complex(?:32|64|128)|half|double|cfloat|cdouble)\b"
)
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?|-?\b(?:nan|inf)\b")
# a list of numbers, not an index (``args[N]`` stays)
_FLAT_LIST = re.compile(r"(?<![\w\]])([\[(])\s*N(?:\.\.\.)?(?:\s*,\s*N(?:\.\.\.)?)*\s*,?\s*([\])])")
_NESTED_LIST = re.compile(r"([\[(])\s*[\[(]N\.\.\.[\])](?:\s*,\s*[\[(]N\.\.\.[\])])*\s*,?\s*([\])])")
_SPACE = re.compile(r"\s+")


def _tensors_elided(text: str) -> str:
    """Each ``tensor(...)`` repr (values over many lines) as ``tensor(...)``."""
    out: list[str] = []
    at = 0
    for m in _TENSOR_REPR.finditer(text):
        if m.start() < at:
            continue
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        out.append(text[at : m.end()] + "...)")
        at = i
    out.append(text[at:])
    return "".join(out)


def normalized(message: str, names: tuple[str, ...] = ()) -> str:
    """``message`` with what varies between instances of one cause taken out: its context, tensor
    values, addresses, dtype names, ``names`` (the op's), numbers (``N``) and lists of them
    (``[N...]``); whitespace collapsed, cut at :data:`SIGNATURE_TEXT` characters."""
    text = _tensors_elided(strip_context(message))
    text = _HEX.sub("<address>", text)
    text = _DTYPE.sub("<dtype>", text)
    for name in sorted({n for n in names if n}, key=len, reverse=True):
        text = re.sub(rf"(?<![\w.]){re.escape(name)}(?!\w)", "<op>", text)
    text = _NUMBER.sub("N", text)
    before = None
    while before != text:
        before = text
        text = _NESTED_LIST.sub(r"\1N...\2", _FLAT_LIST.sub(r"\1N...\2", text))
    text = _SPACE.sub(" ", text).strip()
    return text[:SIGNATURE_TEXT]


def signature(key: SampleKey, stage: Stage | None, message: str) -> str:
    """The cause of a failure no known bug explains (see the module's docstring)."""
    family = transform_name(key.transform) or "call"
    where = stage.value if stage is not None else "error"
    backend = key.backend or DEFAULT_BACKEND
    return f"{where}/{family}/{backend}: {normalized(message, (key.op_id, key.op))}"


def matches(bug: KnownBug, key: SampleKey, stage: Stage | None, message: str, torch: str = "") -> bool:
    """Whether a failure of ``key`` at ``stage`` with ``message`` is an instance of ``bug``, on ``torch``
    (a version; "": any release, as for a record whose run is not known)."""
    if stage not in bug.stages:
        return False
    if bug.families is not None and transform_name(key.transform) not in bug.families:
        return False
    if bug.ops is not None and key.op_id not in bug.ops:
        return False
    if bug.backends is not None and key.backend not in bug.backends:
        return False
    if torch and bug.fixed_in and release(torch) >= release(bug.fixed_in):
        return False
    return bug.pattern.search(strip_context(message)) is not None


def known_bug(key: SampleKey, stage: Stage | None, message: str, torch: str = "") -> KnownBug | None:
    """The catalog's entry that a failure is an instance of, or None."""
    return next((bug for bug in KNOWN if matches(bug, key, stage, message, torch)), None)


def cause(key: SampleKey, outcome: Outcome, stage: Stage | None, message: str, torch: str = "") -> str:
    """The cause of a record with these fields: a known bug's name, a signature, or "" for a
    record that did not fail."""
    if outcome is not Outcome.FAILED:
        return ""
    bug = known_bug(key, stage, message, torch)
    return bug.name if bug is not None else signature(key, stage, message)


def of(record: SampleResult, env: Mapping[str, str] | None = None) -> str:
    """A record's cause: the one it carries, else computed (a file written before causes existed;
    ``env``: its environment, whose torch decides whether a fixed bug still applies)."""
    if record.cause or record.outcome is not Outcome.FAILED:
        return record.cause
    return cause(record.key, record.outcome, record.stage, record.message, (env or {}).get("torch", ""))


def by_name(name: str) -> KnownBug | None:
    """The known bug named ``name``, or None (a signature, or a name the catalog no longer has)."""
    return _BY_NAME.get(name)


# a name's first entry (a stride finding's twin for sequences, ``_known._and_in_sequences``, shares it)
_BY_NAME = {bug.name: bug for bug in reversed(KNOWN)}


def said(cause: str) -> str:
    """How output names a cause: ``known PyTorch bug: NAME (findings/NAME.py)`` for a known one,
    else the signature itself."""
    bug = by_name(cause)
    if bug is None:
        return cause
    fixed = f", fixed in {bug.fixed_in}" if bug.fixed_in else ""
    upstream = f", {bug.upstream}" if bug.upstream else ""
    return f"known PyTorch bug: {bug.name} ({bug.finding}{upstream}{fixed})"
