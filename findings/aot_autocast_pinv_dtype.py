"""``torch.linalg.pinv`` under CPU autocast: eager returns bfloat16, the compiled call float32.

Under ``torch.autocast("cpu", dtype=torch.bfloat16)``, eager ``torch.linalg.pinv`` of a float32
matrix returns bfloat16: autocast leaves the op's float32 inputs as they are, but the op's CPU
kernel calls ``matmul`` inside, and autocast lowers that inner call. Under a Python
dispatch mode (FakeTensorMode, as AOTAutograd traces) the inner ``matmul`` is not lowered: the
traced graph holds one ``aten.linalg_pinv`` whose output is float32, and AOTAutograd runs it with
autocast off, so the compiled call returns float32 where eager returns bfloat16. Both
``hermitian=True`` and ``hermitian=False``; ``aot_function`` and ``torch.compile(backend="aot_eager")``
alike. (A plain ``TorchDispatchMode`` that only calls the op shows the kernel itself returning
float32, as the trace predicts.)

The bfloat16 output also breaks eager's own backward, taken outside autocast as training loops
do: the gradient formula multiplies the bfloat16 output with float32 tensors and raises
"expected m1 and m2 to have the same dtype". The compiled backward, float32 throughout, runs.

Shown by optests' ``autocast`` call pattern (the call under ``torch.autocast("cpu",
dtype=bfloat16)``, judged against eager under the same autocast): the metadata stage (the dtype)
and the backward stage (eager raises, compiled does not), ``linalg.pinv`` and
``linalg.pinv.hermitian``."""

import torch
from functorch.compile import aot_function, min_cut_rematerialization_partition, nop
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode


def f(x):
    return torch.linalg.pinv(x, hermitian=True)


class Passthrough(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


torch.manual_seed(0)
a = torch.randn(3, 3)
x = a + a.T  # symmetric, float32
compiled = aot_function(f, nop, nop, partition_fn=min_cut_rematerialization_partition, keep_inference_input_mutations=True)
dynamo = torch.compile(f, backend="aot_eager")

print("torch", torch.__version__)
with torch.autocast("cpu", dtype=torch.bfloat16):
    eager = f(x)
    with Passthrough():
        passthrough = f(x)
    with FakeTensorMode() as mode:
        fake = f(mode.from_tensor(x))
    print("eager                          ", eager.dtype)
    print("eager under a TorchDispatchMode", passthrough.dtype)
    print("fake kernel predicts           ", fake.dtype)
    print("aot_function                   ", compiled(x).dtype)
    print("torch.compile(aot_eager)       ", dynamo(x).dtype)

leaf = x.clone().requires_grad_()
with torch.autocast("cpu", dtype=torch.bfloat16):
    eager_out = f(leaf)
    compiled_out = aot_function(f, nop, nop, partition_fn=min_cut_rematerialization_partition)(leaf)
try:
    eager_out.sum().backward()
    print("eager backward                  ran:", leaf.grad.dtype)
except RuntimeError as e:
    print("eager backward                  raised:", str(e).splitlines()[0])
leaf.grad = None
compiled_out.sum().backward()
print("compiled backward               ran:", leaf.grad.dtype)
