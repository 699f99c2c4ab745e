"""AOTAutograd: ``torch.lu(A, out=(LU, pivots))`` with dynamic shapes fails an internal assert
("dispatch_on_subclass called with NO overloaded args").

``torch.lu`` with an ``out=`` tuple of the right sizes runs in eager and compiles with static
shapes. Compiled by AOTAutograd (``aot_function``, no-op compilers) with ``dynamic=True``, the
first call raises ``RuntimeError: 0 INTERNAL ASSERT FAILED at
".../torch/csrc/utils/python_arg_parser.cpp"``. ``torch.linalg.lu_factor`` with the same
``out=`` compiles.

Shown by optests' ``out`` call pattern (``out-0``: an ``out=`` of the right size, and ``out-2``:
one that is not dense), dynamic mode, trace stage: ``lu``."""

import warnings

import torch
from functorch.compile import aot_function, nop

warnings.simplefilter("ignore")  # torch.lu is deprecated in favour of torch.linalg.lu_factor


def lu(a, lu_out, pivots):
    return torch.lu(a, out=(lu_out, pivots))


def lu_factor(a, lu_out, pivots):
    return torch.linalg.lu_factor(a, out=(lu_out, pivots))


torch.manual_seed(0)
a = torch.randn(5, 5)
print("torch", torch.__version__)
for name, fn in (("torch.lu", lu), ("torch.linalg.lu_factor", lu_factor)):
    expected = fn(a, torch.empty(5, 5), torch.empty(5, dtype=torch.int32))
    for dynamic in (False, True):
        try:
            got = aot_function(fn, nop, dynamic=dynamic)(a, torch.empty(5, 5), torch.empty(5, dtype=torch.int32))
            print(f"{name:22} dynamic={dynamic!s:5} equal to eager: {all(torch.equal(g, e) for g, e in zip(got, expected))}")
        except Exception as e:
            print(f"{name:22} dynamic={dynamic!s:5} raised {type(e).__name__}: {str(e).splitlines()[0][:110]}")
