"""optests: a conformance harness for PyTorch operators under AOTAutograd.

Importing ``optests`` does not import torch: the pytest plugin lives in this package and pytest
loads every installed plugin in every run. Names that need torch load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._errors import InputError, OptestsError
from ._findings import (
    BackwardMismatch,
    CheckResult,
    EagerFailure,
    Finding,
    ForwardMismatch,
    MetadataMismatch,
    MutationMismatch,
    Outcome,
    RandomizedMismatch,
    SequenceMismatch,
    Stage,
    TraceFailure,
    Verdict,
)
from ._key import Mode, SampleKey

if TYPE_CHECKING:
    from ._api import aot_autograd_check, run_check
    from ._author import AuthorError, SampleCheck, check_op, op_test
    from ._backends import Backend, register_backend
    from ._check import assert_raises_regex

__version__ = "0.2.0"

__all__ = [
    "AuthorError",
    "Backend",
    "BackwardMismatch",
    "CheckResult",
    "EagerFailure",
    "Finding",
    "ForwardMismatch",
    "InputError",
    "MetadataMismatch",
    "Mode",
    "MutationMismatch",
    "OptestsError",
    "Outcome",
    "RandomizedMismatch",
    "SampleCheck",
    "SampleKey",
    "SequenceMismatch",
    "Stage",
    "TraceFailure",
    "Verdict",
    "__version__",
    "aot_autograd_check",
    "assert_raises_regex",
    "check_op",
    "op_test",
    "register_backend",
    "run_check",
]

_LAZY = {
    "aot_autograd_check": "._api",
    "assert_raises_regex": "._check",
    "run_check": "._api",
    "AuthorError": "._author",
    "SampleCheck": "._author",
    "check_op": "._author",
    "op_test": "._author",
    "Backend": "._backends",
    "register_backend": "._backends",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'optests' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
