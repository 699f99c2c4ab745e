"""The call-pattern corpus (``tests/pattern_corpus.py``) as OpInfos, one per op, each with its
plain sample, its in-place variant and whether it has an out variant: for the sweep with
``--optests-transforms``. Use with ``--optests-dbs=pattern_ops:ops`` (this folder and ``tests/``
on PYTHONPATH)."""

from __future__ import annotations

import pattern_corpus as corpus
import torch
from corpus_opinfo import corpus_opinfo
from torch.testing._internal.opinfo.core import OpInfo


def _opinfo(name: str, case: corpus.Bug | corpus.Correct) -> OpInfo:
    grads = any(isinstance(a, torch.Tensor) and a.requires_grad for a in case.make()[0])
    return corpus_opinfo(name, case.func, case.make, grads=grads, supports_out=case.supports_out, inplace=case.inplace)


ops = [_opinfo(f"bug_{name}", b) for name, b in corpus.BUGS.items()] + [
    _opinfo(f"correct_{name}", c) for name, c in corpus.CORRECT.items()
]
