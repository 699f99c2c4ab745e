"""The errors optests raises, under one root. Torch-free.

Three kinds of trouble, kept apart:

- a **finding** (:class:`optests.Finding`, an ``AssertionError``): the check found compiled code
  that disagrees with eager. That is a result, not an error of optests, and it stays outside this
  hierarchy;
- an **input error** (:class:`InputError`): what the user gave cannot be used, a bad option, a
  file that is missing, malformed or unwritable. The message is one line that names the option or
  the file and what is wrong; the ``optests`` command prints it and exits 2;
- anything else that optests raises derives from :class:`OptestsError`; an error outside the
  hierarchy is a bug in optests (the command exits 3 and saves the traceback).

The root classes, imported by nearly every module. :mod:`optests.errors` holds every other
exception class (and re-exports these): import them from there.
"""

from __future__ import annotations


class OptestsError(Exception):
    """The root of every error optests raises on purpose (findings excepted: they are
    ``AssertionError``\\ s, see :class:`optests.Finding`).

    Catch it to handle whatever optests refuses; its message is one line, for a person."""


class InputError(OptestsError, ValueError):
    """What you gave optests cannot be used: an unknown option value, a file that is missing,
    unreadable, malformed or of a newer version, an output that cannot be written.

    The message names the option or the file, and what is wrong with it. Fix that input (or
    point optests at another) and run again: nothing was checked, and no file was changed.
    The ``optests`` command prints the message as one line and exits 2."""


class JSONError(InputError):
    """A JSON text that optests will not read: not JSON, or JSON that holds what optests never
    writes (NaN or Infinity, a number out of a double's range, an integer too long to convert,
    nesting too deep to read, a lone surrogate, a key given twice in one object).

    Readers put the file's name in front (``r.json:3:7: not valid JSON: ...``). Rewrite the file
    with optests, or fix it by hand where it says."""

    def __init__(self, reason: str, lineno: int | None = None, colno: int | None = None) -> None:
        super().__init__(reason)
        #: What is wrong, without the position.
        self.reason = reason
        #: Where, for a text that is not JSON at all (1-based); None for a rule of optests.
        self.lineno = lineno
        self.colno = colno

    def __str__(self) -> str:
        if self.lineno is not None:
            return f"{self.lineno}:{self.colno}: not valid JSON: {self.reason}"
        return self.reason

    def at(self, path: object) -> str:
        """The one-line message for the file at ``path``: ``r.json:3:7: not valid JSON: ...``
        or ``r.json: duplicate JSON key 'samples'``."""
        return f"{path}:{self}" if self.lineno is not None else f"{path}: {self}"
