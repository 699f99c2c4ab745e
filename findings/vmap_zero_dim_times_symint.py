"""Under `torch.func.vmap`, a per-example 0-d tensor multiplied or divided by a size (a SymInt when
traced with dynamic shapes) fails to trace: the scalar goes through `_to_copy`'s decomposition,
which asserts "x must be Tensor or scalar, got SymInt". A per-example tensor of one or more dims
divided by the same size traces; static shapes trace; eager runs. `F.multilabel_soft_margin_loss`
on 1-D inputs does `loss.sum(dim) / C` and fails so.

Found by optests' `func-3` pattern (a compiled function whose body applies `torch.func.vmap`) in
dynamic mode: `nn.functional.multilabel_soft_margin_loss`.
Run: python findings/vmap_zero_dim_times_symint.py
"""

import torch
import torch._dynamo

torch.manual_seed(0)
x = torch.randn(2, 5)  # a batch of 2 examples of shape (5,)

cases = {
    "a.sum(0) / a.size(0)": lambda a: a.sum(0) / a.size(0),
    "a.sum(0) * a.size(0)": lambda a: a.sum(0) * a.size(0),
    "a / a.size(0)": lambda a: a / a.size(0),
    "multilabel_soft_margin_loss": lambda a: torch.nn.functional.multilabel_soft_margin_loss(a, a.sigmoid()),
}

print("torch", torch.__version__)
for name, per_example in cases.items():

    def f(x, per_example=per_example):
        return torch.func.vmap(per_example)(x)

    expected = f(x)
    for dynamic in (False, True):
        torch._dynamo.reset()
        try:
            compiled = torch.compile(f, backend="aot_eager", fullgraph=True, dynamic=dynamic)(x)
            result = f"equals eager: {torch.allclose(compiled, expected)}"
        except Exception as e:
            said = next((line.strip() for line in str(e).splitlines() if "got AssertionError" in line), str(e).splitlines()[0])
            result = f"raises {type(e).__name__}: {'got ' + said.partition('got ')[2] if 'got ' in said else said}"
        print(f"{name:28} dynamic={dynamic!s:5} {result}")
