"""AOTAutograd: `F.mse_loss`, `F.huber_loss` and `F.smooth_l1_loss` with `reduction="mean"` of empty
inputs, compiled with a backward, fail while tracing it: the decompositions of their backwards
divide by `input.numel()`, 0 here, in Python (`mse_loss_backward`: `norm = 2.0 / input.numel()`),
and raise `ZeroDivisionError: float division by zero`, in `aot_function` and in
`torch.compile(backend="aot_eager")` (`BackendCompilerFailed`), on a fresh compile as on a later
call of one compiled after non-empty inputs. Eager gives a NaN loss and an empty gradient, and so
does the compiled `F.l1_loss`, whose backward is `mean`'s.
A training loop that meets an empty batch works in eager and fails compiled.

Found by optests' `sequence-0` pattern (other sizes, then 1 and 0 for each size, on one compiled
function): `nn.functional.mse_loss`, `nn.functional.huber_loss`, `nn.functional.smooth_l1_loss`,
call 3 (sizes [0] after [1]).
Run: python findings/loss_backward_decomposition_empty_mean.py
"""

import warnings

import torch
import torch._dynamo
import torch.nn.functional as F  # noqa: N812
from functorch.compile import aot_function, nop

warnings.filterwarnings("ignore", "Error detected in")  # anomaly mode's traceback, printed while tracing
torch.manual_seed(0)


def loss_and_grad(f, n):
    x = torch.randn(n, requires_grad=True)
    loss = f(x, torch.zeros(n))
    loss.backward()
    return f"loss {loss.item():.4g}, grad of shape {tuple(x.grad.shape)}"


print("torch", torch.__version__)
for name, loss in {
    "mse_loss": F.mse_loss,
    "huber_loss": F.huber_loss,
    "smooth_l1_loss": F.smooth_l1_loss,
    "l1_loss": F.l1_loss,
}.items():
    print(f"{name:15} {'eager, 0 elements:':38} {loss_and_grad(loss, 0)}")
    torch._dynamo.reset()
    compiled = torch.compile(loss, backend="aot_eager", fullgraph=True)
    for way, f, sizes in (
        ("aot_function", aot_function(loss, nop), (0,)),
        ("torch.compile, after 3 and 1", compiled, (3, 1, 0)),
    ):
        try:
            said = [loss_and_grad(f, n) for n in sizes][-1]
        except Exception as e:
            cause = "ZeroDivisionError: float division by zero" if "ZeroDivision" in str(e) else str(e).splitlines()[0]
            said = f"raises {type(e).__name__}" + ("" if cause.startswith(type(e).__name__) else f" ({cause})")
        print(f"{name:15} {way + ', 0 elements:':38} {said}")
