"""AOTAutograd: ``torch.svd`` with an ``out=`` V in other strides is resized, written wrong or refused.

Eager writes ``torch.svd(x, out=(U, S, V))`` into out tensors of the right shape whatever their
strides. Compiled by AOTAutograd (no-op compilers, ``keep_inference_input_mutations=True`` as
``torch.compile`` traces inference graphs), with U and S plain and only V in other strides than
the op's own:
- an empty input (``x`` is 0 x 3, ``some=False``) and a transposed 3 x 3 V: V comes back resized
  to 0 x 0 (eager keeps it 3 x 3 and writes the identity);
- a batch of square inputs (``some=True``) and a V over every other element of a buffer: V holds
  other values than eager's, silently;
- a batch with an empty last dimension and an empty V with other strides: the call fails with a
  ``setStorage`` error that names U's shape.
Dynamo refuses a non-contiguous ``out=`` list (the last line: a graph break, so ``torch.compile``
without ``fullgraph`` runs eager there); ``aot_function`` and ``aot_module`` users get the
answers above. Found by optests' ``out`` call pattern (``out-2``: an ``out=`` that is not dense)."""

import torch
from functorch.compile import aot_function, nop


def every_other(*shape):
    """A tensor of ``shape`` over every other element of a zeroed buffer (not contiguous)."""
    n = 1
    for s in shape:
        n *= s
    strides, step = [], 2
    for s in reversed(shape):
        strides.insert(0, step)
        step *= s
    return torch.zeros(2 * n).as_strided(shape, strides)


def svd_into(some):
    def f(x, U, S, V):
        return torch.svd(x, some=some, out=(U, S, V))

    return f


def run(name, x, some, u, s, make_v):
    f = svd_into(some)
    eager_v, compiled_v = make_v(), make_v()
    f(x, u.clone(), s.clone(), eager_v)
    compiled = aot_function(f, nop, nop, keep_inference_input_mutations=True)
    try:
        compiled(x, u.clone(), s.clone(), compiled_v)
    except Exception as e:
        print(f"{name}: compiled raised {type(e).__name__}: {str(e).splitlines()[0][:160]}")
        return
    if eager_v.shape != compiled_v.shape:
        print(f"{name}: V.shape eager {tuple(eager_v.shape)}, compiled {tuple(compiled_v.shape)}")
    elif not torch.allclose(eager_v, compiled_v, atol=1e-4):
        diff = float((eager_v - compiled_v).abs().max())
        print(f"{name}: V differs, max abs diff {diff:.4g} (eager V[0, 0] = {eager_v[0, 0].tolist()}, compiled {compiled_v[0, 0].tolist()})")
    else:
        print(f"{name}: V as eager's")


print("torch", torch.__version__)
torch.manual_seed(0)
run("empty input, V transposed", torch.empty(0, 3), False, torch.empty(0, 0), torch.empty(0), lambda: torch.zeros(3, 3).mT)
square = torch.randn(3, 3, 3)
run("batch 3x3x3, V every other element", square, True, torch.empty(3, 3, 3), torch.empty(3, 3), lambda: every_other(3, 3, 3))
run("batch 3x3x0, empty V in other strides", torch.empty(3, 3, 0), False, torch.empty(3, 3, 3), torch.empty(3, 0), lambda: torch.empty_strided((3, 0, 0), (2, 2, 2)))
try:
    torch.compile(svd_into(True), backend="aot_eager", fullgraph=True)(square, torch.empty(3, 3, 3), torch.empty(3, 3), every_other(3, 3, 3))
    print("torch.compile(fullgraph=True): compiled")
except Exception as e:
    print(f"torch.compile(fullgraph=True): {type(e).__name__}: {str(e).splitlines()[0][:120]}")
