"""AOTAutograd: a double backward through a compiled function whose backward saves no input
drops the second-order term silently, instead of raising "does not currently support double
backward".

``torch.exp`` (its backward saves the output), compiled by AOTAutograd: with
``create_graph=True`` the first-order gradient gets a grad_fn, but that node
(``CompiledFunctionBackwardBackward``, which only raises) hangs off a dummy tensor that
AOTAutograd prepends when no saved tensor requires grad, not off ``x``. So
``torch.autograd.grad(..., x)`` never reaches the raising node (the dummy came with
pytorch/pytorch#181606, the fix of #181581, whose aim was to turn this silent case into the
error; it does so for ``.backward()`` alone): a gradient penalty
(``loss = out.sum() + g.pow(2).sum() / 2``) gets only its first term's gradient, with no error,
and the gradient of the gradient alone is ``None`` (``allow_unused=True``) where eager's is
``exp(x)``. Only ``loss.backward()``, which runs every node, raises the documented error. The same
for every op whose backward saves only outputs or intermediates (``relu``, ``sigmoid``, ``tanh``,
``sqrt``, ``exp``); an op whose backward saves the input (``sin``) raises as documented. Also with
``torch.compile(backend="aot_eager")``.

Shown by optests' ``backward`` call pattern (``backward-3``: double backward, the gradients with
``create_graph=True`` and then the gradient of their sum, ``allow_unused=True``): ``relu``'s
second-order gradient is ``None`` compiled, zeros in eager; so is every sample of
``nn.functional.max_pool1d`` (its backward saves only the indices), while ``max_pool2d``'s saves
the input and raises as documented.

A module's parameters too, where the second-order gradient is far from zero: a gradient penalty
over ``nn.MultiheadAttention``'s parameters (called through ``torch.func.functional_call``, the
parameters as inputs) gets ``None`` for ``in_proj_weight``'s second-order gradient, eager a
tensor, with the min-cut and the default partitioner alike. It is every sample of module_db's
``nn.MultiheadAttention`` (train and eval) at ``backward-3``."""

import torch
from functorch.compile import aot_function, default_partition, min_cut_rematerialization_partition, nop

f = torch.exp
compiled = aot_function(f, nop, nop, partition_fn=min_cut_rematerialization_partition, keep_inference_input_mutations=True)
dynamo = torch.compile(f, backend="aot_eager")


def run(how, call):
    x = torch.tensor([0.0, 0.5, 1.0], requires_grad=True)
    out = call(x)
    (g,) = torch.autograd.grad(out.sum(), x, create_graph=True)
    try:
        if how == "grad of grad":
            return torch.autograd.grad(g.sum(), x, allow_unused=True)[0]
        loss = out.sum() + g.pow(2).sum() / 2  # d/dx = exp(x) + exp(2x)
        if how == "penalty, autograd.grad":
            return torch.autograd.grad(loss, x)[0]
        loss.backward()
        return x.grad
    except RuntimeError as e:
        return "raised RuntimeError: " + str(e).splitlines()[0]


print("torch", torch.__version__)
for how in ("grad of grad", "penalty, autograd.grad", "penalty, backward()"):
    print(how)
    for name, call in (("eager", f), ("aot_function", compiled), ("aot_eager", dynamo)):
        print(f"  {name:13}", run(how, call))


print("nn.MultiheadAttention(3, 1): the second-order gradient of in_proj_weight, first 3 values")
torch.manual_seed(0)
mha = torch.nn.MultiheadAttention(3, 1)
params = {k: v.detach().clone().requires_grad_(True) for k, v in mha.named_parameters()}
query = torch.randn(2, 1, 3)


def attention(p, q):
    return torch.func.functional_call(mha, p, (q, q, q))[0]


for name, partition in (("eager", None), ("min-cut", min_cut_rematerialization_partition), ("default", default_partition)):
    call = attention if partition is None else aot_function(attention, nop, nop, partition_fn=partition)
    grads = torch.autograd.grad(call(params, query).sum(), list(params.values()), create_graph=True)
    penalty = sum(g.pow(2).sum() for g in grads)
    (gg,) = torch.autograd.grad(penalty, params["in_proj_weight"], allow_unused=True)
    print(f"  {name:13}", None if gg is None else gg.flatten()[:3].round(decimals=3))
