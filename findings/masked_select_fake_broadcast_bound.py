"""`torch.masked_select(x, mask)` where `x` is broadcast against a larger `mask` (x of 10 elements,
mask 10x10: up to 100 selected), compiled by `torch.compile` with static sizes (every backend,
`aot_eager` included): the call fails a runtime assertion, "u0 <= 10", where eager returns the
selected elements.
The fake kernel (`torch/_subclasses/fake_impls.py`, `masked_select`) bounds the unbacked number of
selected elements by `x.numel()`, not by the numel of the broadcast shape; the compiled code checks
that bound at run time. A mask broadcast against a larger `x`, and `x` and `mask` of one shape,
compile and equal eager.

Found by optests' `sequence-10` pattern (the op's samples in order, on one compiled function)
under `inductor`: `masked_select`, its sample 2 (x of 10, mask 10x10) after sample 1; a fresh
compile of that sample alone fails the same way. (optests' base check traces without Dynamo,
where masked_select's data-dependent size is not captured at all.)
Run: python findings/masked_select_fake_broadcast_bound.py
"""

import torch
import torch._dynamo

print("torch", torch.__version__)


def f(x, mask):
    return torch.masked_select(x, mask)


torch.manual_seed(0)
calls = {
    "x 10, mask 10x10 (x broadcast)": (torch.randn(10), torch.rand(10, 10) > 0.5),
    "x 10x10, mask 10 (mask broadcast)": (torch.randn(10, 10), torch.rand(10) > 0.5),
    "x 10x10, mask 10x10": (torch.randn(10, 10), torch.rand(10, 10) > 0.5),
}
for name, (x0, mask) in calls.items():
    expected = f(x0, mask)
    for requires_grad in (False, True):
        for backend in ("aot_eager", "aot_eager_decomp_partition", "inductor"):
            torch._dynamo.reset()
            compiled = torch.compile(f, backend=backend, fullgraph=True)
            try:
                out = compiled(x0.clone().requires_grad_(requires_grad), mask)
                said = f"{out.numel()} elements, as eager: {torch.equal(out.detach(), expected)}"
            except RuntimeError as e:
                said = f"raises RuntimeError: {str(e).splitlines()[0]}"
            print(f"{name:34} requires_grad={requires_grad!s:5} {backend:27} eager selects {expected.numel()}; compiled: {said}")
