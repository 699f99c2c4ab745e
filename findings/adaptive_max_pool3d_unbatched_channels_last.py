"""`F.adaptive_max_pool3d` of an unbatched input (C, D, H, W) stored channels_last (the 4-D layout),
with an output size equal to the input's (given, or `None` for each dim), compiled with
`aot_eager_decomp_partition`, raises when the compiled code runs: "Unsupported memory format.
Supports only ChannelsLast3d, Contiguous". Eager takes the input, and so does `aot_eager`; a
contiguous input, or a smaller output size, compiles under both. A tensor that an earlier layer left
channels_last reaches the pool so in a model that works eagerly.

Found by optests' `sequence-1` pattern (other strides and layouts on one compiled function):
`nn.functional.adaptive_max_pool3d`, its second sample (unbatched), call 3 (channels_last), under
`aot_eager_decomp_partition`.
Run: python findings/adaptive_max_pool3d_unbatched_channels_last.py
"""

import torch
import torch._dynamo
import torch.nn.functional as F  # noqa: N812

torch.manual_seed(0)


print("torch", torch.__version__)
for size in ((2, 2, 2), (4, 3, 5), (None, None, None)):

    def pool(x, size=size):
        return F.adaptive_max_pool3d(x, size)

    for layout, x in (
        ("contiguous", torch.randn(4, 4, 3, 5)),
        ("channels_last", torch.randn(4, 4, 3, 5).contiguous(memory_format=torch.channels_last)),
    ):
        expected = pool(x)
        for backend in ("aot_eager", "aot_eager_decomp_partition"):
            torch._dynamo.reset()
            try:
                result = f"equals eager: {torch.equal(torch.compile(pool, backend=backend, fullgraph=True)(x), expected)}"
            except Exception as e:
                result = f"raises {type(e).__name__}: {str(e).splitlines()[0]}"
            print(f"output_size={size!s:18} input {layout:13} {backend:26} {result}")
