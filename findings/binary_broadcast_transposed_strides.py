"""Binary elementwise ops where one input broadcasts and the other is dense but transposed: the
fake (meta) kernel predicts other output strides than the CPU kernel returns, and torch.compile
(inductor) follows the prediction. logaddexp and ldexp (3-D, broadcasting); copysign and
torch.div(rounding_mode="floor") (2-D with a 0-d tensor). Values agree; strides do not.

Found by optests' `transposed` transform (logaddexp, ldexp, copysign, div.floor_rounding; metadata stage).
Run: python findings/binary_broadcast_transposed_strides.py
"""

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

torch.manual_seed(0)


def transposed(*shape: int) -> torch.Tensor:
    """A dense tensor of ``shape`` whose last two dims are swapped in memory."""
    return torch.randn(*shape).transpose(-1, -2).contiguous().transpose(-1, -2)


cases = {
    "logaddexp": (torch.logaddexp, (torch.randn(10, 1, 5), transposed(10, 5))),
    "ldexp": (torch.ldexp, (torch.randn(10, 1, 5), transposed(10, 5))),
    "copysign": (torch.copysign, (transposed(10, 5), torch.tensor(-1.5))),
    "div floor": (lambda a, b: torch.div(a, b, rounding_mode="floor"), (transposed(10, 5), torch.tensor(0.7))),
}

print("torch", torch.__version__)
for name, (f, args) in cases.items():
    eager = f(*args)
    with FakeTensorMode() as mode:
        fake = f(*(mode.from_tensor(t) for t in args))
    compiled = torch.compile(f, backend="inductor", dynamic=False)(*args)
    print(f"{name:10} input strides {[a.stride() for a in args]}")
    print(f"{'':10} eager {eager.stride()}, fake kernel predicts {fake.stride()}, torch.compile {compiled.stride()}, "
          f"values equal {torch.allclose(eager, compiled, equal_nan=True)}")
