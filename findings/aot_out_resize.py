"""AOTAutograd: an ``out=`` tensor that the op must resize is traced at its old shape.

``torch.sin(x, out=torch.zeros(0))`` resizes ``out`` to ``x``'s shape in eager. Compiled by
AOTAutograd (no-op compilers), the traced output keeps the empty shape and the compiled call
raises. Found by optests' ``out`` call pattern (``out-1``: an empty ``out=`` to be resized); every
op with an out variant we tried does the same. How the call fails depends on the op and the
shapes: ``sin`` in ``expand``; ``quantile`` with static shapes in ``setStorage`` (out of bounds),
and with dynamic shapes in an internal assert (``isIntList() INTERNAL ASSERT FAILED``).

``torch.compile`` does not reach it: Dynamo refuses an ``out=`` graph input that the call
resizes ("Shape mismatch with out= tensor variant", a graph break, so eager runs the op; see
pytorch/pytorch#185984). Callers of AOTAutograd itself (``aot_function``, ``aot_module``) get
the failure."""

import torch
from functorch.compile import aot_function, nop


def sin(x, out):
    return torch.sin(x, out=out)


def quantile(x, out):
    return torch.quantile(x, 0.5, dim=0, out=out)


print("torch", torch.__version__)
x = torch.randn(3, 4)
for f, dynamic in [(sin, False), (quantile, False), (quantile, True)]:
    name = f"{f.__name__}, {'dynamic' if dynamic else 'static'} shapes"
    expected = f(x, torch.zeros(0))
    compiled = aot_function(f, nop, nop, keep_inference_input_mutations=True, dynamic=dynamic)
    try:
        r = compiled(x, torch.zeros(0))
        print(f"{name}: eager out.shape {tuple(expected.shape)}, compiled {tuple(r.shape)}, equal: {torch.equal(r, expected)}")
    except Exception as e:
        print(f"{name}: eager out.shape {tuple(expected.shape)}, compiled raised {type(e).__name__}: {str(e).splitlines()[0]}")
