"""Eager ``torch.native_group_norm`` drops the gradient of its ``mean`` and ``rstd`` outputs:
they require grad, but a loss on them gives the input no gradient (``None``, or zeros beside the
first output). A silent wrong gradient in eager.

``native_group_norm`` returns ``(out, mean, rstd)``, all three with ``NativeGroupNormBackward0``
as their ``grad_fn``. Its derivative formula uses the gradient of ``out`` alone, so the gradients
of ``mean`` and ``rstd`` never reach the input, also with ``create_graph=True``. The true gradient
of a group's mean is ``1 / (elements in the group)`` for each element (here 1/9);
``torch.autograd.gradcheck`` fails. Compiled code decomposes the op into primitives and gives the
true gradient (``aot_function``, ``torch.compile(backend="aot_eager")``). ``native_layer_norm``
does it right another way: its ``mean`` and ``rstd`` outputs do not require grad.

Fixed in 2.15, whose eager gives the true gradient. The tracker's work on it:
pytorch/pytorch#183980 (``native_group_norm_backward`` taking the gradients of all three
outputs) and #190245 (the backward reworked around it).

Found by optests' ``backward`` call pattern (``backward-0``: the gradient of each output alone):
``native_group_norm``, "grad of args[0] (out 1 alone)=tensor([[[0.1111, ...]]]), but expected
None", static and dynamic.
Run: python findings/native_group_norm_mean_rstd_grad_dropped.py
"""

import torch
from functorch.compile import aot_function, nop


def group_norm(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return torch.native_group_norm(x, None, None, 2, 6, 3, 2, 1e-5)  # N=2, C=6, HxW=3, 2 groups


def mean_of_groups(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(2, 2, 9).mean(-1)  # what out 1 (mean) is


def grad_of(out: torch.Tensor, x: torch.Tensor) -> str:
    g = torch.autograd.grad(out.sum(), x, allow_unused=True)[0]
    return "None" if g is None else f"{g.flatten()[:3].tolist()} ..."


print("torch", torch.__version__)
torch.manual_seed(0)
x = torch.randn(2, 6, 3, dtype=torch.float64, requires_grad=True)
out, mean, rstd = group_norm(x)
print("mean.requires_grad:", mean.requires_grad, type(mean.grad_fn).__name__)
print("the mean, by its formula:   ", torch.allclose(mean.flatten(), mean_of_groups(x).flatten()))
print("grad of mean, true:         ", grad_of(mean_of_groups(x), x))
print("grad of mean, eager:        ", grad_of(group_norm(x)[1], x))
print("grad of rstd, eager:        ", grad_of(group_norm(x)[2], x))
g = torch.autograd.grad(group_norm(x)[1].sum(), x, allow_unused=True, create_graph=True)[0]
print("grad of mean, eager, create_graph=True:", "None" if g is None else f"{g.flatten()[:3].tolist()} ...")
o = group_norm(x)
print("grad of 0 * out + mean, eager:", torch.autograd.grad((0 * o[0]).sum() + o[1].sum(), x)[0].abs().max().item())
print("grad of mean, aot_function: ", grad_of(aot_function(group_norm, nop)(x)[1], x))
print("grad of mean, torch.compile:", grad_of(torch.compile(group_norm, backend="aot_eager", fullgraph=True)(x)[1], x))
check = torch.autograd.gradcheck(lambda t: group_norm(t)[1], (x,), raise_exception=False)
print("gradcheck of mean, eager:   ", check)
