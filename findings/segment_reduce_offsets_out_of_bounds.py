"""Eager ``torch.segment_reduce(data, reduce, offsets=...)`` on the CPU does not check its offsets
against the data: an offset past the end reads memory beyond the tensor (the segment's value
depends on what lies there: NaN, garbage) and one far past it crashes the process with a
segmentation fault, where an out-of-range index should raise. The compiled call runs the same
kernel (``aot_eager``) and reads other memory, so the two disagree.

Found by optests' ``special`` transform: ``_segment_reduce.offsets`` with the dtype's extremes in
``offsets`` (``special-5``: the process died with SIGSEGV, under ``aot_eager`` and
``aot_eager_decomp_partition``) and with an index out of range as the last offset (``special-6``:
another value compiled than in eager). The last case below crashes the interpreter."""

import torch

print("torch", torch.__version__, flush=True)
data = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
for offsets in ([0, 2, 5], [0, 2, 6], [0, 2, 1000], [0, 2, 2**40]):
    out = torch.segment_reduce(data, "sum", offsets=torch.tensor(offsets))
    print(f"offsets {offsets}: {out.tolist()}", flush=True)
