"""AOTAutograd: the gradient of one output of a multi-output function w.r.t. an input that output
does not depend on is a zero tensor where eager gives ``None``.

The compiled function is one autograd node for all its outputs, and autograd fills the other
outputs' gradients with zeros before the compiled backward runs, so every input reachable from
any output gets a (zero) gradient: ``torch.autograd.grad(outs[k], inputs, allow_unused=True)``
returns zeros where eager returns ``None``, and the backward of the unused branches is computed
(pytorch/pytorch#131794). Shown for ``(x.sin(), y.cos())`` and for one op, ``torch.linalg.slogdet``
(its ``sign`` output, whose gradient w.r.t. the input is ``None`` in eager); also with
``torch.compile(backend="aot_eager")``.

Shown by optests' ``backward`` call pattern (``backward-0``: the gradient of each output alone,
``allow_unused=True``)."""

import torch
from functorch.compile import aot_function, min_cut_rematerialization_partition, nop


def two(x, y):
    return x.sin(), y.cos()


def slogdet(a):
    return torch.linalg.slogdet(a)


def show(name, grads):
    print(f"  {name:13}", [None if g is None else f"tensor, all zero: {bool((g == 0).all())}" for g in grads])


print("torch", torch.__version__)
for f, shapes, k, what in (
    (two, [(3,), (3,)], 0, "grad of x.sin() w.r.t. (x, y)"),
    (slogdet, [(3, 3)], 0, "grad of slogdet's sign w.r.t. A"),
):
    print(what)
    compiled = aot_function(f, nop, nop, partition_fn=min_cut_rematerialization_partition, keep_inference_input_mutations=True)
    for name, call in (("eager", f), ("aot_function", compiled), ("aot_eager", torch.compile(f, backend="aot_eager"))):
        torch.manual_seed(0)
        inputs = [torch.randn(s, requires_grad=True) for s in shapes]
        outs = call(*inputs)
        show(name, torch.autograd.grad(outs[k].sum(), inputs, allow_unused=True))
