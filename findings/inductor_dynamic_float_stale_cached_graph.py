"""A function of a Python float, compiled by inductor on inputs that require grad and called
again with other values of the float (which Dynamo then makes automatically dynamic): from the
second value on, the compiled code keeps using one old value, silently. `F.hardtanh(x, -0.5,
max_val)` clamps at the first new `max_val` (0.75) when called with 0.6 and 2.0; `torch.renorm(x,
2, 1, maxnorm)`'s forward is right but its gradient is computed with the first new `maxnorm`
(0.75), so it is scaled by 0.75 / maxnorm.

The stale value comes from inductor's compile caches (the FX graph cache and the AOTAutograd
cache): the recompiled graph looks the same for every value, so the cache returns the artifact
with the first value baked in. With those caches off, every call gives eager's values; without
grad, and under `aot_eager` and `aot_eager_decomp_partition`, too. The caches are on disk: a later
process sharing the cache folder gets the old value on its first new value, one it never saw
(the second part below). pytorch/pytorch#194976 reports the same of `clamp`; torch 2.15 gives
eager's values here.

Found by optests' `sequence-4` pattern (the sample, then other Python scalars, on one compiled
function) under `inductor`: `nn.functional.hardtanh` (`max_val` 0.75 after 1.0) and `renorm`
(`maxnorm` 0.75 after 1.0); and by `sequence-10` (the op's samples in order): `hardtanh`'s second
sample after its first.
Run: python findings/inductor_dynamic_float_stale_cached_graph.py
"""

import os
import subprocess
import sys
import tempfile

if __name__ == "__main__" and "--child" not in sys.argv:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()  # an empty cache: what follows does not depend on earlier runs

import torch
import torch._dynamo
import torch.nn.functional as F


def hardtanh(x, value):
    return F.hardtanh(x, -0.5, value)


def renorm(x, value):
    return torch.renorm(x, 2, 1, value)


def compare(f, values, backend, caches=True):
    """One compiled function called once per value: its forward and gradient against eager's."""
    torch._dynamo.reset()
    compiled = torch.compile(f, backend=backend, fullgraph=True)
    torch.manual_seed(0)
    x0 = torch.randn(5, 5, 5) * 3
    rows = []
    with torch._inductor.config.patch(fx_graph_cache=caches), torch._functorch.config.patch(enable_autograd_cache=caches):
        for value in values:
            x, xe = x0.clone().requires_grad_(), x0.clone().requires_grad_()
            out, expected = compiled(x, value), f(xe, value)
            grad, expected_grad = (torch.autograd.grad(o.sum(), t)[0] for o, t in ((out, x), (expected, xe)))
            rows.append(
                f"{f.__name__:8} {backend:27} caches {'on ' if caches else 'off'}  value={value:<4}  forward as eager: "
                f"{torch.allclose(out, expected)!s:5}  gradient as eager: {torch.allclose(grad, expected_grad, atol=1e-6)!s:5}"
                f"  (largest output {out.max().item():.2f}, eager {expected.max().item():.2f}; "
                f"gradient compiled/eager {(grad.abs().sum() / expected_grad.abs().sum()).item():.3f})"
            )
    return rows


if __name__ == "__main__" and "--child" in sys.argv:  # the second part's processes: one cache folder, other values
    print("\n".join(compare(hardtanh, [float(v) for v in sys.argv[2:]], "inductor")))
    sys.exit()

print("torch", torch.__version__)
for f in (hardtanh, renorm):
    for backend in ("aot_eager", "aot_eager_decomp_partition", "inductor"):
        print("\n".join(compare(f, (0.5, 0.75, 1.0, 0.6, 0.25), backend)))
    print("\n".join(compare(f, (0.5, 0.75, 1.0, 0.6, 0.25), "inductor", caches=False)))

print("\nTwo processes, one cache folder: the first calls with 0.5 and 0.75, the second with 0.5, 0.6 and 2.0")
shared = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=tempfile.mkdtemp())
for values in (["0.5", "0.75"], ["0.5", "0.6", "2.0"]):
    run = subprocess.run([sys.executable, __file__, "--child", *values], env=shared, capture_output=True, text=True)
    print(run.stdout.rstrip())
