"""One OpInfo made from a corpus entry (``tests/transform_corpus.py``, ``tests/pattern_corpus.py``):
its one plain sample, made by the entry's ``make``, float32 only."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.testing._internal.common_dtype import _dispatch_dtypes
from torch.testing._internal.opinfo.core import OpInfo, SampleInput

#: A corpus entry's sample: ``() -> (args, kwargs)``.
Make = Callable[[], tuple[list[Any], dict[str, Any]]]


def corpus_opinfo(
    name: str, func: Callable[..., Any], make: Make, *, grads: bool, supports_out: bool = False, inplace: Any = None
) -> OpInfo:
    """``func`` as the OpInfo ``name``, with ``make``'s sample; a custom op as its OpOverload
    (OpInfo copies its op, which a ``custom_op`` definition cannot be)."""
    qualname = getattr(func, "_qualname", None)
    if isinstance(qualname, str):
        ns, _, op_name = qualname.partition("::")
        func = getattr(getattr(torch.ops, ns), op_name).default

    def samples(op: Any, device: str, dtype: torch.dtype, requires_grad: bool, **kwargs: Any) -> Iterator[SampleInput]:
        args, kw = make()
        yield SampleInput(args[0], args=tuple(args[1:]), kwargs=kw)

    return OpInfo(
        name,
        op=func,
        dtypes=_dispatch_dtypes((torch.float32,)),
        sample_inputs_func=samples,
        supports_autograd=grads,
        supports_out=supports_out,
        inplace_variant=inplace,
    )
