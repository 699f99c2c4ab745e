"""AOTAutograd: a function compiled and called under ``torch.autocast``, its backward run outside
it (as training loops do): the compiled backward runs its matrix products in the lower precision
where eager's runs in float32.

``torch.linalg.solve_triangular(A, B)`` is not on CPU autocast's lower-precision list: its output
is float32 in eager and compiled alike. Its gradient w.r.t. ``A`` is a matrix product of the
gradient and the solution. Eager's backward, run after the ``autocast`` block, computes it in
float32 (error against float64 about 1e-7). The compiled function traces forward and backward
together, under the mode of its first call, so autocast lowers that product to bfloat16 in the
traced backward: its gradient is off by about 4e-3, a silent loss of precision. Through
``aot_function`` and ``torch.compile(backend="aot_eager")`` alike. It is the default
``torch._functorch.config.backward_pass_autocast = "same_as_forward"`` (pytorch/pytorch#153044;
a change of the default to ``"off"`` is pending); with ``"off"`` the compiled gradient is
eager's.

Shown by optests' ``autocast`` call pattern (the call under ``torch.autocast('cpu', bfloat16)``,
the backward outside it), backward stage: ``linalg.solve_triangular``."""

import torch
from functorch.compile import aot_function, nop

torch.manual_seed(0)
A = torch.randn(3, 3).triu() + 3 * torch.eye(3)
B = torch.randn(3, 4)


def f(a, b):
    return torch.linalg.solve_triangular(a, b, upper=True)


def grad_a(fn, dtype=torch.float32, autocast=True):
    a, b = A.to(dtype).requires_grad_(), B.to(dtype).requires_grad_()
    with torch.autocast("cpu", torch.bfloat16, enabled=autocast):
        out = fn(a, b)
    (g,) = torch.autograd.grad(out.sum(), a)  # the backward outside autocast
    return out.dtype, g


_, truth = grad_a(f, torch.float64, autocast=False)
print("torch", torch.__version__)
for name, fn in (
    ("eager", f),
    ("aot_function", aot_function(f, nop)),
    ("aot_eager", torch.compile(f, backend="aot_eager", fullgraph=True)),
):
    dtype, g = grad_a(fn)
    print(f"{name:12} output {dtype!s:13} max error of grad A against float64: {(g.double() - truth).abs().max().item():.1e}")
torch._functorch.config.backward_pass_autocast = "off"
_, g = grad_a(aot_function(f, nop))
print(
    f'aot_function, backward_pass_autocast="off": max error of grad A against float64: {(g.double() - truth).abs().max().item():.1e}'
)
