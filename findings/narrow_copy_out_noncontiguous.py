"""Eager: ``torch.narrow_copy(x, dim, start, length, out=out)`` on the CPU writes wrong values
into an ``out=`` tensor that is not dense.

``out`` has the right shape but every other element of its storage (``zeros(5, 2, 10)[..., ::2]``).
Eager's CPU kernel fills it with values that are not ``x.narrow(...)``; a contiguous ``out=``
gets the right ones. Compiled by AOTAutograd (``aot_function``, no-op compilers), which
functionalizes the call into ``narrow_copy`` and a ``copy_`` into ``out``, the result is right. A
silent wrong answer in eager, reported with ``avg_pool3d``'s as pytorch/pytorch#84577 in 2022; that
issue is closed, and both releases still do it (``findings/avg_pool3d_out_noncontiguous.py``).

Shown by optests' ``out`` call pattern (``out-2``: an ``out=`` that is not dense), mutation
stage (``kwargs['out']`` after the call differs between eager and compiled): ``narrow_copy``."""

import torch
from functorch.compile import aot_function, nop


def f(x, out):
    return torch.narrow_copy(x, 1, 1, 2, out=out)


torch.manual_seed(0)
x = torch.randn(5, 5, 5)
expected = x.narrow(1, 1, 2)
print("torch", torch.__version__)
for layout, make in (("contiguous", lambda: torch.zeros(5, 2, 5)), ("not dense", lambda: torch.zeros(5, 2, 10)[..., ::2])):
    eager_out, compiled_out = make(), make()
    f(x, eager_out)
    aot_function(f, nop, keep_inference_input_mutations=True)(x, compiled_out)
    print(
        f"out= {layout:10}: eager equals x.narrow: {torch.equal(eager_out, expected)!s:5} "
        f"compiled equals x.narrow: {torch.equal(compiled_out, expected)}"
    )
