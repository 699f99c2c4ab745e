"""`torch.func.grad` inside a compiled function, over a function marked
`torch.compiler.nested_compile_region` (the `invoke_subgraph` higher-order op), fails to compile
under every backend, `eager` included, with an internal assertion: "AssertionError: Expected
FakeTensor, got <class 'torch.Tensor'>". Eager computes the gradient; `torch.func.vmap` over the
same region compiles. (The sweep met `invoke_quant`, the same kind of subgraph op, alike.)

Found by optests' `func-2` pattern (a compiled function whose body applies `torch.func.grad` to the
call) under `inductor`: `invoke_subgraph.simple`, `invoke_quant.simple`. (optests' `aot_eager`
backends trace without Dynamo, where the region is a plain call.)
Run: python findings/func_grad_over_nested_compile_region.py
"""

import torch
import torch._dynamo

print("torch", torch.__version__)


@torch.compiler.nested_compile_region
def region(x):
    return x.sin() * 2


def grad_of_region(x):
    return torch.func.grad(lambda x: region(x).sum())(x)


def vmap_of_region(x):
    return torch.func.vmap(region)(x)


x = torch.randn(3, 4)
for name, f in (("torch.func.grad", grad_of_region), ("torch.func.vmap", vmap_of_region)):
    expected = f(x)
    for backend in ("eager", "aot_eager", "inductor"):
        torch._dynamo.reset()
        try:
            out = torch.compile(f, backend=backend, fullgraph=True)(x)
            print(f"{name} {backend:9} compiled; as eager: {torch.allclose(out, expected)}")
        except Exception as e:
            print(f"{name} {backend:9} {type(e).__name__}: {' '.join(str(e).split())[:60]}")
