"""Eager: ``torch.nn.functional.avg_pool3d(x, 2, out=out)`` on the CPU writes wrong values into an
``out=`` tensor that is not dense.

``out`` has the right shape, [2, 3, 2, 2, 2], but every other element of its storage
(``zeros(2, 3, 2, 2, 4)[..., ::2]``). Eager's CPU kernel fills it with values that are not
``avg_pool3d(x, 2)``; a contiguous ``out=`` gets the right ones. Compiled by AOTAutograd
(``aot_function``, no-op compilers), which functionalizes the call into ``avg_pool3d`` and a
``copy_`` into ``out``, the result is right. A silent wrong answer in eager, reported as
pytorch/pytorch#84577 with ``narrow_copy`` (``findings/narrow_copy_out_noncontiguous.py``) in
2022; that issue is closed, and both releases still do it.

Shown by optests' ``out`` call pattern (``out-2``: an ``out=`` that is not dense), mutation
stage (``kwargs['out']`` after the call differs between eager and compiled):
``nn.functional.avg_pool3d``, every sample, static and dynamic."""

import torch
from functorch.compile import aot_function, nop


def f(x, out):
    return torch._C._nn.avg_pool3d(x, 2, out=out)  # the out variant of F.avg_pool3d


torch.manual_seed(0)
x = torch.randn(2, 3, 4, 4, 4)
expected = torch.nn.functional.avg_pool3d(x, 2)
print("torch", torch.__version__)
for layout, make in (
    ("contiguous", lambda: torch.zeros(2, 3, 2, 2, 2)),
    ("not dense", lambda: torch.zeros(2, 3, 2, 2, 4)[..., ::2]),
):
    eager_out, compiled_out = make(), make()
    f(x, eager_out)
    aot_function(f, nop, keep_inference_input_mutations=True)(x, compiled_out)
    print(
        f"out= {layout:10}: eager equals avg_pool3d(x): {torch.allclose(eager_out, expected)!s:5} "
        f"(max abs diff {(eager_out - expected).abs().max().item():.3g}) "
        f"compiled equals avg_pool3d(x): {torch.allclose(compiled_out, expected)}"
    )
