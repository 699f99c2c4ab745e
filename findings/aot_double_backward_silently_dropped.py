"""AOTAutograd: a double backward through a compiled function whose backward saves no input
drops the second-order term silently, instead of raising "does not currently support double
backward".

``torch.exp`` (its backward saves the output), compiled by AOTAutograd: with
``create_graph=True`` the first-order gradient gets a grad_fn, but that node
(``CompiledFunctionBackwardBackward``, which only raises) hangs off a dummy tensor that
AOTAutograd prepends when no saved tensor requires grad, not off ``x``. So
``torch.autograd.grad(..., x)`` never reaches the raising node: a gradient penalty
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
the input and raises as documented."""

import torch
from functorch.compile import aot_function, min_cut_rematerialization_partition, nop

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
