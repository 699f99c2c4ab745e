"""Eager: ``torch._C._nn.gelu(x, out=out)`` (the out variant of ``F.gelu``) on the CPU never
writes an ``out=`` tensor that is not dense, and returns it unwritten.

``x`` is a contiguous float32 [4, 5]; ``out`` has the right shape but every other element of its
storage (``zeros(4, 10)[:, ::2]``). Eager returns ``out`` still holding its zeros: no error, no
warning. A contiguous ``out=`` gets the right values. The CPU kernel sends a contiguous float32
input to oneDNN's GELU, which writes elsewhere than the strided ``out`` (compare
pytorch/pytorch#58525's ``_mkldnn_gelu(self.contiguous(), result)``). Compiled by AOTAutograd
(``aot_function``, no-op compilers), which functionalizes the call into ``gelu`` and a ``copy_``,
``out`` holds ``gelu(x)``. A silent wrong answer in eager.

Shown by optests' ``out`` call pattern (``out-2``: an ``out=`` that is not dense), mutation stage
(eager leaves ``kwargs['out']`` unchanged, the compiled call writes it): ``nn.functional.gelu``,
static and dynamic."""

import torch
from functorch.compile import aot_function, nop


def f(x, out):
    return torch._C._nn.gelu(x, out=out)


torch.manual_seed(0)
x = torch.randn(4, 5)
expected = torch.nn.functional.gelu(x)
print("torch", torch.__version__)
for layout, make in (("contiguous", lambda: torch.zeros(4, 5)), ("not dense", lambda: torch.zeros(4, 10)[:, ::2])):
    eager_out, compiled_out = make(), make()
    f(x, eager_out)
    aot_function(f, nop, keep_inference_input_mutations=True)(x, compiled_out)
    print(
        f"out= {layout:10}: eager equals gelu(x): {torch.allclose(eager_out, expected)!s:5} "
        f"(still all zeros: {bool((eager_out == 0).all())!s:5}) compiled equals gelu(x): {torch.allclose(compiled_out, expected)}"
    )
