"""`torch.view_copy(x, shape)` on a dense input stored transposed, where `x.view(shape)` is not
possible: eager returns the copy (as `x.reshape(shape).clone()`), but `torch.compile` with
`aot_eager_decomp_partition` or `inductor` fails to compile it: the decomposition calls `view` and
raises "Cannot view a tensor with shape ... and strides ...". A contiguous or non-dense input
compiles.

Found by optests' `sequence-1` pattern (the sample, then other strides and layouts on one compiled
function) under `aot_eager_decomp_partition`: `view_copy`, the last two dims swapped in memory; a
fresh compile on that layout fails the same way.
Run: python findings/view_copy_decomposition_transposed_input.py
"""

import torch
import torch._dynamo


def f(x):
    return torch.view_copy(x, [25, 5])


x = torch.randn(5, 5, 5).transpose(1, 2)  # dense, the last two dims swapped in memory
print("torch", torch.__version__)
print(f"eager                      returns shape {tuple(f(x).shape)}")
for backend in ("aot_eager", "aot_eager_decomp_partition", "inductor"):
    torch._dynamo.reset()
    try:
        out = torch.compile(f, backend=backend, fullgraph=True)(x)
        print(f"{backend:26} returns shape {tuple(out.shape)}, equal to eager: {torch.equal(out, f(x))}")
    except Exception as e:
        said = next((line.strip() for line in str(e).splitlines() if "Cannot view" in line), str(e).splitlines()[0])
        print(f"{backend:26} raises {type(e).__name__}: {said}")
