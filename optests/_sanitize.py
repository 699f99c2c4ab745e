"""The one place where text optests did not make itself (from results files, the registry, ids
files, the history database, an op's name) is made safe for where it goes: a terminal
(:func:`printable`), an HTML page (:func:`html`, and :func:`script_json` for data inlined in
it) or a shell command a message suggests (:func:`shell_word`, :func:`shell_join`). Every printer, page writer and suggested command
goes through these. Torch-free."""

from __future__ import annotations

import html as _html
import json
import re
import shlex
from collections.abc import Iterable
from typing import Any

#: Characters that drive a terminal (C0 and C1 controls, DEL) or reorder what it shows
#: (bidirectional overrides and isolates, line and paragraph separators): a message from a
#: results file could clear the screen or set the window's title with them.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: object) -> str:
    """``text`` with control characters shown as escapes (``\\x1b``, ``\\x07``, ``\\u202e``): for
    text from a file or the history printed to a terminal or into markdown."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", str(text))


def html(value: object) -> str:
    """``value`` as text in an HTML page, in an element or a quoted attribute: ``&``, ``<``,
    ``>`` and both quotes escaped, whatever its type (a history database can hold text where a
    number belongs)."""
    return _html.escape(str(value), quote=True)


def script_json(data: Any) -> str:
    """``data`` as compact JSON (sorted keys) to inline in a ``<script type="application/json">``
    element: every ``<`` written ``\\u003c``, so that no string in it can close the element."""
    return json.dumps(data, separators=(",", ":"), sort_keys=True).replace("<", "\\u003c")


def shell_word(text: str) -> str:
    """``text`` as one word of a POSIX shell command, always in single quotes (``'a'\\''b'`` for
    ``a'b``): what ``--optests-ops='NAME'`` shows, whatever the name holds."""
    return "'" + text.replace("'", "'\\''") + "'"


def shell_join(words: Iterable[str]) -> str:
    """A suggested command from its words, each quoted where the shell would read it otherwise
    (:func:`shlex.join`)."""
    return shlex.join(words)
