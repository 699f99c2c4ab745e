"""F.pad in "reflect" and "replicate" mode on a channels_last 4-D input, padding the last three
dims: the CPU kernel keeps channels_last, the fake (meta) kernel predicts a contiguous output. So
a traced graph's metadata says contiguous where the real output is not (what AOTAutograd and any
backend that trusts the graph see); inductor's compiled output does keep channels_last.

Found by optests' `transposed` transform (`transposed-1`, channels_last: nn.functional.pad.reflect
and nn.functional.pad.replicate, metadata stage).
Run: python findings/pad_channels_last_strides.py
"""

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

torch.manual_seed(0)
x = torch.randn(3, 3, 5, 5).to(memory_format=torch.channels_last)

print("torch", torch.__version__)
print("input strides", x.stride())
for mode in ("reflect", "replicate"):

    def f(x: torch.Tensor, mode: str = mode) -> torch.Tensor:
        return F.pad(x, (1, 1, 1, 1, 1, 1), mode=mode)

    eager = f(x)
    with FakeTensorMode() as fake_mode:
        fake = f(fake_mode.from_tensor(x))
    compiled = torch.compile(f, backend="inductor", dynamic=False)(x)
    print(f"{mode:9} eager {eager.stride()}, fake kernel predicts {fake.stride()}, torch.compile {compiled.stride()}, "
          f"values equal {torch.equal(eager, compiled)}")
