"""`max_pool3d` compiled by inductor on an input whose last two dims are swapped in memory (dense,
not contiguous: `x.transpose(-1, -2).contiguous().transpose(-1, -2)`, or a permuted activation):
the values are eager's, but the indices are not, and neither is the gradient, which goes to the
wrong elements (a 3x3x3 window, torch 2.13). The same call on a contiguous input, the same call
under `aot_eager_decomp_partition` (the same decompositions, no inductor lowering), and
`max_pool2d` on the same layout give eager's indices and gradient. pytorch/pytorch#197434 reports
it of inductor's pooling lowering (it decodes a window offset in the reduction's loop order, which
follows the strides), fixed by pytorch/pytorch#197596; torch 2.15 gives eager's.

Found by optests' `sequence-1` pattern (other strides and layouts, on one compiled function)
under `inductor`: `nn.functional.max_pool3d`, its indices after a non-dense call.
Run: python findings/inductor_max_pool3d_transposed_input_indices.py
"""

import torch
import torch._dynamo
import torch.nn.functional as F

print("torch", torch.__version__)


def transposed(t):
    """The same values, the last two dims swapped in memory."""
    return t.transpose(-1, -2).contiguous().transpose(-1, -2)


torch.manual_seed(0)
calls = {
    "max_pool3d(x, 3, stride=1), x 1x1x3x3x4": (lambda x: F.max_pool3d(x, 3, stride=1, return_indices=True), (1, 1, 3, 3, 4)),
    "max_pool3d(x, 3, stride=2, ceil_mode=True), x 1x2x3x6x5": (
        lambda x: F.max_pool3d(x, 3, stride=2, ceil_mode=True, return_indices=True),
        (1, 2, 3, 6, 5),
    ),
    "max_pool2d(x, 3, stride=1), x 1x2x6x5": (lambda x: F.max_pool2d(x, 3, stride=1, return_indices=True), (1, 2, 6, 5)),
}
for name, (f, shape) in calls.items():
    x0 = torch.randn(shape)
    for backend in ("aot_eager_decomp_partition", "inductor"):
        for layout, make in (("contiguous", torch.clone), ("transposed", transposed)):
            torch._dynamo.reset()
            compiled = torch.compile(f, backend=backend, fullgraph=True)
            x, xe = make(x0).requires_grad_(), make(x0).requires_grad_()
            (out, idx), (expected, expected_idx) = compiled(x), f(xe)
            grad, expected_grad = (torch.autograd.grad(o.sum(), t)[0] for o, t in ((out, x), (expected, xe)))
            print(
                f"{name:56} {backend:27} {layout:10}  values as eager: {torch.equal(out, expected)!s:5}  indices as eager: "
                f"{torch.equal(idx, expected_idx)!s:5}  gradient as eager: {torch.equal(grad, expected_grad)}"
            )
