"""`torch.conv2d(x, w, b, stride=2, padding=2)` compiled by inductor with symbolic sizes: called on
a 1x3x4x4 input with a 3x3x3x3 weight, then on 1x4x5x5 with 4x4x4x4 (the sizes automatically
dynamic), or with `dynamic=True` on the second alone, the backward fails to compile in inductor's
lowering of `convolution_backward` ("LoweringException: ValueRangeError: Invalid ranges [0:-1]",
from a stride-order check on a symbolic stride). Static sizes, and `aot_eager`, give eager's output
and gradients. torch 2.15 compiles it.

Found by optests' `sequence-0` pattern (other sizes, on one compiled function) under `inductor`:
`nn.functional.conv2d`, its first sample (stride 2, padding 2), then every size one larger.
Run: python findings/inductor_conv2d_dynamic_backward_invalid_ranges.py
"""

import logging

import torch
import torch._dynamo

# inductor compiles the backward eagerly for dynamic sizes and logs the same error as a warning
logging.getLogger("torch").setLevel(logging.ERROR)

print("torch", torch.__version__)


def f(x, w, b):
    return torch.conv2d(x, w, b, stride=(2, 2), padding=2)


def call(compiled, n):
    """Input 1 x n x (n+1) x (n+1), weight n x n x n x n: output and gradients against eager's."""
    torch.manual_seed(n)
    inputs = [torch.randn(1, n, n + 1, n + 1), torch.randn(n, n, n, n), torch.randn(n)]
    mine, theirs = [t.clone().requires_grad_() for t in inputs], [t.clone().requires_grad_() for t in inputs]
    expected = f(*theirs)
    expected_grads = torch.autograd.grad(expected.sum(), theirs)
    try:
        out = compiled(*mine)
        grads = torch.autograd.grad(out.sum(), mine)
    except Exception as e:
        return f"raises {type(e).__name__}: {str(e).splitlines()[0]}"
    same = torch.allclose(out, expected, atol=1e-4) and all(torch.allclose(g, e, atol=1e-4) for g, e in zip(grads, expected_grads))
    return f"output and gradients as eager: {same}"


for backend, dynamic, sizes in (("aot_eager", None, (3, 4)), ("inductor", None, (3, 4)), ("inductor", True, (4,))):
    torch._dynamo.reset()
    compiled = torch.compile(f, backend=backend, fullgraph=True, dynamic=dynamic)
    for n in sizes:  # one compiled function; dynamic=None: static first, automatically dynamic after a change
        print(f"{backend:9} dynamic={dynamic!s:5} weight {n}x{n}x{n}x{n}: {call(compiled, n)}")
