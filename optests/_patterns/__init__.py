"""Call patterns: how the check calls the function it checks (eager or compiled) and uses its
outputs, one module per pattern, looked up by name in :data:`PATTERNS`. Eager and the compiled
call go through the same pattern object, so whatever a pattern does to one it does to the other.

A pattern is chosen by :attr:`optests._check.CheckOptions.pattern`; :data:`DEFAULT_PATTERN` is
the check of ``SPEC.md`` section 1.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

import torch

from .single import Single

__all__ = ["DEFAULT_PATTERN", "PATTERNS", "CallPattern", "get_pattern", "register"]


class CallPattern(Protocol):
    """How a function of the call's tensors is called and its outputs turned into what is
    compared. The check (:func:`optests._check._check_once`) calls :meth:`call`, then, where it
    checks gradients, :meth:`gradients` on what :meth:`call` returned: for eager, for the
    compiled function, and for the float64 reference, each on its own fresh inputs. Two methods,
    not one: a forward that raises and a backward that raises are different findings, and
    whether gradients are checked (``check_gradients="auto"``) depends on eager's outputs."""

    def call(self, fn: Callable[[list[torch.Tensor]], Any], inputs: list[torch.Tensor]) -> Any:
        """The outputs compared (and passed to :meth:`gradients`): ``fn`` called on ``inputs``.
        ``fn`` is eager or compiled and takes the list of the call's tensors. The check runs this
        under a fixed RNG seed, the same for eager and compiled."""
        ...

    def gradients(self, out: Any, inputs: list[torch.Tensor]) -> tuple[torch.Tensor | None, ...]:
        """The gradients compared, one per input that requires grad (``None``: unused), from
        ``out`` (what :meth:`call` returned) w.r.t. ``inputs``. An error is a finding (a
        ``backward`` one for the compiled call; eager's makes the sample not applicable)."""
        ...


#: The pattern of a check that names none.
DEFAULT_PATTERN = "single"

#: Patterns by name. :func:`register` adds one.
PATTERNS: dict[str, CallPattern] = {DEFAULT_PATTERN: Single()}

#: What a pattern's name may be: lower-case words joined by ``-`` (as users type ``grad-mode``).
PATTERN_NAME = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")


def register(name: str, pattern: CallPattern) -> None:
    """Make ``pattern`` known as ``name`` (in every process that checks)."""
    if not PATTERN_NAME.match(name):
        raise ValueError(f"call pattern name {name!r}: expected lower-case letters and digits, words joined by '-'")
    PATTERNS[name] = pattern


def get_pattern(name: str) -> CallPattern:
    """The pattern registered as ``name``; a ``ValueError`` naming the known ones."""
    pattern = PATTERNS.get(name)
    if pattern is None:
        raise ValueError(f"unknown call pattern {name!r}; known: {', '.join(PATTERNS)}")
    return pattern
