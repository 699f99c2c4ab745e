"""A compiled function that checkpoints a region calling a higher-order op (`torch.cond`,
`map`) fails to compile under every `torch.compile` backend, `eager` included:
"NotImplementedError: There was no rule registered for HigherOrderOperator cond and mode
<torch.utils.checkpoint._CachingTorchDispatchMode ...>". Eager runs it, and the same region
compiles without the checkpoint. Dynamo traces the checkpoint as a higher-order op of its own,
whose compile runs the region under checkpoint's caching dispatch mode, for which these
higher-order ops register no rule (the error says so). The sweep met `invoke_quant_packed` alike.

Found by optests' `checkpoint-1` pattern (a compiled function whose body is
`torch.utils.checkpoint.checkpoint(..., use_reentrant=False)` around the call) under `inductor`:
`cond.simple`, `map.simple`, `map.nested`, `map.triple_nested`, `invoke_quant_packed.simple`,
`invoke_quant.simple`. (optests' `aot_eager` backends trace without Dynamo, where the checkpoint
is no higher-order op.)
Run: python findings/checkpoint_hop_caching_mode_rule.py
"""

import torch
import torch._dynamo
from torch._higher_order_ops.map import map as hop_map
from torch.utils.checkpoint import checkpoint

print("torch", torch.__version__)


def with_cond(x):
    return torch.cond(x.sum() > 0, lambda x: x.sin(), lambda x: x.cos(), (x,))


def with_map(x):
    return hop_map(lambda row: row.sin() * 2, x)


for name, region in (("cond", with_cond), ("map", with_map)):

    def checkpointed(x, region=region):
        return checkpoint(region, x, use_reentrant=False)

    x = torch.randn(3, 4, requires_grad=True)
    expected = torch.autograd.grad(checkpointed(x).sum(), x)[0]
    for backend in ("eager", "aot_eager", "aot_eager_decomp_partition", "inductor"):
        for label, f in (("without checkpoint", region), ("with checkpoint", checkpointed)):
            torch._dynamo.reset()
            try:
                out = torch.compile(f, backend=backend, fullgraph=True)(x)
                same = torch.allclose(torch.autograd.grad(out.sum(), x)[0], expected)
                print(f"{name:4} {backend:27} {label:18} compiled; gradient as eager's: {same}")
            except Exception as e:
                message = " ".join(str(e).split())
                cause = message[message.find("raised:") + 8 :][:100] if "raised:" in message else message[:100]
                print(f"{name:4} {backend:27} {label:18} {type(e).__name__}: {cause}")
