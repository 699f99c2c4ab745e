"""The check's options, declared once, and one run of the check under them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch

from .._backends import DEFAULT_BACKEND
from .._patterns import DEFAULT_PATTERN, CallPattern
from ._intree import assert_raises_regex

__all__ = ["CheckOptions"]

#: A field of :class:`CheckOptions` that a finding's few-line repro does not write out.
_UNRENDERED = {"rendered": False}


#: A field that is not a keyword of :func:`aot_autograd_check` (the ``aot_eager`` check, a
#: contract): where it differs from its default, the repro calls :func:`run_check` with it.
_NOT_KEYWORD = {"rendered": False, "keyword": False}


@dataclass(frozen=True)
class CheckOptions:
    """The check's options, declared once. :func:`aot_autograd_check`'s keywords are these (its
    signature is a contract, written out, and a test holds it to this declaration);
    :func:`run_check` takes them as keywords; a finding keeps them (:attr:`Finding.options`);
    repro scripts write them from here. A new option is a field here (and a keyword there)."""

    #: Trace with symbolic shapes.
    dynamic: bool
    #: Checks that the compiled call raises as eager does (the in-tree helper's contract).
    assert_raises_regex_fn: Callable[..., Any] = dataclasses.field(default=assert_raises_regex, metadata=_UNRENDERED)
    #: Compares eager and compiled values.
    assert_equals_fn: Callable[..., Any] = dataclasses.field(default=torch.testing.assert_close, metadata=_UNRENDERED)
    #: ``True``, ``False`` or ``"auto"`` (only where some input and some output require grad).
    check_gradients: bool | Literal["auto"] = True
    #: Check again on randomized data, through the same compiled function.
    try_check_data_specialization: bool = False
    #: Run everything, compare nothing.
    skip_correctness_check: bool = False
    #: Compile without functionalization (with the default partitioner).
    disable_functionalization: bool = False
    #: Compare output metadata, eager vs compiled and traced vs real.
    check_metadata: bool = True
    #: Compare each output's ``is_leaf``, whether its ``grad_fn`` is None, and which other
    #: outputs it shares a storage with (is a view of), eager vs compiled.
    check_autograd_metadata: bool = True
    #: Run each call on its own copies of the inputs and compare their mutations.
    check_mutations: bool = True
    #: The randomized rerun also runs for forward-only checks.
    randomize_without_gradients: bool = True
    #: A difference within float32 rounding of the float64 result is noted, not a finding.
    float64_reference: bool = True
    #: The same call drawn with other data: the randomized rerun takes its floating values.
    randomized_sample: tuple[Sequence[Any], Mapping[str, Any]] | None = dataclasses.field(default=None, metadata=_UNRENDERED)
    #: What messages end with (default: the function's name and the mode).
    context: str | None = dataclasses.field(default=None, metadata=_UNRENDERED)
    #: Code that defines ``func``, ``args`` and ``kwargs`` for the repro (default: from the values).
    repro: str | None = dataclasses.field(default=None, metadata=_UNRENDERED)
    #: The compile step, by name (``optests._backends``). Not a keyword of
    #: :func:`aot_autograd_check`, which is the ``aot_eager`` check (a contract).
    backend: str = dataclasses.field(default=DEFAULT_BACKEND, metadata=_NOT_KEYWORD)
    #: Compare output strides (``False``: an op whose strides the backend chooses freely,
    #: ``Backend.free_strides``). Not a keyword of :func:`aot_autograd_check` (``aot_eager``
    #: keeps every stride).
    compare_strides: bool = dataclasses.field(default=True, metadata=_NOT_KEYWORD)
    #: How eager and compiled are called and their outputs used, by name (``optests._patterns``).
    #: Not a keyword of :func:`aot_autograd_check`, whose pattern is the in-tree check's (a contract).
    pattern: str = dataclasses.field(default=DEFAULT_PATTERN, metadata=_NOT_KEYWORD)

    def rendered(self) -> dict[str, object]:
        """``dynamic`` and the options a finding's few-line repro writes out: those that differ
        from their defaults."""
        return {"dynamic": self.dynamic} | {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.metadata.get("rendered", True) and getattr(self, f.name) != f.default
        }

    def beyond_keywords(self) -> dict[str, object]:
        """The options that are not keywords of :func:`aot_autograd_check` and differ from their
        defaults (another backend, call pattern...): a repro that has any calls :func:`run_check`."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if not f.metadata.get("keyword", True) and getattr(self, f.name) != f.default
        }


@dataclass(frozen=True)
class _Checking:
    """One run of the check: its options, the label its messages end with, the call pattern
    that calls eager and compiled alike, and what it notes on its way (differences put down to
    rounding), filled as it runs."""

    options: CheckOptions
    context: str
    pattern: CallPattern
    notes: list[str] = dataclasses.field(default_factory=list)
