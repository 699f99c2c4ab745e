"""The call-pattern corpus (``tests/pattern_corpus.py``) as OpInfos, one per op, each with its
plain sample, its in-place variant and whether it has an out variant: for the sweep with
``--optests-transforms``. Use with ``--optests-dbs=pattern_ops:ops`` (this folder and ``tests/``
on PYTHONPATH)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pattern_corpus as corpus
import torch
from torch.testing._internal.common_dtype import _dispatch_dtypes
from torch.testing._internal.opinfo.core import OpInfo, SampleInput


def _samples_of(make: corpus.Make) -> Callable[..., Iterator[SampleInput]]:
    def samples(op: Any, device: str, dtype: torch.dtype, requires_grad: bool, **kwargs: Any) -> Iterator[SampleInput]:
        args, kw = make()
        yield SampleInput(args[0], args=tuple(args[1:]), kwargs=kw)

    return samples


def _opinfo(name: str, case: corpus.Bug | corpus.Correct) -> OpInfo:
    grads = any(isinstance(a, torch.Tensor) and a.requires_grad for a in case.make()[0])
    func = case.func
    qualname = getattr(func, "_qualname", None)  # a custom op: OpInfo copies its op, which the def cannot be
    if isinstance(qualname, str):
        ns, _, op_name = qualname.partition("::")
        func = getattr(getattr(torch.ops, ns), op_name).default
    return OpInfo(
        name,
        op=func,
        dtypes=_dispatch_dtypes((torch.float32,)),
        sample_inputs_func=_samples_of(case.make),
        supports_autograd=grads,
        supports_out=case.supports_out,
        inplace_variant=case.inplace,  # type: ignore[arg-type]
    )


ops = [_opinfo(f"bug_{name}", b) for name, b in corpus.BUGS.items()] + [
    _opinfo(f"correct_{name}", c) for name, c in corpus.CORRECT.items()
]
