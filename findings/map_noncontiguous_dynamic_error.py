"""The `map` higher-order op, traced by AOTAutograd with dynamic shapes, raises an internal
assertion ("vr must not be None for symbol ...") when its inputs are non-dense (every stride
doubled, storage offset 1) and require grad. The same call with dense inputs traces and agrees
with eager. (The sweep saw cond.simple fail alike on 2.13; 2.15 passes it.)

Found by optests' `noncontiguous` transform (hop_db's map.simple, .nested, .triple_nested and
cond.simple, dynamic mode, trace stage).
Run: python findings/map_noncontiguous_dynamic_error.py
"""

import torch
from functorch.compile import aot_function, min_cut_rematerialization_partition, nop
from torch._higher_order_ops.map import map as hop_map

torch.manual_seed(0)


def body(x: list[torch.Tensor], y0: torch.Tensor, y1: torch.Tensor) -> list[torch.Tensor]:
    return [x[0].cos().add_(1.0) * y0, (x[1] + y1.sin()).cos_().view(x[1].size())]


def f(a: torch.Tensor, b: torch.Tensor, y0: torch.Tensor, y1: torch.Tensor) -> list[torch.Tensor]:
    return hop_map(body, [a, b], y0, y1)


def non_dense(t: torch.Tensor) -> torch.Tensor:
    """The same values, every stride doubled, storage offset 1; a leaf that requires grad."""
    base = torch.full((2 * t.numel(),), float("nan"))
    out = base.as_strided(t.shape, tuple(2 * s for s in t.stride()), 1)
    out.copy_(t)
    return out.requires_grad_()


values = [torch.rand(2, 2, 2) + 0.1, torch.rand(2, 2, 2) + 0.1, torch.rand(1) + 0.1, torch.rand(1) + 0.1]
dense = [t.clone().requires_grad_() for t in values]
print("torch", torch.__version__)
for name, args in (("non-dense", [non_dense(t) for t in values]), ("dense", dense)):
    torch._dynamo.reset()  # map traces its body with Dynamo: each case starts from a clean one
    eager = f(*args)
    try:
        compiled = aot_function(f, nop, nop, dynamic=True, partition_fn=min_cut_rematerialization_partition)(*args)
        print(f"{name:9} compiled equals eager: {all(torch.allclose(e, c) for e, c in zip(eager, compiled))}")
    except Exception as e:
        print(f"{name:9} {type(e).__name__}: {str(e).splitlines()[0]}")
