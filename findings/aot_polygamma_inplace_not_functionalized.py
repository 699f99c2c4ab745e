"""AOTAutograd: ``Tensor.polygamma_(n)`` cannot be traced; functionalization calls ATen's own
in-place op "a custom (non-ATen) operator".

``x.polygamma_(1)`` runs in eager. Compiled by AOTAutograd (``aot_function``, no-op compilers)
or by ``torch.compile(backend="aot_eager")``, the first call raises ``RuntimeError: Found a
custom (non-ATen) operator whose output has alias annotations:
aten::polygamma_(Tensor(a!) self, int n) -> Tensor(a!)``. The functional op takes its arguments
in the other order (``polygamma(int n, Tensor self)``), so functionalization finds no functional
twin for the in-place one (autograd needed a derivatives.yaml entry of its own for
``polygamma_`` for the same reason, pytorch/pytorch#51966). Every other in-place variant of
``op_db`` we swept traces.

Shown by optests' ``inplace`` call pattern (the OpInfo's ``inplace_variant`` on the sample):
``polygamma.polygamma_n_0`` to ``polygamma_n_4``, trace stage."""

import torch
from functorch.compile import aot_function, nop


def f(x):
    return x.clone().polygamma_(1)


torch.manual_seed(0)
x = torch.rand(4) + 1
print("torch", torch.__version__)
print("schemas:", torch.ops.aten.polygamma.default._schema, "|", torch.ops.aten.polygamma_.default._schema)
print("eager:", f(x))
for name, compiled in (
    ("aot_function", aot_function(f, nop)),
    ("aot_eager", torch.compile(f, backend="aot_eager", fullgraph=True)),
):
    try:
        print(f"{name}: equal to eager: {torch.allclose(compiled(x), f(x))}")
    except Exception as e:
        message = str(e).split("raised:")[-1].strip().split(". We only")[0]
        print(f"{name}: raised {type(e).__name__}: {message}")
