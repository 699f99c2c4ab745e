"""Eager ``torch.matmul`` with a 1-D first operand, and ``torch.nn.functional.linear`` of a 1-D
input, with an ``out=`` that is not dense: ``out`` is restrided to contiguous and the result
written past its elements, into the memory of its neighbours. A silent wrong answer in eager,
and a write outside the tensor the caller passed.

``out`` is column 0 of a 4 x 2 buffer (stride 2). It has the right shape, so the op must write
the result into those 4 elements, as ``torch.mv``, ``torch.addmv`` and ``torch.matmul`` with a
matrix first do. The CPU kernels of ``matmul(x, W, out=)`` for a vector ``x`` and of ``linear``'s
out variant (``torch._C._nn.linear(..., out=)``, which the OpInfo's out variant calls) give
``out`` stride 1 instead, and write the 4 values into the buffer's first 4 elements: column 0
keeps two zeros, and two elements of column 1 are overwritten. With and without a bias. The
kernel computes a vector as a 1 x 3 matrix, takes ``out``'s shape [4] for a wrong one and
resizes it to [1, 4], which makes it contiguous; the deprecation warning on stderr says so ("An
output with one or more elements was resized since it had shape [4], which does not match the
required output shape [1, 4]"). The compiled call (AOTAutograd functionalizes it into the op
and a ``copy_``) writes column 0, as the caller asked.

Found by optests' ``out`` call pattern: ``nn.functional.linear``'s and ``matmul``'s ``out-2``
(``out=`` not dense), metadata: "traced out.stride()=(2,), but expected (1,)" (eager's strides
changed), static and dynamic.
Run: python findings/matmul_vector_out_restrided.py
"""

import torch
from functorch.compile import aot_function, nop


def linear_into(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    return torch._C._nn.linear(x, w, None, out=out)


print("torch", torch.__version__)
torch.manual_seed(0)
x, w = torch.randn(3), torch.randn(4, 3)
expected = w @ x
calls = {
    "eager linear": lambda out: linear_into(x, w, out),
    "eager matmul(x, W)": lambda out: torch.matmul(x, w.T, out=out),
    "eager mv": lambda out: torch.mv(w, x, out=out),
    "aot_function linear": lambda out: aot_function(linear_into, nop, keep_inference_input_mutations=True)(x, w, out),
}
for name, call in calls.items():
    buffer = torch.zeros(4, 2)
    out = buffer[:, 0]  # the right shape, stride 2
    call(out)
    print(
        f"{name:20} out.stride()={out.stride()}, column 0 holds the result: "
        f"{torch.allclose(buffer[:, 0], expected)}, column 1 untouched: {bool((buffer[:, 1] == 0).all())}"
    )
