"""Inductor's decompositions drop eager's input checks: where eager raises on an invalid input,
a function compiled with them (``torch.compile`` with inductor, or with
``aot_eager_decomp_partition``, which applies the same decompositions) silently returns a value.

- ``torch.bernoulli(p)`` with a probability outside [0, 1] (NaN, 1.5): eager raises "Expected
  p_in >= 0 && p_in <= 1"; compiled, it draws as if p were clamped (or compares NaN);
- ``F.binary_cross_entropy(x, y)`` with an input outside [0, 1] (NaN, 1.5): eager raises "all
  elements of input should be between 0 and 1"; compiled, it returns NaN or a loss;
- ``F.max_unpool2d`` with a negative index: eager raises "Found an invalid max index: -1";
  compiled, it scatters to a wrapped position.

``aot_eager`` (no decompositions) raises as eager does. Found by optests' ``special`` transform
(NaN, infinities and the dtype's extremes; -1 as the last element of an index argument) under
``aot_eager_decomp_partition``: ``bernoulli`` (5 samples), ``nn.functional.binary_cross_entropy``
(4), ``nn.functional.max_unpool1d/2d/3d`` and their ``.grad`` variants (12), forward."""

import torch
import torch.nn.functional as F

print("torch", torch.__version__)
torch.manual_seed(0)
x = torch.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
cases = {
    "bernoulli(p=[0.5, nan])": (lambda p: torch.bernoulli(p), (torch.tensor([0.5, float("nan")]),)),
    "bernoulli(p=[0.5, 1.5])": (lambda p: torch.bernoulli(p), (torch.tensor([0.5, 1.5]),)),
    "binary_cross_entropy(x=[0.5, nan])": (
        lambda a, b: F.binary_cross_entropy(a, b),
        (torch.tensor([0.5, float("nan")]), torch.tensor([1.0, 0.0])),
    ),
    "binary_cross_entropy(x=[0.5, 1.5])": (
        lambda a, b: F.binary_cross_entropy(a, b),
        (torch.tensor([0.5, 1.5]), torch.tensor([1.0, 0.0])),
    ),
    "max_unpool2d(indices=[0, 5, 10, -1])": (
        lambda v, i: F.max_unpool2d(v, i, 2),
        (x, torch.tensor([[[[0, 5], [10, -1]]]])),
    ),
}
for name, (fn, args) in cases.items():
    for backend in ("eager", "aot_eager", "aot_eager_decomp_partition", "inductor"):
        call = fn if backend == "eager" else torch.compile(fn, backend=backend, fullgraph=True)
        try:
            out = call(*args)
        except Exception as e:
            said = f"raises {type(e).__name__}: {str(e).splitlines()[0][:60]}"
        else:
            said = f"returns {out.flatten().tolist()}"
        print(f"{name:38} {backend:27} {said}")
