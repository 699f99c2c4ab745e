"""pytest-split's durations file: how long each sweep test took, to split a sweep into groups of
equal time and to run long ops first. Torch-free."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

from ._errors import JSONError
from ._files import read_input, write_json_atomic
from ._json import loads
from ._results import SampleResult, describe_os_error
from .errors import DurationsError as DurationsError

#: The sweep test's node id (relative to the repository root), as durations files key it.
SWEEP_TEST = "opinfo_sweeps/test_aot_autograd.py::test_aot_autograd"
#: pytest-split's default durations file, in the current directory.
DEFAULT_PATH = ".test_durations"


def load(path: Path) -> dict[str, float]:
    """The durations file at ``path`` (test node id -> seconds); empty if there is none."""
    try:
        data = loads(read_input(path).decode("utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as e:
        raise DurationsError(f"{path}: {describe_os_error(path, e)}") from None
    except JSONError as e:  # not JSON (where, as json words it), or JSON that optests never writes
        where = f": line {e.lineno} column {e.colno}" if e.lineno is not None else ""
        raise DurationsError(f"{path}: not a durations file ({e.reason}{where})") from None
    if not isinstance(data, dict):
        raise DurationsError(f"{path}: not a durations file (expected an object of test id -> seconds)")
    for key, value in data.items():
        if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
            raise DurationsError(f"{path}: not a durations file ({key!r}: {value!r} is not a number of seconds >= 0)")
    return data


def dump(path: Path, durations: dict[str, float]) -> None:
    """Write the durations file atomically; a :class:`DurationsError` naming it if it cannot be."""
    try:
        write_json_atomic(path, durations)
    except OSError as e:
        raise DurationsError(f"{path}: {describe_os_error(path, e, writing=True)}") from None


def of(records: Iterable[SampleResult]) -> dict[str, float]:
    """The sweep tests' durations as pytest-split records them, from results records (a
    duration that is not a finite number, which no check measures, is left out)."""
    return {
        f"{SWEEP_TEST}[{r.id}]": round(r.duration, 3)
        for r in records
        if r.sample is not None and math.isfinite(r.duration) and r.duration >= 0
    }
