"""AOTAutograd: ``torch.svd`` with a non-dense ``out=`` V is resized, refused or written wrong.

Eager writes ``torch.svd(x, out=(U, S, V))`` into out tensors of the right shape whatever their
strides. Compiled by AOTAutograd (no-op compilers, ``keep_inference_input_mutations=True`` as
``torch.compile`` traces inference graphs), a V that is not dense (every other element of a
buffer):
- of an empty input (``x`` is 0 x 3, ``some=False``, V 3 x 3) comes back resized to 0 x 0;
- of a batch of square inputs (``some=True``, every out not dense) holds other values than
  eager's V;
- of a batch with an empty last dimension fails the call (``setStorage ... out of bounds``).
Dynamo refuses non-contiguous ``out=`` lists (a graph break), so ``torch.compile`` falls back to
eager there; ``aot_function``/``aot_module`` users get the answers above. Found by optests'
``out`` call pattern (``out-2``: an ``out=`` that is not dense)."""

import torch
from functorch.compile import aot_function, nop


def f(x, U, S, V):
    return torch.svd(x, some=SOME, out=(U, S, V))


def sparse(*shape):
    """A tensor of ``shape`` over every other element of a zeroed buffer (not dense)."""
    n = 1
    for s in shape:
        n *= s
    base = torch.zeros(2 * n)
    strides, step = [], 2
    for s in reversed(shape):
        strides.insert(0, step)
        step *= s
    return base.as_strided(shape, strides)


def run(name, x, make_outs):
    eager_outs, compiled_outs = make_outs(), make_outs()
    f(x, *eager_outs)
    compiled = aot_function(f, nop, nop, keep_inference_input_mutations=True)
    try:
        compiled(x, *compiled_outs)
    except Exception as e:
        print(f"{name}: compiled raised {type(e).__name__}: {str(e).splitlines()[0][:160]}")
        return
    for what, e, c in zip("USV", eager_outs, compiled_outs):
        if e.shape != c.shape:
            print(f"{name}: {what}.shape eager {tuple(e.shape)}, compiled {tuple(c.shape)}")
        elif e.numel() and not torch.allclose(e, c, atol=1e-4):
            diff = float((e - c).abs().max())
            print(f"{name}: {what} differs, max abs diff {diff:.4g} (eager {what}[0] = {e[0].flatten()[:3].tolist()}, compiled {c[0].flatten()[:3].tolist()})")
        else:
            print(f"{name}: {what} as eager's")


print("torch", torch.__version__)
torch.manual_seed(0)
SOME = False
run("empty input 0x3", torch.empty(0, 3), lambda: (torch.empty(0, 0), torch.empty(0), sparse(3, 3)))
run("batch 3x3x0", torch.empty(3, 3, 0), lambda: (sparse(3, 3, 3), torch.empty_strided((3, 0), (2, 2)), torch.empty_strided((3, 0, 0), (2, 2, 2))))
SOME = True
run("batch 3x3x3", torch.randn(3, 3, 3), lambda: (sparse(3, 3, 3), sparse(3, 3), sparse(3, 3, 3)))
