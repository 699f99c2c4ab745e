"""`torch.compile` of a function that calls `InvokeQuant()(fn, x, x)` (the `invoke_quant` higher-order
op) on an input that requires grad fails: "AOT Autograd failed to partition the joint
forward-backward graph". `aot_function` of the same function, and `torch.compile` of it without
grad, run and equal eager. Torch 2.15 compiles it, equal to eager.

Found by optests' `sequence` patterns (which call the op through `torch.compile(fullgraph=True)`):
hop_db's `invoke_quant`, under `aot_eager` and `aot_eager_decomp_partition`.
Run: python findings/invoke_quant_backward_partition.py
"""

import torch
import torch._dynamo
from functorch.compile import aot_function, nop
from torch._higher_order_ops import InvokeQuant

quant = InvokeQuant()


def f(x):
    return quant(lambda a, b: (torch.sin(a) * b,), x, x)[0] * 2.0


print("torch", torch.__version__)
torch.manual_seed(0)
for requires_grad in (False, True):
    x = torch.randn(2, 2, requires_grad=requires_grad)
    expected = f(x)
    compilers = {
        "aot_function(f, nop)": aot_function(f, nop),
        "torch.compile(f, backend='aot_eager')": torch.compile(f, backend="aot_eager", fullgraph=True),
    }
    for name, compiled in compilers.items():
        torch._dynamo.reset()
        try:
            result = f"equals eager: {torch.allclose(compiled(x), expected)}"
        except Exception as e:
            said = str(e).splitlines()
            result = f"raises {type(e).__name__}: {next((s for s in said if 'AOT Autograd' in s), said[0])}"
        print(f"requires_grad={requires_grad!s:5} {name:40} {result}")
