"""`torch.func.grad` of `index_reduce(..., "prod")` or `scatter_reduce(..., "prod")`, traced, fails on a
data-dependent value: `aot_function` raises `DataDependentOutputException:
aten._local_scalar_dense`, `torch.compile(fullgraph=True)` "Could not guard on data-dependent
expression". The same backward through autograd (`loss.backward()` on the compiled forward) traces
and matches eager, and so does eager `torch.func.grad`. (The prod backward branches on whether the
input holds zeros; under `torch.func.grad`'s wrappers that branch reads a value, where the traced
autograd backward does not.)

Found by optests' `func-2` pattern (a compiled function whose body applies `torch.func.grad`), static
and dynamic: `index_reduce.prod`, `scatter_reduce.prod`.
Run: python findings/func_grad_prod_reduction_data_dependent.py
"""

import torch
import torch._dynamo
from functorch.compile import aot_function, nop

torch.manual_seed(0)
losses = {  # (the indices an argument: aot_function refuses a tensor the function closes over)
    "index_reduce prod": lambda x, src, idx: x.index_reduce(0, idx, src, "prod").sum(),
    "scatter_reduce prod": lambda x, src, idx: x.scatter_reduce(0, idx.view(3, 1).expand(3, 4), src, "prod").sum(),
}
x, src, idx = torch.randn(3, 4), torch.randn(3, 4), torch.tensor([0, 2, 0])

print("torch", torch.__version__)
for name, loss in losses.items():
    expected = torch.func.grad(loss)(x, src, idx)

    def by_backward(compiled):
        leaf = x.clone().requires_grad_()
        compiled(leaf, src, idx).backward()
        return leaf.grad

    ways = {
        "aot_function(loss) + backward()": lambda loss=loss: by_backward(aot_function(loss, nop)),
        "torch.compile(loss) + backward()": lambda loss=loss: by_backward(torch.compile(loss, backend="aot_eager")),
        "aot_function(grad(loss))": lambda loss=loss: aot_function(torch.func.grad(loss), nop)(x, src, idx),
        "torch.compile(grad(loss))": lambda loss=loss: torch.compile(torch.func.grad(loss), backend="aot_eager", fullgraph=True)(
            x, src, idx
        ),
    }
    for way, run in ways.items():
        torch._dynamo.reset()
        try:
            result = f"equals eager's grad: {torch.allclose(run(), expected)}"
        except Exception as e:
            result = f"raises {type(e).__name__}: {str(e).splitlines()[0][:75]}"
        print(f"{name:20} {way:34} {result}")
