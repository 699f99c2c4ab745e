"""`torch.constant_pad_nd` (what `F.pad` with mode "constant" calls) of an input stored transposed,
with a pad amount that depends on a size, traced with dynamic shapes: the fake kernel predicts a
contiguous output, where eager keeps the input's memory order, and so does the prediction with
static shapes. `torch.compile(backend="inductor", dynamic=True)` then returns strides (42, 7, 1)
where eager returns (42, 1, 6), with equal values; with static shapes it returns eager's.

Found by optests' `func-2` pattern (a compiled function whose body applies `torch.func.grad`) in
dynamic mode: the backward of `fft.fft`, `fft.ifft`, `fft.rfft` and `fft.ihfft` with `n` larger than
the input narrows the gradient back with `constant_pad_nd` by `input.size(dim) - n`; the traced
gradient's strides were (42, 7, 1), eager's (42, 1, 6).
Run: python findings/constant_pad_nd_symbolic_pad_strides.py
"""

import torch
import torch._dynamo
from torch.fx.experimental.proxy_tensor import make_fx


def f(x, like):
    return torch.constant_pad_nd(x, [0, 0, 0, like.size(1) - x.size(1)])  # dim 1: 10 -> 6


def predicted(mode):
    graph = make_fx(f, tracing_mode=mode)(x, like)
    out = next(n for n in graph.graph.nodes if n.op == "output").args[0]
    return (out[0] if isinstance(out, (list, tuple)) else out).meta["val"].stride()


torch.manual_seed(0)
x = torch.randn(5, 7, 10).transpose(1, 2)  # (5, 10, 7), stored with dims 1 and 2 swapped
like = torch.randn(5, 6, 7)
print("torch", torch.__version__)
print(f"eager                                strides {f(x, like).stride()}")
print(f"predicted, static shapes (fake)      strides {predicted('fake')}")
print(f"predicted, dynamic shapes (symbolic) strides {predicted('symbolic')}")
for dynamic in (False, True):
    torch._dynamo.reset()
    out = torch.compile(f, backend="inductor", dynamic=dynamic, fullgraph=True)(x, like)
    print(f"inductor, dynamic={dynamic!s:5}             strides {out.stride()}, values equal: {torch.equal(out, f(x, like))}")
