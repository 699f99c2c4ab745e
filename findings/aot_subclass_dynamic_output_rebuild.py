"""AOTAutograd: a tensor subclass input with dynamic shapes, and ``torch.sgn`` of a float tensor
or ``torch.split`` into chunks of unequal size: the compiled call fails while it rebuilds the
subclass outputs from the graph's plain ones.

``x`` is a ``TwoTensor`` (``torch.testing._internal.two_tensor``) of a float32 [5, 5] that
requires grad, compiled by AOTAutograd (``aot_function``, no-op compilers) with ``dynamic=True``.
Tracing succeeds; the first call then raises inside AOTAutograd's generated subclass wrapper
(``codegen(subclass_wrapper)``):
- ``torch.sgn(x)``: ``IndexError: tuple index out of range`` on 2.13, and ``AssertionError:
  could not match output layout with optional SymInt outputs`` on 2.15;
- ``torch.split(x, 2)`` (chunks of 2, 2 and 1 rows): ``TypeError: _make_wrapper_subclass():
  argument 'strides' must be tuple of ints, not tuple`` on 2.13 (``TwoTensor.__tensor_unflatten__``
  is given outer strides that are not ints); 2.15 runs it.
With static shapes, with a plain tensor, or with ``torch.sign`` and ``torch.chunk(x, 3)`` (the
same sizes as the split), it compiles and gives eager's answer. Compare pytorch/pytorch#185296
(open): a subclass output's SymInt outputs counted otherwise at trace and at run time.

Shown by optests' ``subclass`` call pattern (every tensor input wrapped as
``TwoTensor(x, x.clone())``), dynamic mode: ``sgn`` (backward stage: the forward alone,
its input detached, compiles) and ``split`` (trace stage)."""

import torch
from functorch.compile import aot_function, nop
from torch.testing._internal.two_tensor import TwoTensor


def sgn(x):
    return torch.sgn(x)


def split(x):
    return torch.split(x, 2)


def sign(x):
    return torch.sign(x)


def chunk(x):
    return torch.chunk(x, 3)


print("torch", torch.__version__)
torch.manual_seed(0)
plain = torch.randn(5, 5)
for f in (sgn, split, sign, chunk):
    for dynamic in (False, True):
        x = TwoTensor(plain, plain.clone()).requires_grad_()
        try:
            out = aot_function(f, nop, dynamic=dynamic)(x)
            outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
            expected = f(plain)
            expected = tuple(expected) if isinstance(expected, (tuple, list)) else (expected,)
            same = all(torch.equal(o.a, e) and torch.equal(o.b, e) for o, e in zip(outs, expected))
            outcome = f"ran, equal to eager: {same}"
        except Exception as error:
            outcome = f"raised {type(error).__name__}: {str(error).splitlines()[0]}"
        print(f"aot_function({f.__name__}, dynamic={dynamic!s:5}) on a TwoTensor: {outcome}")
