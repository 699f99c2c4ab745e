"""`torch.view_copy(x, shape)` on a dense input stored transposed: eager returns a contiguous copy,
but under `torch.compile` with `aot_eager_decomp_partition` or
`inductor` the decomposition calls `view`: where `x.view(shape)` is not possible it fails to
compile ("Cannot view a tensor with shape ... and strides ..."), and where it is (the same shape)
it returns a copy in the input's memory order, strides (25, 1, 5) where eager's are (25, 5, 1).

Found by optests' `sequence-1` pattern (the sample, then other strides and layouts on one compiled
function) under `aot_eager_decomp_partition`: `view_copy`, the last two dims swapped in memory (its
first sample fails to compile, its second returns other strides); a fresh compile on that layout
does the same.
Run: python findings/view_copy_decomposition_transposed_input.py
"""

import torch
import torch._dynamo

x = torch.randn(5, 5, 5).transpose(1, 2)  # dense, the last two dims swapped in memory
print("torch", torch.__version__)
for shape in ([25, 5], [5, 5, 5]):

    def f(x, shape=shape):
        return torch.view_copy(x, shape)

    expected = f(x)
    print(f"view_copy to {shape!s:9} eager                      returns strides {expected.stride()}")
    for backend in ("aot_eager", "aot_eager_decomp_partition", "inductor"):
        torch._dynamo.reset()
        try:
            out = torch.compile(f, backend=backend, fullgraph=True)(x)
            print(
                f"view_copy to {shape!s:9} {backend:26} returns strides {out.stride()}, values equal: {torch.equal(out, expected)}"
            )
        except Exception as e:
            said = next((line.strip() for line in str(e).splitlines() if "Cannot view" in line), str(e).splitlines()[0])
            print(f"view_copy to {shape!s:9} {backend:26} raises {type(e).__name__}: {said}")
