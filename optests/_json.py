"""The one JSON reader of optests: results files, journals, the registry and durations files all
read through :func:`loads`. Torch-free.

Python's ``json`` reads more than optests writes, and some of it breaks later, far from the
file: ``1e400`` reads as infinity, ``"\\ud800"`` as a string that cannot be written back as
UTF-8, a second ``"samples"`` key silently replaces the first. :func:`loads` refuses all of it on
reading, with a :class:`~optests._errors.JSONError` whose message says what (callers add the
file's name).
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

from ._errors import JSONError

_NON_FINITE = "is not valid JSON (optests never writes NaN or Infinity)"
#: A ``\\uD800``-``\\uDFFF`` escape, or such a code point itself: a surrogate may be in the text.
_MAYBE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _constant(name: str) -> Any:
    raise JSONError(f"{name} {_NON_FINITE}")


def _shown(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:20]}... ({len(text):,} characters)"


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400: Python reads infinity
        raise JSONError(
            f"the number {_shown(text)} is out of range and would read as infinity (optests never writes NaN or Infinity)"
        )
    return value


#: Integers of more digits than a double's largest (1.8e308) are refused unconverted: Python's
#: ``int()`` takes time quadratic in the digits and refuses more than 4,300 of them, and a reader
#: that takes the number as seconds (``math.isfinite``) cannot convert it.
_INT_DIGITS = len(str(int(sys.float_info.max)))


def _int(text: str) -> int:
    if len(text.lstrip("-")) > _INT_DIGITS or abs(value := int(text)) > sys.float_info.max:
        raise JSONError(f"the integer {_shown(text)} is out of range (optests reads numbers up to about 1.8e308)")
    return value


def duplicate_key(key: str) -> JSONError:
    """The error for ``key`` given twice in one object (also raised by readers that take an
    object's members one at a time)."""
    return JSONError(f"duplicate JSON key {key!r}")


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise duplicate_key(key)
            seen.add(key)
    return d


def _refuse_surrogates(data: Any) -> None:
    """Walk ``data`` (without recursion: its depth is the file's) for a string holding a lone
    surrogate, which no UTF-8 file can hold and no writer can write back."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            m = _SURROGATE.search(item)
            if m is not None:
                raise JSONError(
                    f"the string {item[:40]!r} holds a lone surrogate ({m[0].encode('unicode_escape').decode()}), "
                    "which is not a character"
                )
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


#: The strict decoder: NaN, Infinity, numbers out of a double's range and duplicate keys raise
#: :class:`~optests._errors.JSONError` as they are decoded. A reader that decodes a text a value
#: at a time (``DECODER.raw_decode``) also turns ``RecursionError`` into a ``JSONError`` and calls
#: :func:`check_strings`, as :func:`loads` does.
DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_float, parse_int=_int, object_pairs_hook=_object)


def check_strings(value: Any, text: str | None = None) -> None:
    """Raise :class:`~optests._errors.JSONError` for a lone surrogate in a string of ``value``
    (decoded by :data:`DECODER`); ``text``, the JSON it was decoded from, lets a value whose
    text spells no surrogate go unwalked."""
    if text is None or _MAYBE_SURROGATE.search(text) is not None:
        _refuse_surrogates(value)


def loads(text: str) -> Any:
    """``text`` as JSON, read strictly: a :class:`~optests._errors.JSONError` for text that is
    not JSON (with its line and column), for NaN, Infinity and numbers out of a double's range,
    for integers past a double's range (and so those longer than Python converts, 4,300 digits
    by default), for nesting too deep to read, for lone surrogates in strings, and for a key given
    twice in one object."""
    try:
        data = DECODER.decode(text)
    except json.JSONDecodeError as e:
        raise JSONError(e.msg, e.lineno, e.colno) from None
    except JSONError:
        raise
    except RecursionError:
        raise JSONError("arrays or objects nested too deeply to read") from None
    check_strings(data, text)
    return data
