"""batch_norm on a dense but non-contiguous input: the fake (meta) kernel predicts the input's
memory order for the output, the CPU kernel returns a contiguous one, and torch.compile
(inductor) follows the prediction. So the compiled result has other strides than eager's.

Found by optests' `transposed` transform (nn.functional.batch_norm, metadata stage), and by
`sequence-1` under `aot_eager_decomp_partition`, which runs the decomposition.
Run: python findings/batch_norm_transposed_strides.py
"""

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

torch.manual_seed(0)
x = torch.randn(3, 5, 5).transpose(1, 2).contiguous().transpose(1, 2)  # dense, last two dims swapped
weight, bias = torch.randn(5), torch.randn(5)


def f(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.batch_norm(x, torch.zeros(5), torch.ones(5), weight, bias, training=True)


eager = f(x, weight, bias)
with FakeTensorMode() as mode:
    fake = f(*(mode.from_tensor(t) for t in (x, weight, bias)))
compiled = torch.compile(f, backend="inductor")(x, weight, bias)

print("torch", torch.__version__)
print("input strides          ", x.stride())
print("eager output strides   ", eager.stride())
print("fake kernel predicts   ", fake.stride())
print("torch.compile output   ", compiled.stride())
print("decomp_partition output", torch.compile(f, backend="aot_eager_decomp_partition")(x, weight, bias).stride())
print("values equal           ", torch.allclose(eager, compiled, atol=1e-5))
