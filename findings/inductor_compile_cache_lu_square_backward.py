"""`torch.linalg.lu` compiled by inductor, one compiled function called on a 7x5 matrix, then on a
batch of 3x5 matrices, then on a batch of 6x5 matrices (each requiring grad): the third call's
backward raises "linalg.solve_triangular: A must be batches of square matrices, but they are 6 by
5 matrices", the backward of the square case, where eager's (and the same compiled function's
with inductor's compile caches off) takes the rectangular branch and returns the gradient.

The artifact comes from inductor's compile caches (the FX graph cache and the AOTAutograd cache):
with both off, every call gives eager's values; under `aot_eager` too. The cache is empty at the
start (a new folder), so the artifact is one this sequence made. torch 2.15 does the same.
Related: pytorch/pytorch#194001 (the AOTAutograd cache's key leaves out the shape environment's
guards, so a hit replays another compile's).

Found by optests' `sequence-10` pattern (the op's samples in order, on one compiled function)
under `inductor`: `linalg.lu`, its sample 8 (3x6x5) after sample 7 (3x5x5); the three calls
here are the fewest of its nine samples that still fail.
Run: python findings/inductor_compile_cache_lu_square_backward.py
"""

import os
import tempfile

os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()  # an empty cache: what follows does not depend on earlier runs

import torch
import torch._dynamo


def f(A):
    return torch.linalg.lu(A)


def run(backend, caches):
    torch._dynamo.reset()
    compiled = torch.compile(f, backend=backend, fullgraph=True)
    torch.manual_seed(0)
    with torch._inductor.config.patch(fx_graph_cache=caches), torch._functorch.config.patch(enable_autograd_cache=caches):
        for shape in ((7, 5), (3, 3, 5), (3, 6, 5)):  # one compiled function, three calls
            A = torch.randn(shape, requires_grad=True)
            Ae = A.detach().requires_grad_()
            _, L, U = compiled(A)
            _, Le, Ue = f(Ae)
            expected = torch.autograd.grad(Le.sum() + Ue.sum(), Ae)[0]
            try:
                grad = torch.autograd.grad(L.sum() + U.sum(), A)[0]
                said = f"gradient as eager: {torch.allclose(grad, expected, atol=1e-5)}"
            except RuntimeError as e:
                said = f"backward raises RuntimeError: {str(e).splitlines()[0]}"
            print(f"{backend:9} caches {'on ' if caches else 'off'}  A {'x'.join(map(str, shape)):6}  forward as eager: "
                  f"{torch.allclose(L, Le) and torch.allclose(U, Ue)!s:5}  {said}")


print("torch", torch.__version__)
run("aot_eager", True)
run("inductor", False)
run("inductor", True)
