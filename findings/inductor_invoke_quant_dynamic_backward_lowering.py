"""`torch.compile(backend="inductor")` of a function that calls the `invoke_quant` higher-order op
(`InvokeQuant()(fn, x, x)`) on an input that requires grad, with symbolic sizes (`dynamic=True`,
or the automatically dynamic recompile after the sizes change): the forward runs and equals
eager, but compiling the backward fails in inductor's lowering ("LoweringException:
AttributeError: 'tuple' object has no attribute 'realize'"). With static sizes, inductor compiles
both and equals eager; without grad, the dynamic forward does too.

Found by optests' `sequence` patterns under `inductor`: hop_db's `invoke_quant` and
`invoke_quant_packed`, on the call after the first whose sizes or strides changed, or whose dims
were marked dynamic or unbacked (`sequence-0`, `-1`, `-7`, `-8`).
Run: python findings/inductor_invoke_quant_dynamic_backward_lowering.py
"""

import logging

import torch
import torch._dynamo
from torch._higher_order_ops import InvokeQuant

# torch 2.15 compiles the backward eagerly for dynamic sizes and logs the same error as a warning
logging.getLogger("torch._functorch._aot_autograd.graph_compile").setLevel(logging.ERROR)

quant = InvokeQuant()


def f(x):
    return quant(lambda a, b: (torch.sin(a) * b,), x, x)[0] * 2.0


def attempt(compiled, n, requires_grad):
    x = torch.randn(n, n, requires_grad=requires_grad)
    try:
        out = compiled(x)
    except Exception as e:
        return f"forward raises {type(e).__name__}: {str(e).splitlines()[0]}"
    said = f"forward equals eager: {torch.allclose(out, f(x))}"
    if not requires_grad:
        return said
    try:
        grad = torch.autograd.grad(out.sum(), x)[0]
    except Exception as e:
        return f"{said}; backward raises {type(e).__name__}: {str(e).splitlines()[0]}"
    xe = x.detach().requires_grad_()
    return f"{said}; gradient equals eager: {torch.allclose(grad, torch.autograd.grad(f(xe).sum(), xe)[0])}"


print("torch", torch.__version__)
torch.manual_seed(0)
for requires_grad in (False, True):
    for dynamic in (False, True, None):
        torch._dynamo.reset()
        compiled = torch.compile(f, backend="inductor", fullgraph=True, dynamic=dynamic)
        for n in (2, 3):  # dynamic=None: static first, automatically dynamic on the second call
            print(f"requires_grad={requires_grad!s:5} dynamic={dynamic!s:5} size {n}x{n}: {attempt(compiled, n, requires_grad)}")
