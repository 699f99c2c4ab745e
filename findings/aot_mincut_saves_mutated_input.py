"""AOTAutograd's min-cut partitioner saves an input the function mutates in place, so the
backward fails on the bumped version counter where eager's backward succeeds.

``x.sin_()`` on a non-leaf input ``x`` that requires grad: AOTAutograd traces the joint graph
with a clone of ``x`` (the backward needs ``cos`` of the value before the mutation), and
``min_cut_rematerialization_partition`` chooses to save the input ``x`` itself and recompute
the clone in the backward. The mutation is applied to ``x`` after the compiled forward returns
(``x.copy_(...)``), so the saved ``x`` is at a newer version and the backward raises "one of the
variables needed for gradient computation has been modified by an inplace operation". Eager
(and ``default_partition``, which saves the clone) give ``cos(x)``. The same for ``cos_`` and
``pow_``, with ``x`` a view (``base[1:]``) or not; ``torch.compile(backend="aot_eager")`` alike.
Known upstream: pytorch/pytorch#185497 (fix proposed in #185876).

Seen by hand, trying optests' ``inplace`` call pattern (the op's in-place variant) on a non-leaf
input that requires grad (``leaf * 1``); backward stage. (optests' own ``inplace-1`` sample passes
a view of a leaf, on which eager refuses every in-place op, so it does not reach this.)"""

import torch
from functorch.compile import aot_function, default_partition, min_cut_rematerialization_partition, nop


def f(x):
    return x.sin_()


def run(call):
    leaf = torch.linspace(-1, 1, 5, requires_grad=True)
    x = leaf * 1  # a non-leaf that requires grad
    call(x)
    try:
        return torch.autograd.grad(x.sum(), leaf)[0]
    except RuntimeError as e:
        return "raised RuntimeError: " + str(e).split(":")[0]


print("torch", torch.__version__)
calls = [("eager", f)]
for partition in (min_cut_rematerialization_partition, default_partition):
    compiled = aot_function(f, nop, nop, partition_fn=partition, keep_inference_input_mutations=True)
    calls.append((f"aot_function, {partition.__name__}", compiled))
calls.append(("torch.compile(backend='aot_eager')", torch.compile(f, backend="aot_eager")))
for name, call in calls:
    print(f"{name:50}", run(call))
