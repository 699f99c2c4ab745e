"""channel_shuffle on a channels_last 4-D input: the CPU kernel keeps channels_last, the fake
(meta) kernel predicts a contiguous output, and torch.compile (inductor) follows the prediction.
Values agree; strides do not.

Found by optests' `transposed` transform (`transposed-1`, channels_last:
nn.functional.channel_shuffle, metadata stage), and by
`sequence-1` under `aot_eager_decomp_partition`, which runs the decomposition.
Run: python findings/channel_shuffle_channels_last_strides.py
"""

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

torch.manual_seed(0)
x = torch.randn(2, 4, 10, 10).to(memory_format=torch.channels_last)


def f(x: torch.Tensor) -> torch.Tensor:
    return F.channel_shuffle(x, 2)


eager = f(x)
with FakeTensorMode() as mode:
    fake = f(mode.from_tensor(x))
compiled = torch.compile(f, backend="inductor", dynamic=False)(x)

print("torch", torch.__version__)
print("input strides          ", x.stride())
print("eager output strides   ", eager.stride())
print("fake kernel predicts   ", fake.stride())
print("torch.compile output   ", compiled.stride())
print("decomp_partition output", torch.compile(f, backend="aot_eager_decomp_partition", dynamic=False)(x).stride())
print("values equal           ", torch.equal(eager, compiled))
