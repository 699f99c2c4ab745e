"""The sweep's test module and its conftest, installed into a pytester directory."""

from __future__ import annotations

import shutil
from pathlib import Path

SWEEP = Path(__file__).resolve().parents[1] / "opinfo_sweeps"


def install_sweep(where: Path) -> None:
    """Copy the sweep (its test module, and the conftest that asks the dormant plugin for it)."""
    for name in ("test_aot_autograd.py", "conftest.py"):
        shutil.copy(SWEEP / name, where / name)
