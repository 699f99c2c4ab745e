"""AOTAutograd: a tensor subclass input with dynamic shapes, and an op whose backward builds a
mask or a triangle (``cumprod``, ``householder_product``, ``slice_scatter``,
``fractional_max_pool2d``): tracing the joint graph fails with ``AssertionError: Node where_2
was invalid, but is output``.

``torch.cumprod(x, 0)`` of a ``TwoTensor`` (``torch.testing._internal.two_tensor``) that
requires grad, compiled by AOTAutograd (``aot_function``, no-op compilers) with
``dynamic=True``: the first call raises, with the default partitioner and with the min-cut one,
and ``torch.compile(backend="aot_eager", dynamic=True)`` raises the same way. With static shapes,
or with a plain tensor input, it compiles and gives eager's gradient. The other ops below fail
alike in optests' sweep, each naming another node (``where``, ``tril``, ``slice_scatter``, the
pooling backward); the script shows ``cumprod``.

Shown by optests' ``subclass`` call pattern (every tensor input wrapped as
``TwoTensor(x, x.clone())``), dynamic mode, backward stage: ``cumprod``, ``masked.cumprod``
(``where``), ``linalg.householder_product`` and ``ormqr`` (``tril``), ``slice_scatter``
(``slice_scatter``), ``nn.functional.fractional_max_pool2d`` (its backward). The same
assertion, with plain tensors and another graph, is pytorch/pytorch#164186 (open)."""

import torch
from functorch.compile import aot_function, default_partition, min_cut_rematerialization_partition, nop
from torch.testing._internal.two_tensor import TwoTensor


def f(x):
    return torch.cumprod(x, 0)


def gradient(fn, wrap):
    torch.manual_seed(0)
    a = torch.randn(5, 5)
    x = (TwoTensor(a, a.clone()) if wrap else a).requires_grad_()
    (g,) = torch.autograd.grad(fn(x).sum(), x)
    return g.a if wrap else g


print("torch", torch.__version__)
expected = gradient(f, wrap=False)
print("eager, TwoTensor: gradient equals the plain tensor's:", torch.allclose(gradient(f, wrap=True), expected))
calls = [
    (
        f"aot_function dynamic={dynamic!s:5} {name:8} partitioner",
        aot_function(f, nop, nop, partition_fn=partition, dynamic=dynamic),
    )
    for dynamic in (False, True)
    for name, partition in (("default", default_partition), ("min-cut", min_cut_rematerialization_partition))
]
calls.append(('torch.compile(backend="aot_eager", dynamic=True)', torch.compile(f, backend="aot_eager", dynamic=True)))
for label, compiled in calls:
    try:
        ok = torch.allclose(gradient(compiled, wrap=True), expected)
        print(f"{label}: gradient equals eager's: {ok}")
    except Exception as e:
        message = str(e).split("raised:")[-1].strip().splitlines()[0]
        print(f"{label}: raised {type(e).__name__}: {message}")
plain = aot_function(f, nop, nop, partition_fn=min_cut_rematerialization_partition, dynamic=True)
print(
    "aot_function dynamic=True, plain tensor input: gradient equals eager's:",
    torch.allclose(gradient(plain, wrap=False), expected),
)
