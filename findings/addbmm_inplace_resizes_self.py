"""Eager: ``x.addbmm_(batch1, batch2)`` on the CPU, with ``x`` of shape [1], resizes ``x`` to the
result's shape [5, 10] instead of refusing; AOTAutograd cannot trace the call.

In-place ops may not change their ``self``'s shape (PyTorch's broadcasting notes, "in-place
semantics"): ``x.addmm_(m1, m2)`` with the same ``x`` raises "Bad in-place call: input tensor size
[1] and output tensor size [5, 10] should match" since pytorch/pytorch#56233 was fixed.
``addbmm_`` resizes ``x`` (at most with a warning that resizing a non-empty output is deprecated).
``aot_function`` (no-op compilers) and ``torch.compile(backend="aot_eager")`` raise "expand: the
requested shape has too few dimensions!" while tracing. The eager call is the wrong one: it should refuse as ``addmm_`` does.

Shown by optests' ``inplace`` call pattern (the OpInfo's ``inplace_variant``) on ``addbmm``'s
samples whose ``input`` broadcasts ([1]), trace stage, static and dynamic."""

import logging

import torch
from functorch.compile import aot_function, nop

logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)  # its traceback of the same error


def addbmm_(x, b1, b2):
    return x.addbmm_(b1, b2)


def addmm_(x, m1, m2):
    return x.addmm_(m1, m2)


torch.manual_seed(0)
b1, b2 = torch.randn(3, 5, 4), torch.randn(3, 4, 10)
print("torch", torch.__version__)
cases = (
    ("eager addbmm_", addbmm_, (b1, b2)),
    ("eager addmm_", addmm_, (b1[0], b2[0])),
    ("aot_function addbmm_", aot_function(addbmm_, nop), (b1, b2)),
    ("torch.compile(aot_eager) addbmm_", torch.compile(addbmm_, backend="aot_eager", fullgraph=True), (b1, b2)),
)
for name, call, args in cases:
    x = torch.randn(1)
    try:
        call(x, *args)
        print(f"{name:34} ran: x is now {list(x.shape)}")
    except Exception as e:
        cause = "expand: the requested shape has too few dimensions!" if "too few dimensions" in str(e) else str(e)
        print(f"{name:34} {type(e).__name__}: {cause.splitlines()[0][:110]}")
