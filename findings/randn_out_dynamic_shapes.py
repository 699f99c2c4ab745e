"""AOTAutograd with dynamic shapes cannot trace ``torch.randn(size, out=out)``: "Cannot call
storage_offset() on tensor with symbolic sizes/strides".

``out`` is a float32 tensor of the right size (10). Eager fills it. ``aot_function`` with
``dynamic=True`` (no-op compilers) and ``torch.compile(backend="aot_eager", dynamic=True)`` raise
while tracing: ``randn.out``'s composite kernel (``at::native::randn_out``, concrete sizes) calls
``out.resize_(size)``, and resizing the functionalized ``out``, whose sizes are symbolic, asks
for its storage offset, which a symbolic tensor cannot give. Static shapes trace it, and so do
``rand``, ``randint``, ``normal``, ``zeros``, ``ones``, ``full`` and ``empty`` with an ``out=``,
dynamic or not. A loud failure in the compiler, on an op eager runs.

Shown by optests' ``out`` call pattern (``out-0``: an ``out=`` of the right size, and ``out-2``:
one that is not dense), trace: ``randn``, dynamic."""

import torch
from functorch.compile import aot_function, nop


def randn_into(out):
    return torch.randn((10,), out=out)


def rand_into(out):
    return torch.rand((10,), out=out)


print("torch", torch.__version__)
torch.manual_seed(0)
print("eager randn(out=): filled", bool((randn_into(torch.zeros(10)) != 0).any()))
for name, f in (("randn", randn_into), ("rand", rand_into)):
    for dynamic in (False, True):
        try:
            aot_function(f, nop, dynamic=dynamic)(torch.zeros(10))
            outcome = "traced and ran"
        except RuntimeError as error:
            outcome = f"raised RuntimeError: {str(error).splitlines()[0]}"
        print(f"aot_function({name}(out=), dynamic={dynamic!s:5}): {outcome}")
try:
    torch.compile(randn_into, backend="aot_eager", dynamic=True, fullgraph=True)(torch.zeros(10))
    print('torch.compile(randn(out=), backend="aot_eager", dynamic=True): ran')
except Exception as error:  # Dynamo wraps the backend's error
    print(f'torch.compile(randn(out=), backend="aot_eager", dynamic=True): raised {type(error).__name__}')
