"""AOTAutograd drops the effect token when one tensor is passed for two arguments and one of them
is mutated: the call fails with ``TypeError: forward() missing 1 required positional argument:
'tangents_token'``.

An op with a side effect (here ``aten._linalg_check_errors``, which ``torch.linalg.solve``,
``inv`` and ``cholesky`` call to raise on a singular matrix) is traced as a ``with_effects`` node
that takes an effect token as a graph input. When the same tensor is passed for two arguments
and one of them is mutated, AOTAutograd traces a deduplicated function. Its graph still takes the
token (as a placeholder named ``tangents_token``), but the call that runs it passes none. Each
alone works: the duplicated, mutated input without the effectful op, and the effectful op without
the duplicate. With or without ``keep_inference_input_mutations``. With another input that
requires grad, the same lost token fails an assertion instead ("expected 0 forward output
tokens, got 1"). ``torch.compile`` is not affected (Dynamo passes the tensor once), so the bug is
that of AOTAutograd's own callers (``aot_function``, ``aot_module``), which must handle duplicated
inputs (pytorch/pytorch#85301).

Found by optests' ``out`` call pattern: ``linalg.solve``'s ``out-3`` (``out=`` is ``B``; eager's
answer is right there), static and dynamic. The compiled call raises; where ``B`` has elements, the
mutation check sees it first ("args[1] mutated=no, but expected yes"). Group 13: ``linalg.cholesky``
(``out=`` its input) and ``linalg.matrix_power`` with a negative power (which inverts first).
Run: python findings/aot_duplicated_mutated_input_effect_token.py
"""

from collections.abc import Callable

import torch
from functorch.compile import aot_function, nop


def solve_into(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    return torch.linalg.solve(a, b, out=out)


def scale_then_invert(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x.mul_(2)
    return torch.linalg.inv(x) + y


def scale_then_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x.mul_(2)
    return x + y


print("torch", torch.__version__)
torch.manual_seed(0)
a = torch.randn(3, 3) + 3 * torch.eye(3)
b = torch.randn(3, 3)


def run(name: str, f: Callable[..., torch.Tensor], *args: torch.Tensor) -> None:
    try:
        out = f(*args)
        print(f"{name:62} ran, sum {out.sum().item():.4f}")
    except Exception as e:
        print(f"{name:62} {type(e).__name__}: {str(e).splitlines()[0]}")


b1 = b.clone()
run("eager linalg.solve(a, b, out=b)", solve_into, a, b1, b1)
b1 = b.clone()
run("aot_function linalg.solve(a, b, out=b)", aot_function(solve_into, nop), a, b1, b1)
b1 = b.clone()
run(
    "aot_function linalg.solve(a, b, out=b), keep mutations",
    aot_function(solve_into, nop, keep_inference_input_mutations=True),
    a,
    b1,
    b1,
)
x = a.clone()
run("eager x.mul_(2); inv(x) + y, y is x", scale_then_invert, x, x)
x = a.clone()
run("aot_function x.mul_(2); inv(x) + y, y is x", aot_function(scale_then_invert, nop), x, x)
leaf = torch.randn(3, 3, requires_grad=True)
x = a.clone()
run("aot_function, another input requiring grad", aot_function(lambda x, y, z: scale_then_invert(x, y) * z, nop), x, x, leaf)
x = a.clone()
run("aot_function x.mul_(2); inv(x) + y, y another tensor", aot_function(scale_then_invert, nop), x, a.clone())
x = a.clone()
run("aot_function x.mul_(2); x + y, y is x (no effectful op)", aot_function(scale_then_add, nop), x, x)
x = a.clone()
run(
    "torch.compile(aot_eager) x.mul_(2); inv(x) + y, y is x",
    torch.compile(scale_then_invert, backend="aot_eager", fullgraph=True),
    x,
    x,
)
