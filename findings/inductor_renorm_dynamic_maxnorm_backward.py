"""`torch.renorm(x, p, dim, maxnorm)` compiled by inductor and called again with another
`maxnorm` (a Python float, which Dynamo then makes automatically dynamic and recompiles for):
the forward is eager's, but the backward computes with `maxnorm` 1.0 whatever it is, so the
gradient is silently scaled by 1.0 / maxnorm (4x for 0.25). The first call, and every call under
`aot_eager`, gives eager's gradient.

Found by optests' `sequence-4` pattern (the sample, then other Python scalars, on one compiled
function) under `inductor`: `renorm`, `maxnorm` 0.75 after 1.0.
Run: python findings/inductor_renorm_dynamic_maxnorm_backward.py
"""

import torch
import torch._dynamo

print("torch", torch.__version__)


def f(x, maxnorm):
    return torch.renorm(x, 2, 1, maxnorm)


torch.manual_seed(0)
x0 = torch.randn(5, 5, 5)
for backend in ("aot_eager", "aot_eager_decomp_partition", "inductor"):
    torch._dynamo.reset()
    compiled = torch.compile(f, backend=backend, fullgraph=True)
    for maxnorm in (0.5, 0.75, 1.0, 0.25):  # one compiled function, called four times
        x = x0.clone().requires_grad_()
        out = compiled(x, maxnorm)
        grad = torch.autograd.grad(out.sum(), x)[0]
        xe = x0.clone().requires_grad_()
        expected_out = torch.renorm(xe, 2, 1, maxnorm)
        expected = torch.autograd.grad(expected_out.sum(), xe)[0]
        print(
            f"{backend:27} maxnorm={maxnorm:<4}  forward as eager: {torch.allclose(out, expected_out)!s:5}  gradient "
            f"as eager: {torch.allclose(grad, expected, atol=1e-6)!s:5}  (compiled/eager: {(grad.abs().sum() / expected.abs().sum()).item():.3f})"
        )
