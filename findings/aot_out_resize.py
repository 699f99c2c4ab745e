"""AOTAutograd: an ``out=`` tensor that the op must resize is traced at its old shape.

``torch.sin(x, out=torch.zeros(0))`` resizes ``out`` to ``x``'s shape in eager. Compiled by
AOTAutograd (no-op compilers), the traced output keeps the empty shape and the compiled call
raises. Found by optests' ``out`` call pattern (``out-1``: an empty ``out=`` to be resized); every
op with an out variant we tried does the same."""

import torch
from functorch.compile import aot_function, nop


def f(x, out):
    return torch.sin(x, out=out)


x = torch.randn(3, 4)
expected = torch.sin(x, out=torch.zeros(0))
print("torch", torch.__version__)
print("eager: out.shape", tuple(expected.shape))
compiled = aot_function(f, nop, nop, keep_inference_input_mutations=True)
out = torch.zeros(0)
try:
    r = compiled(x, out)
    print("compiled: out.shape", tuple(r.shape), "equal:", torch.equal(r, expected))
except Exception as e:
    print("compiled raised", type(e).__name__ + ":", str(e).splitlines()[0])
