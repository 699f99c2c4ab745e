"""Every exception class optests defines, under one root: :class:`OptestsError`. Torch-free.

Three kinds of trouble, kept apart:

- a **finding** (:class:`Finding`, an ``AssertionError``): the check found compiled code that
  disagrees with eager. That is a result, not an error of optests: it stays outside the root (the
  contract), and it is listed here so that this module holds every exception class of optests;
- an **input error** (:class:`InputError`): what the user gave cannot be used, a bad option, a
  file that is missing, malformed or unwritable. The message is one line that names the option or
  the file and what is wrong; the ``optests`` command prints it and exits 2;
- anything else that optests raises derives from :class:`OptestsError`; an error outside the
  hierarchy is a bug in optests (the command exits 3 and saves the traceback).

Each step's class is named for it (``ResultsError`` reading results, ``RegistryError`` reading
the registry, ...), so that a caller can catch what one step raises; the modules that raise them
import them from here.
"""

from __future__ import annotations

from pathlib import Path

from ._errors import InputError, JSONError, OptestsError
from ._findings import (
    BackwardMismatch,
    EagerFailure,
    Finding,
    ForwardMismatch,
    MetadataMismatch,
    MutationMismatch,
    RandomizedMismatch,
    SequenceMismatch,
    TraceFailure,
    UserBaseException,
)

__all__ = [
    "OptestsError",
    "InputError",
    "JSONError",
    "Finding",
    "EagerFailure",
    "TraceFailure",
    "ForwardMismatch",
    "BackwardMismatch",
    "MetadataMismatch",
    "MutationMismatch",
    "RandomizedMismatch",
    "SequenceMismatch",
    "UserBaseException",
    "ReadError",
    "WriteError",
    "Busy",
    "ImportFailed",
    "SettingError",
    "SelectionError",
    "ReportError",
    "DatabaseError",
    "RegistryError",
    "ResultsError",
    "DurationsError",
    "HistoryError",
    "DashboardError",
    "AuthorError",
    "CommandError",
    "BackendUnavailable",
    "CacheDirError",
    "SourceError",
    "WorkFailed",
    "GraphBreak",
    "BackendCompilerFailed",
    "Unsupported",
    "DependsOnCpu",
    "DerivationError",
    "RegistryMissing",
    "StaleEntryWarning",
]


class _FileError(InputError, OSError):
    """A file optests will not use: the message names it and says why, in one line."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


class ReadError(_FileError):
    """An input file that optests will not read: not a regular file (a FIFO, a device, a socket,
    a directory), or larger than :data:`INPUT_LIMIT`; the message names it and says why, in one
    line."""


class WriteError(_FileError):
    """An output file that cannot be written; the message names it and says why, in one line."""


class Busy(WriteError):
    """Another optests held the file's lock for longer than the caller would wait."""


class ImportFailed(InputError):
    """A user's module raised at import: any exception, ``SystemExit`` (``sys.exit``), a
    ``KeyboardInterrupt`` its code raised, any other ``BaseException``. ``error`` is what it
    raised; the message (``importing NAME failed: TYPE: ...``) says so in one line. Fix the module,
    or name another."""

    def __init__(self, name: str, error: BaseException) -> None:
        self.name = name
        self.error = error
        super().__init__(f"importing {name} failed: {self.summary}")

    @property
    def summary(self) -> str:
        """``TYPE: first line`` of what the module raised (``SystemExit: sys.exit(0)``)."""
        e = self.error
        text = f"sys.exit({e.code!r})" if isinstance(e, SystemExit) else str(e)
        first = (text.strip().splitlines() or [""])[0]
        return f"{type(e).__name__}: {first}" if first else type(e).__name__


class SettingError(InputError):
    """A bad option or ini value; the message names the option, the value and what is valid."""


class ReportError(InputError):
    """``optests report`` cannot write its folder, or read its history: the message says which
    path and why."""


class SelectionError(InputError):
    """A selection that names no op, or a database that cannot be loaded; the message names the
    option (``--optests-ops: no op matches ...``)."""


class DatabaseError(InputError):
    """An OpInfo database that cannot be loaded; the message names it and says why."""


class RegistryError(InputError):
    """A malformed registry, or one that cannot be written: the message names the file, the entry
    or position, and what is wrong. Fix the entry by hand, or restore the file from version
    control and accept the results again (``optests accept``)."""


class ResultsError(InputError):
    """A results file that cannot be read or written, or results that do not go together (two
    torch versions, one sample with two outcomes); the message names the file and what is wrong.
    Rewrite the file with optests (``optests merge`` reads a killed run's journal), or leave it out."""


class DurationsError(InputError):
    """A durations file that cannot be read; the message names the file and what is wrong.
    Fix or delete the file: ``optests durations`` writes a new one from results files."""


class HistoryError(InputError):
    """A history database that cannot be used; the message names the file and what to do."""


class DashboardError(InputError):
    """The dashboard cannot be built (no runs yet) or written; the message names the path."""


class AuthorError(InputError):
    """Bad input from the author (an unknown op, samples that cannot be made): one line."""


class CommandError(InputError):
    """Options that do not go together, or that this machine cannot honour (``--device cuda``
    without a GPU); the message says which. Change the options and run again."""


class BackendUnavailable(InputError):
    """A backend that cannot run on this machine: compiling and calling a trivial function with it
    failed (inductor without a working C++ compiler, a Dynamo backend whose package is missing, a
    backend that raises whatever it compiles). Nothing was checked, and no registry changed; the
    message names the backend and the cause. Install what it needs, or leave it out of the run."""


class CacheDirError(InputError):
    """The compile caches' directory (``TORCHINDUCTOR_CACHE_DIR``, or torch's default) cannot be
    created or written: torch would fail with a traceback as it imports Dynamo. The message names
    the directory and what is wrong; point ``TORCHINDUCTOR_CACHE_DIR`` at a writable directory."""


class SourceError(OptestsError, ValueError):
    """A definition cannot be copied on its own: it uses a whole module of this package (which
    would have to be copied too), or two copied modules define one name differently."""


class WorkFailed(OptestsError, RuntimeError):
    """The work raised in the child (or ``prepare`` did): the message holds the child's
    traceback, ``summary`` the exception's first line (``RuntimeError: CUDA error: ...``)."""

    def __init__(self, traceback_text: str, summary: str) -> None:
        super().__init__(f"the sample runner failed:\n{traceback_text}")
        self.summary = summary


class GraphBreak(OptestsError, RuntimeError):
    """Dynamo could not trace the call as one graph (``fullgraph=True``)."""


class BackendCompilerFailed(OptestsError, RuntimeError):
    """The backend raised while compiling Dynamo's graph (torch's ``BackendCompilerFailed``):
    ``backend='NAME' raised TYPE: first line``, what it raised in the message's first line."""


class Unsupported(OptestsError, RuntimeError):
    """The compiled call raised an error PyTorch documents as "not supported" for every op
    (double backward through AOTAutograd): the derived sample is not applicable, not a finding."""


class DependsOnCpu(OptestsError, RuntimeError):
    """Eager's result under a call pattern depends on this machine's CPU (its oneDNN kernels,
    :func:`optests._check._same_on_every_cpu`): so does what compiled code must return, and the
    derived sample is not applicable, not a finding."""


class DerivationError(OptestsError, RuntimeError):
    """A transform or call pattern raised while deriving from a sample: a bug in it (in optests,
    or in a pattern of yours), not a fact about the op. A transform that cannot take a sample
    apart derives nothing from it, without raising. The message names the transform and the
    sample; the traceback is the transform's."""


class RegistryMissing(InputError):
    """A registry named (``--registry``, ``registry=``) where there is no file. Give the path of
    an existing registry (an accept writes one: ``optests accept``), or name none."""


class StaleEntryWarning(OptestsError, UserWarning):
    """An entry of the registry given to :func:`optests.op_test` matches none of the tests it
    makes, in the ops, modes, dtypes, devices, backends and transforms they cover: remove it (or
    correct it)."""
