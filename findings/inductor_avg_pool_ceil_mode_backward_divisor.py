"""`avg_pool1d/2d/3d` with `ceil_mode=True` and `count_include_pad=True`, where the last window
overhangs the padded input: the forward compiled by inductor is eager's, but its backward divides
that window's gradient by the full kernel size instead of the window clipped to the padded input,
so the gradient of the last elements is silently too small. `aot_eager` and
`aot_eager_decomp_partition` give eager's gradient.

Found by optests' `sequence-10` pattern (the op's samples in order on one compiled function)
under `inductor`: `nn.functional.avg_pool1d` (kernel 6, stride 3, padding 2, `ceil_mode=True`)
and `nn.functional.avg_pool3d`; a fresh compile of the sample does the same.
Run: python findings/inductor_avg_pool_ceil_mode_backward_divisor.py
"""

import torch
import torch._dynamo

print("torch", torch.__version__)
cases = (
    ("avg_pool1d", torch.nn.functional.avg_pool1d, (1, 1, 9)),
    ("avg_pool2d", torch.nn.functional.avg_pool2d, (1, 1, 9, 9)),
    ("avg_pool3d", torch.nn.functional.avg_pool3d, (1, 1, 9, 9, 9)),
)
for name, pool, shape in cases:

    def f(x, pool=pool):
        return pool(x, 6, stride=3, padding=2, ceil_mode=True, count_include_pad=True)

    x = torch.randn(shape, requires_grad=True)
    eager_out = f(x)
    expected = torch.autograd.grad(eager_out.sum(), x)[0]
    for backend in ("aot_eager", "aot_eager_decomp_partition", "inductor"):
        torch._dynamo.reset()
        out = torch.compile(f, backend=backend, fullgraph=True)(x)
        grad = torch.autograd.grad(out.sum(), x)[0]
        last = (0,) * (len(shape) - 1) + (-1,)
        print(
            f"{name} {backend:27} forward as eager: {torch.allclose(out, eager_out)!s:5}  gradient as eager: "
            f"{torch.allclose(grad, expected)!s:5}  (last element: {grad[last].item():.4f}, eager {expected[last].item():.4f})"
        )
