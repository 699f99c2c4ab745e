"""Under `torch.compile` with `inductor`, autograd's check that a tensor saved for the backward
was not changed in place is lost when what the forward saves is a view of an input: `x @ w`
(`mm`, `addmm`, `bmm`, ...) saves `w.t()` and `x.t()`. Eager's backward then refuses ("one of the
variables needed for gradient computation has been modified by an inplace operation"); inductor's
runs on the changed values and silently returns other gradients. `aot_eager` and
`aot_eager_decomp_partition` raise as eager: inductor rebuilds the saved view with
`_reinterpret_tensor`, a new tensor on the same storage that does not share the input's version
counter. The same holds for an output that is a view of an input (`chunk`): inductor returns it
as such a tensor, not an autograd view of the input, so where eager refuses the backward through
it after the input changed in place, inductor's goes through.

Found by optests' `inplace-between` pattern (an input changed in place between the forward and
the backward) under `inductor`: `addmm`, `addbmm`, `baddbmm`, `bmm`, `chunk`, ...
Run: python findings/inductor_saved_input_view_version_counter.py
"""

import torch
import torch._dynamo

print("torch", torch.__version__)


def mm(a, b):
    return torch.mm(a, b)


def bmm(a, b):
    return torch.bmm(a, b)


cases = (("mm", mm, (3, 4), (4, 5)), ("bmm", bmm, (2, 3, 4), (2, 4, 5)))
for name, f, shape_a, shape_b in cases:
    for backend in ("eager", "aot_eager", "aot_eager_decomp_partition", "inductor"):
        torch.manual_seed(0)
        a = torch.randn(shape_a, requires_grad=True)
        b = torch.randn(shape_b, requires_grad=True)
        torch._dynamo.reset()
        call = f if backend == "eager" else torch.compile(f, backend=backend, fullgraph=True)
        x, y = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
        out = call(x, y)
        with torch.no_grad():
            x.add_(1)  # the input changed in place between the forward and the backward
            y.add_(1)
        try:
            out.sum().backward()
        except RuntimeError as e:
            print(f"{name:6} {backend:27} backward raised: {str(e).splitlines()[0][:80]}")
            continue
        expected = torch.autograd.grad(f(a, b).sum(), (a, b))  # the gradients at the forward's values
        same = all(torch.allclose(g, e) for g, e in zip((x.grad, y.grad), expected))
        print(f"{name:6} {backend:27} backward ran; gradients of the values before the change: {same}")

# an output that is a view of an input: eager's is an autograd view, inductor's is not
for backend in ("eager", "aot_eager", "inductor"):
    torch._dynamo.reset()
    call = torch.chunk if backend == "eager" else torch.compile(torch.chunk, backend=backend, fullgraph=True)
    x = torch.randn(4, 3, requires_grad=True).detach().clone().requires_grad_()
    outs = call(x, 2)
    views = [o._base is x for o in outs]
    with torch.no_grad():
        x.add_(1)
    try:
        sum(o.sum() for o in outs).backward()
        print(f"chunk  {backend:27} outputs are autograd views of the input: {views}; backward ran")
    except RuntimeError as e:
        print(f"chunk  {backend:27} outputs are autograd views of the input: {views}; backward raised: {str(e)[:50]}")
