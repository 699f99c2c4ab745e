"""native_dropout_backward and torch.normal(mean, std) on dense but transposed inputs: the fake
(meta) kernel predicts other output strides than the CPU kernel returns. Values are not compared
(normal draws random numbers); strides differ.

Found by optests' `transposed` transform (`transposed-0`: native_dropout_backward and normal,
metadata stage), and by `sequence-1` under `aot_eager_decomp_partition`, which runs the
decomposition (`native_dropout_backward`).
Run: python findings/dropout_backward_normal_transposed_strides.py
"""

import torch
import torch._dynamo
from torch._subclasses.fake_tensor import FakeTensorMode

torch.manual_seed(0)


def transposed(*shape: int) -> torch.Tensor:
    """A dense tensor of ``shape`` whose last two dims are swapped in memory."""
    return torch.rand(*shape).transpose(-1, -2).contiguous().transpose(-1, -2)


cases = {
    "native_dropout_backward": (
        lambda g, m: torch.ops.aten.native_dropout_backward(g, m, 2.0),
        (transposed(2, 5, 5, 5), transposed(2, 5, 5, 5) > 0.5),
    ),
    "normal(mean, std)": (torch.normal, (transposed(2, 4, 2), transposed(2, 4, 2))),
}

print("torch", torch.__version__)
for name, (f, args) in cases.items():
    eager = f(*args)
    with FakeTensorMode() as mode:
        fake = f(*(mode.from_tensor(t) for t in args))
    print(f"{name:24} input strides {[a.stride() for a in args]}")
    print(f"{'':24} eager {eager.stride()}, fake kernel predicts {fake.stride()}")
    torch._dynamo.reset()
    compiled = torch.compile(f, backend="aot_eager_decomp_partition", fullgraph=True)(*args)
    print(f"{'':24} torch.compile(backend='aot_eager_decomp_partition') returns {compiled.stride()}")
