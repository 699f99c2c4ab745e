"""`torch.var_mean` and `torch.std_mean` of an empty tensor: eager's mean is NaN (0/0, as
`torch.mean` gives), but compiled by inductor the mean is 0 (the variance stays NaN). The
call alone, on a fresh compile, does it; `torch.mean` itself stays NaN, and `aot_eager` and
`aot_eager_decomp_partition` return eager's NaN.

Found by optests' `sequence-0` pattern (the sample, then other sizes, then 1 and 0 for each size,
on one compiled function) under `inductor`: `var_mean.unbiased` and `std_mean.unbiased`, size
[0, 0] after [1, 1]; a fresh compile does the same.
Run: python findings/inductor_var_mean_empty_mean_zero.py
"""

import warnings

import torch
import torch._dynamo

warnings.simplefilter("ignore")  # var's "degrees of freedom <= 0" on an empty tensor, eager's own
print("torch", torch.__version__)
x = torch.randn(0, 0)
for name, f in (
    ("var_mean", lambda t: torch.var_mean(t, unbiased=True)),
    ("std_mean", lambda t: torch.std_mean(t, unbiased=True)),
    ("mean", lambda t: (torch.mean(t),)),
):
    print(f"{name:8} eager{'':22} {[v.item() for v in f(x)]}")
    for backend in ("aot_eager", "aot_eager_decomp_partition", "inductor"):
        torch._dynamo.reset()
        print(f"{name:8} {backend:27} {[v.item() for v in torch.compile(f, backend=backend, fullgraph=True)(x)]}")
