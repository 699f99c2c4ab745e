"""max_unpool2d on a channels_last input: the CPU kernel keeps channels_last for the output, the
fake kernel (the decomposition `_max_unpoolnd` in torch/_decomp/decompositions.py, whose
`new_zeros` output is contiguous) predicts a contiguous one, and torch.compile follows the
prediction. So the compiled result has other strides than eager's.

Found by optests' `transposed` transform (nn.functional.max_unpool2d and its `grad` variant,
metadata stage: every sample that passes as given fails as channels_last), and by
`sequence-1` under `aot_eager_decomp_partition`, which runs the decomposition.
Run: python findings/max_unpool2d_channels_last_strides.py
"""

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

torch.manual_seed(0)
x = torch.randn(1, 2, 6, 6).contiguous(memory_format=torch.channels_last)
x, indices = torch.nn.functional.max_pool2d(x, 2, return_indices=True)  # both channels_last


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
print("decomp_partition output", torch.compile(f, backend="aot_eager_decomp_partition")(x, indices).stride())
print("values equal           ", torch.equal(eager, compiled))
