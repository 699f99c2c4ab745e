"""Three ops whose decompositions give outputs other strides than eager's CPU kernels, on dense
inputs with another memory order: `stack` of one tensor (the decomposition keeps the input's
order, eager returns a contiguous result), `put` (the decomposition returns a contiguous result,
eager keeps the input's order) and `grid_sample` on channels_last inputs. torch.compile with
`aot_eager_decomp_partition` (inductor's decompositions, no code generation) returns the
decomposition's strides; so does `inductor` for `stack` and `put`. Values agree; a caller's
`.view()` that works on eager's result fails on the compiled one. `put` is pytorch/pytorch#198364.

Found by optests' `sequence` pattern (`sequence-1`: the sample, then other strides and layouts on
one compiled function) under `aot_eager_decomp_partition`; a fresh compile on the changed layout
gives the same strides, so it is not the sequence's doing.
Run: python findings/decomposition_output_strides.py
"""

import torch
import torch._dynamo

torch.manual_seed(0)


def transposed(*shape: int) -> torch.Tensor:
    """A dense tensor of ``shape`` whose last two dims are swapped in memory."""
    return torch.randn(*shape).transpose(-1, -2).contiguous().transpose(-1, -2)


def channels_last(*shape: int) -> torch.Tensor:
    return torch.randn(*shape).contiguous(memory_format=torch.channels_last)


cases = {
    "stack([x], -1)": (lambda x: torch.stack([x], -1), (transposed(3, 4),)),
    "put(x, index, source)": (lambda x, i, s: torch.put(x, i, s), (transposed(3, 3), torch.tensor([0, 4]), torch.randn(2))),
    "grid_sample, channels_last": (
        lambda x, grid: torch.nn.functional.grid_sample(x, grid, align_corners=False),
        (channels_last(2, 3, 5, 5), channels_last(2, 5, 5, 2)),
    ),
}

print("torch", torch.__version__)
for name, (f, args) in cases.items():
    eager = f(*args)
    print(f"{name:28} eager output strides {eager.stride()}")
    for backend in ("aot_eager", "aot_eager_decomp_partition", "inductor"):
        torch._dynamo.reset()
        compiled = torch.compile(f, backend=backend, fullgraph=True)(*args)
        same = "same" if compiled.stride() == eager.stride() else "DIFFERENT"
        print(f"{'':28} {backend:27} {compiled.stride()} ({same}; values equal: {torch.allclose(eager, compiled)})")
