"""Under `torch.compile` with `inductor`, autograd's check that a tensor saved for the backward
was not changed in place is lost when what the forward saves is a view of an input: `x @ w`
(`mm`, `bmm`, ...) saves `w.t()` and `x.t()`. Eager's backward then refuses ("one of the
variables needed for gradient computation has been modified by an inplace operation"); inductor's
runs on the changed values and silently returns their gradients. `aot_eager` and
`aot_eager_decomp_partition` raise as eager. (pytorch/pytorch#197887 traces it to inductor
rebuilding the saved view with `_reinterpret_tensor`, a new tensor on the same storage that does
not share the input's version counter.) An output that is a view of an input (`chunk`) is alike:
inductor's is no autograd view of the input, so where eager refuses the backward through it after
the input changed in place, inductor's runs.

Found by optests' `inplace-between` pattern (an input changed in place between the forward and
the backward) under `inductor`: `mm`, `bmm`, `addmm`, `addbmm`, `baddbmm`, `tensordot`,
`linalg.multi_dot`, `linalg.solve_triangular`, `chunk`, `split`, `split_with_sizes`.
Run: python findings/inductor_saved_input_view_version_counter.py
"""

import torch
import torch._dynamo

print("torch", torch.__version__)
BACKENDS = ("eager", "aot_eager", "aot_eager_decomp_partition", "inductor")


def mm(a, b):
    return torch.mm(a, b)


def bmm(a, b):
    return torch.bmm(a, b)


for name, f, shape_a, shape_b in (("mm", mm, (3, 4), (4, 5)), ("bmm", bmm, (2, 3, 4), (2, 4, 5))):
    for backend in BACKENDS:
        torch.manual_seed(0)
        a = torch.randn(shape_a, requires_grad=True)
        b = torch.randn(shape_b, requires_grad=True)
        torch._dynamo.reset()
        call = f if backend == "eager" else torch.compile(f, backend=backend, fullgraph=True)
        x, y = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
        out = call(x, y)
        with torch.no_grad():
            x.add_(1)  # the inputs changed in place between the forward and the backward
            y.add_(1)
        try:
            out.sum().backward()
        except RuntimeError as e:
            print(f"{name:6} {backend:27} backward raised: {str(e).splitlines()[0][:80]}")
            continue
        new = [t.detach().clone().requires_grad_() for t in (x, y)]
        at_new = torch.autograd.grad(f(*new).sum(), new)  # the gradients at the changed values
        print(
            f"{name:6} {backend:27} backward ran; its gradients are those at the changed values: "
            f"{all(torch.allclose(g, e) for g, e in zip((x.grad, y.grad), at_new))}"
        )

# an output that is a view of an input: eager's is an autograd view, inductor's is not
for backend in BACKENDS:
    torch._dynamo.reset()
    call = torch.chunk if backend == "eager" else torch.compile(torch.chunk, backend=backend, fullgraph=True)
    x = torch.randn(4, 3, requires_grad=True)
    outs = call(x, 2)
    views = [o._base is x for o in outs]
    with torch.no_grad():
        x.add_(1)
    try:
        sum(o.sum() for o in outs).backward()
        print(f"chunk  {backend:27} outputs are autograd views of the input: {views}; backward ran")
    except RuntimeError as e:
        print(f"chunk  {backend:27} outputs are autograd views of the input: {views}; backward raised: {str(e)[:50]}")
