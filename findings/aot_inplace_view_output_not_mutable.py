"""AOTAutograd: an output that eager returns as a plain tensor comes back from the compiled
function as a view that autograd forbids mutating in place (pytorch/pytorch#90507, open).

``torch.quantile(x, q, dim=1)`` ends with an in-place view op on an intermediate
(``squeeze_``); eager's output is no view (``_is_view()`` is False), and ``out.mul_(2)`` works.
AOTAutograd functionalizes the in-place view into an out-of-place one, so the compiled
function's output is a view of an intermediate made inside the ``autograd.Function``, and
``out.mul_(2)`` raises "Output 0 of CompiledFunction is a view and is being modified inplace".

Shown by optests' ``outputs`` call pattern (each output mutated in place after the call), forward
stage: ``quantile``, ``nanquantile``, ``stft``."""

import torch
from functorch.compile import aot_function, nop


def f(x, q):
    return torch.quantile(x, q, dim=1)


torch.manual_seed(0)
q = torch.tensor([0.25, 0.5])
print("torch", torch.__version__)
for name, fn in (("eager", f), ("aot_function", aot_function(f, nop))):
    x = torch.randn(5, 5, requires_grad=True)
    out = fn(x, q)
    try:
        out.mul_(2)
        result = "works"
    except RuntimeError as e:
        result = f"raised RuntimeError: {str(e).split('. ')[0]}"
    print(f"{name:12} output is a view: {out._is_view()!s:5} out.mul_(2): {result}")
