"""Inductor (CPU): floating-point floor division is not eager's. ``torch.floor_divide(a, b)``
(also ``a // b`` and ``torch.div(a, b, rounding_mode="floor")``) compiled by inductor computes
``floor(a / b)``, where eager (and Python) take ``fmod`` first: a quotient just below an integer
that rounds up to it in floating point comes out one too high (``1.0 // 0.1``: eager 9, compiled
10; ``6.0 // 0.2``: 29 against 30), a negative subnormal over a larger divisor gives -0 where eager
gives -1 (``-1e-45 // 3``: the quotient underflows), and an infinite dividend gives an infinity
where eager gives NaN (``inf // 2``; 2.15 gives NaN as eager does). ``aot_eager`` matches eager.
Silent wrong values (pytorch/pytorch#197895, open; the infinities on CUDA: #188048).

Found by optests' ``special`` transform (values just below and above integers, infinities) under
the ``inductor`` backend: ``floor_divide`` (``special-1``: infinities, forward; ``special-3``:
subnormals, on the randomized rerun)."""

import torch

print("torch", torch.__version__)
a = torch.tensor([1.0, 0.5, 6.0, -1e-45, float("inf"), -float("inf"), 7.0])
b = torch.tensor([0.1, 0.1, 0.2, 3.0, 2.0, 2.0, 2.0])


def floor_div(a, b):
    return torch.floor_divide(a, b)


def div_floor(a, b):
    return torch.div(a, b, rounding_mode="floor")


print(f"{'a':>21}", *(f"{v:>10.4g}" for v in a.tolist()))
print(f"{'b':>21}", *(f"{v:>10.4g}" for v in b.tolist()))
print(f"{'python //':>21}", *(f"{float(x) // float(y):>10.4g}" for x, y in zip(a.tolist(), b.tolist())))
for fn in (floor_div, div_floor):
    calls = {
        "eager": fn,
        "aot_eager": torch.compile(fn, backend="aot_eager", fullgraph=True),
        "inductor": torch.compile(fn, fullgraph=True),
    }
    for name, call in calls.items():
        out = call(a, b)
        print(f"{fn.__name__ + ' ' + name:>21}", *(f"{v:>10.4g}" for v in out.tolist()))
