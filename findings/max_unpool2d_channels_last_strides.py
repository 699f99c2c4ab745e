"""max_unpool2d on a channels_last input: the CPU kernel keeps channels_last for the output, the
fake (meta) kernel predicts a contiguous one, and torch.compile follows the prediction. So the
compiled result has other strides than eager's.

Found by optests' `transposed` transform (nn.functional.max_unpool2d, metadata stage: every 4-D
sample that passes as given fails as channels_last).
Run: python findings/max_unpool2d_channels_last_strides.py
"""

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

torch.manual_seed(0)
pooled, indices = torch.nn.functional.max_pool2d(torch.randn(1, 2, 6, 6), 2, return_indices=True)
x = pooled.contiguous(memory_format=torch.channels_last)
indices = indices.contiguous(memory_format=torch.channels_last)


def f(x: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.max_unpool2d(x, indices, 2)


eager = f(x, indices)
with FakeTensorMode() as mode:
    fake = f(mode.from_tensor(x), mode.from_tensor(indices))
compiled = torch.compile(f, backend="inductor")(x, indices)

print("torch", torch.__version__)
print("input strides          ", x.stride())
print("eager output strides   ", eager.stride())
print("fake kernel predicts   ", fake.stride())
print("torch.compile output   ", compiled.stride())
print("values equal           ", torch.equal(eager, compiled))
