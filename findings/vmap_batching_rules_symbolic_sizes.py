"""`torch.func.vmap` of `native_group_norm`, `slice_scatter`, `select_scatter`, `unsafe_chunk`,
`torch.gradient`, `kron`, `take_along_dim`, `linalg.multi_dot`, `_unsafe_masked_index` and
`_unsafe_masked_index_put_accumulate` inside a function that `torch.compile` traces with dynamic
shapes: their batching rules ask the batched tensor for concrete sizes, and tracing fails with
"Cannot call sizes() (or numel()) on tensor with symbolic sizes/strides". With static shapes the
same function compiles and matches eager. (The upsampling ops fail alike:
`findings/vmap_upsample_dynamic_sizes.py`.)

Found by optests' `func-3` pattern (a compiled function whose body applies `torch.func.vmap`) in
dynamic mode: `native_group_norm`, `nn.functional.group_norm`, `slice_scatter`, `select_scatter`,
`unsafe_chunk`, `gradient`, `kron`, `take_along_dim`, `linalg.multi_dot`, `_unsafe_masked_index`,
`_unsafe_masked_index_put_accumulate`.
Run: python findings/vmap_batching_rules_symbolic_sizes.py
"""

import torch
import torch._dynamo

torch.manual_seed(0)
mask = torch.rand(4, 4) < 0.7  # which of the (4, 4) positions below are read (or accumulated)
rows, cols = torch.arange(4).reshape(4, 1) % 3, torch.arange(4).reshape(1, 4) % 3  # in bounds of (3, 3)


def batched(f):
    """``f`` under ``torch.func.vmap``, over a new leading dim: each input stacked with half of it."""
    return lambda *args: torch.func.vmap(f)(*[torch.stack([t, t * 0.5]) for t in args])


cases = {
    "native_group_norm": (
        lambda x, w, b: torch.native_group_norm(x, w, b, 2, 4, 3, 2, 1e-5)[0],
        (torch.randn(2, 4, 3), torch.randn(4), torch.randn(4)),
    ),
    "slice_scatter": (lambda x, src: torch.slice_scatter(x, src, 0, 0, 2), (torch.randn(4, 3), torch.randn(2, 3))),
    "unsafe_chunk": (lambda x: torch.unsafe_chunk(x, 2)[0], (torch.randn(4, 3),)),
    "gradient": (lambda x: torch.gradient(x)[0], (torch.randn(4, 3),)),
    "select_scatter": (lambda x, src: torch.select_scatter(x, src, 0, 1), (torch.randn(4, 3), torch.randn(3))),
    "kron": (torch.kron, (torch.randn(2, 3), torch.randn(3, 2))),
    "take_along_dim": (lambda x: torch.take_along_dim(x, torch.tensor([[0], [2]]), 1), (torch.randn(2, 3),)),
    "linalg.multi_dot": (
        lambda a, b, c: torch.linalg.multi_dot([a, b, c]),
        (torch.randn(2, 3), torch.randn(3, 4), torch.randn(4, 2)),
    ),
    # the masked indexing that inductor's decompositions of index and index_put use
    "_unsafe_masked_index": (
        lambda x: torch.ops.aten._unsafe_masked_index(x, mask, [rows, cols], 0.0),
        (torch.randn(3, 3),),
    ),
    "_unsafe_masked_index_put_accumulate": (
        lambda x, v: torch.ops.aten._unsafe_masked_index_put_accumulate(x, mask, [rows, cols], v),
        (torch.randn(3, 3), torch.randn(4, 4)),
    ),
}

print("torch", torch.__version__)
for name, (f, args) in cases.items():
    eager = batched(f)(*args)
    for dynamic in (False, True):
        torch._dynamo.reset()
        try:
            compiled = torch.compile(batched(f), backend="aot_eager", fullgraph=True, dynamic=dynamic)(*args)
            result = f"compiles, equal to eager: {torch.allclose(compiled, eager)}"
        except Exception as e:
            said = next((line.strip() for line in str(e).splitlines() if "Cannot call" in line), str(e).splitlines()[0])
            said = "Cannot call" + said.partition("Cannot call")[2].split("\\")[0] if "Cannot call" in said else said
            result = f"raises {type(e).__name__}: {said}"
        print(f"{name:36} dynamic={dynamic!s:5} {result}")
