"""Call patterns: how the check calls the function it checks (eager or compiled) and uses its
outputs, one module per pattern. Eager and the compiled call go through the same pattern object,
so whatever a pattern does to one it does to the other.

A pattern is chosen per check by :attr:`optests._check.CheckOptions.pattern`, a name:
:data:`DEFAULT_PATTERN` (the check of ``SPEC.md`` section 1), one :func:`register` added, or the
suffix of a sample a pattern derived (``tangents-1``): the patterns users name
(``--optests-transforms``) derive samples as input transforms do, and each derived sample is
checked with the pattern its suffix names. They are declared with the transforms, once, in
:data:`optests._key.DERIVATIONS`; each module's ``Transform`` row says which pattern checks
each sample it derives (``Transform.pattern``).
"""

from __future__ import annotations

import re

from .base import Called, CallPattern, DependsOnCpu, Observed, Unsupported
from .single import Single

__all__ = [
    "DEFAULT_PATTERN",
    "PATTERNS",
    "CallPattern",
    "Called",
    "DependsOnCpu",
    "Observed",
    "Unsupported",
    "get_pattern",
    "recipe",
    "register",
]


#: The pattern of a check that names none.
DEFAULT_PATTERN = "single"

#: Patterns by name, beside those the derived samples' suffixes name. :func:`register` adds one.
PATTERNS: dict[str, CallPattern] = {}

#: What a pattern's name may be: lower-case words joined by ``-`` (as users type ``grad-mode``).
PATTERN_NAME = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")


def register(name: str, pattern: CallPattern) -> None:
    """Make ``pattern`` known as ``name`` (in every process that checks)."""
    if not PATTERN_NAME.match(name):
        raise ValueError(f"call pattern name {name!r}: expected lower-case letters and digits, words joined by '-'")
    PATTERNS[name] = pattern


def recipe(name: str) -> tuple[str, str, int] | None:
    """How a repro script makes the pattern ``name`` names, where a derived sample's suffix names
    it: ``(module, class, index)``, the class called with the index; None for any other name."""
    if name == DEFAULT_PATTERN or name in PATTERNS:
        return None
    cls = type(get_pattern(name))
    index = name.rpartition("-")[2]
    return cls.__module__, cls.__name__, int(index) if index.isascii() and index.isdigit() else 0


def get_pattern(name: str) -> CallPattern:
    """The pattern ``name`` names: :data:`DEFAULT_PATTERN`, one registered, or a derived sample's
    suffix (``tangents-1``: the pattern of sample 1 that ``tangents`` derives). A ``ValueError``
    naming the known ones."""
    if name == DEFAULT_PATTERN:
        return Single()
    pattern = PATTERNS.get(name)
    if pattern is not None:
        return pattern
    # imported here, not at the top: a standalone repro script copies this function (and what
    # its module binds at the top) without the transforms; it registers its pattern by name, so
    # it never comes this far
    from .._key import DERIVATIONS, transform_name

    index = name.rpartition("-")[2]
    family = transform_name(name)
    if family in DERIVATIONS:
        from .._transforms import transform_of

        row = transform_of(family)
        number = int(index) if family != name else 0
        if row.pattern is not None and number < row.count and not (row.unindexed and family != name):
            return row.pattern(number)
    from .._transforms import transform_of

    known = [DEFAULT_PATTERN, *PATTERNS, *(f"{n}-N" for n in DERIVATIONS if transform_of(n).pattern is not None)]
    raise ValueError(f"unknown call pattern {name!r}; known: {', '.join(known)}")
