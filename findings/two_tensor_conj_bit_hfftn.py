"""Eager ``torch.fft.hfftn`` of a wrapper subclass (``TwoTensor``) loses a conjugation: a silent
wrong answer. The compiled call is right.

``hfftn`` (also ``hfft2``; the 1-D ``hfft`` takes another path) conjugates its input with
``torch.conj``, a view that only sets the conjugate bit, then calls ``resolve_conj``, which copies
the data conjugated where the bit is set, and hands the result to ``aten._fft_c2r``, a kernel that
reads raw data. On a ``TwoTensor``, ``aten._conj`` runs on the inner tensors, which get the bit,
but the wrapper made by ``_make_wrapper_subclass`` does not: ``resolve_conj`` sees no bit on the
wrapper and does nothing, and ``_fft_c2r`` then reads each inner tensor's data unconjugated. Both
halves of the result differ from ``hfftn`` of the plain tensor. This is
pytorch/pytorch#130646 ("Conjugate bit not handled properly in wrapped subclasses", open; a fix,
#132563, was closed); ``TwoTensor`` is PyTorch's own reference wrapper subclass.

AOTAutograd traces through the subclass to plain tensors, where the bit is honoured, so
``aot_function`` and ``torch.compile(backend="aot_eager")`` give the plain tensor's answer.

Shown by optests' ``subclass`` call pattern (every tensor input wrapped as
``TwoTensor(x, x.clone())``): ``fft.hfftn`` sample 1 (a real float32 input), forward stage,
static and dynamic; the compiled output is the one that matches plain tensors."""

import torch
from functorch.compile import aot_function, nop
from torch.testing._internal.two_tensor import TwoTensor
from torch.utils._python_dispatch import TorchDispatchMode


class Calls(TorchDispatchMode):
    """Logs each ATen call with whether its first tensor argument has the conjugate bit."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        first = next(a for a in args if isinstance(a, torch.Tensor))
        print(f"    {func!s:24} on {type(first).__name__:9} is_conj={first.is_conj()}")
        return func(*args, **(kwargs or {}))


def f(x):
    return torch.fft.hfftn(x)


print("torch", torch.__version__)
torch.manual_seed(0)
x = torch.randn(4, 6)
plain = f(x)
eager = f(TwoTensor(x, x.clone()))
compiled = aot_function(f, nop)(TwoTensor(x, x.clone()))
dynamo = torch.compile(f, backend="aot_eager", fullgraph=True)(TwoTensor(x, x.clone()))
for name, out in (("eager TwoTensor", eager), ("aot_function TwoTensor", compiled), ("torch.compile(aot_eager)", dynamo)):
    diff = max((half - plain).abs().max().item() for half in (out.a, out.b))
    print(f"{name:26} equals plain hfftn: {diff < 1e-4} (max abs diff {diff:.4g})")
z = TwoTensor(x, x.clone()).to(torch.complex64).conj()
print("TwoTensor.conj(): wrapper is_conj", z.is_conj(), "| inner is_conj", z.a.is_conj())
print("plain tensor's calls:")
with Calls():
    f(x)
print("TwoTensor's calls:")
with Calls():
    f(TwoTensor(x, x.clone()))
