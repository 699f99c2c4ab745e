"""AOTAutograd: ``torch.linalg.matrix_rank(A, out=out)`` compiles to a call that never writes
``out`` and returns its stale value. A silent wrong answer.

In eager, ``matrix_rank`` writes the rank into ``out`` and returns ``out``. Compiled by
AOTAutograd (``aot_function``, no-op compilers, ``keep_inference_input_mutations=True`` as
``torch.compile`` traces inference graphs), or by ``torch.compile(..., fullgraph=True)`` with the
``aot_eager`` backend or the default inductor, the traced graph records no mutation of ``out``: the call leaves ``out`` as it
was and returns it, here -7 where eager gives 3. The same with an input that requires grad, and
with an ``out=`` that is not dense. The functional call (no ``out=``) is right.

Found by optests' ``out`` call pattern: ``linalg.matrix_rank``'s ``out-0`` (an ``out=`` of the
right size) and ``out-2`` (not dense) fail the mutation check ("traced mutation of
kwargs['out']=none, but expected a mutation"), static and dynamic."""

import torch
from functorch.compile import aot_function, nop


def rank(a, out):
    return torch.linalg.matrix_rank(a, out=out)


print("torch", torch.__version__)
torch.manual_seed(0)
a = torch.randn(3, 3)
calls = {
    "eager": rank,
    "aot_function": aot_function(rank, nop, nop, keep_inference_input_mutations=True),
    "torch.compile(aot_eager)": torch.compile(rank, backend="aot_eager", fullgraph=True),
    "torch.compile(inductor)": torch.compile(rank, fullgraph=True),
}
for name, call in calls.items():
    out = torch.full((), -7, dtype=torch.int64)
    returned = call(a, out)
    print(f"{name:25} out={out.item()}, returned {returned.item()}")
print("functional, compiled:", torch.compile(torch.linalg.matrix_rank, backend="aot_eager", fullgraph=True)(a).item())
