"""AOTAutograd cannot trace ``aten._native_batch_norm_legit.out`` (batch norm in training mode,
the out variant), even with ``out=`` tensors of the right size: "expand: the requested shape has
too few dimensions!".

Eager writes ``out``, ``save_mean`` and ``save_invstd`` (shapes [5, 5, 5], [5], [5]) and updates
the running statistics. ``aot_function`` (no-op compilers, ``keep_inference_input_mutations=True``
as ``torch.compile`` traces inference graphs) raises the error while tracing; so does
``torch.compile(..., backend="aot_eager", fullgraph=True)`` (``BackendCompilerFailed``). The
functional op compiles.

Found by optests' ``out`` call pattern: ``_native_batch_norm_legit``'s ``out-0`` (``out=`` of the
right size) and ``out-2`` (not dense) fail at the trace, static and dynamic.
Run: python findings/aot_batch_norm_legit_out_expand.py
"""

from collections.abc import Callable

import torch
from functorch.compile import aot_function, nop


def batch_norm_into(
    x: torch.Tensor,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    out: torch.Tensor,
    save_mean: torch.Tensor,
    save_invstd: torch.Tensor,
) -> tuple[torch.Tensor, ...]:
    return torch.ops.aten._native_batch_norm_legit.out(
        x, None, None, running_mean, running_var, True, 0.1, 1e-5, out=out, save_mean=save_mean, save_invstd=save_invstd
    )


def functional(x: torch.Tensor, running_mean: torch.Tensor, running_var: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return torch.ops.aten._native_batch_norm_legit(x, None, None, running_mean, running_var, True, 0.1, 1e-5)


print("torch", torch.__version__)
torch.manual_seed(0)
x = torch.randn(5, 5, 5)


def run(name: str, call: Callable[..., tuple[torch.Tensor, ...]], *outs: torch.Tensor) -> None:
    try:
        result = call(x, torch.zeros(5), torch.ones(5), *outs)
        print(f"{name:45} ran: shapes {[list(t.shape) for t in result]}")
    except Exception as e:
        lines = [line for line in str(e).splitlines() if line.strip()]
        print(f"{name:45} {type(e).__name__}: {' '.join(lines[:2])[:120]}")


def outs() -> tuple[torch.Tensor, ...]:
    return torch.empty(5, 5, 5), torch.empty(5), torch.empty(5)


run("eager, out=", batch_norm_into, *outs())
run("aot_function, out=", aot_function(batch_norm_into, nop, keep_inference_input_mutations=True), *outs())
run("torch.compile(aot_eager), out=", torch.compile(batch_norm_into, backend="aot_eager", fullgraph=True), *outs())
run("aot_function, functional", aot_function(functional, nop, keep_inference_input_mutations=True))
