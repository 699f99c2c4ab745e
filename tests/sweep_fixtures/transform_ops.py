"""The transform corpus (``tests/transform_corpus.py``) as OpInfos, one per op, each with its
plain sample: for the sweep with ``--optests-transforms``. Use with
``--optests-dbs=transform_ops:ops`` (this folder and ``tests/`` on PYTHONPATH)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import transform_corpus as corpus
from corpus_opinfo import corpus_opinfo
from torch.testing._internal.opinfo.core import OpInfo


def _opinfo(name: str, func: Callable[..., Any], make: corpus.Make, check: dict[str, Any]) -> OpInfo:
    grads = check.get("check_gradients", True) is not False and any(
        isinstance(a, torch.Tensor) and a.requires_grad for a in make()[0]
    )
    return corpus_opinfo(name, func, make, grads=grads)


ops = [_opinfo(f"bug_{name}", b.func, b.make, b.check) for name, b in corpus.BUGS.items()] + [
    _opinfo(f"correct_{name}", c.func, c.make, c.check) for name, c in corpus.CORRECT.items()
]
