"""`torch.put` on 0-d tensors (a scalar target, index and source), with a backward: compiled with
inductor's decompositions, tracing the backward reads a value of the index tensor (a data-dependent
`.item()`: `GuardOnDataDependentSymNode` under `torch.compile`, `DataDependentOutputException`
for `aten._local_scalar_dense` under AOTAutograd alone) and the compile fails, under `inductor`
and under `aot_eager_decomp_partition`; eager and `aot_eager` give the gradient. Fixed in 2.15. One-element tensors of one
dimension compile. Found by optests' `aot_eager_decomp_partition` sweep: `put`, samples 4-7 and
12-15 (the 0-d samples with `accumulate=True` and `False`), stage `backward`, static and dynamic.
"""

import torch


def f(x, index, source, accumulate):
    return torch.put(x, index, source, accumulate=accumulate)


print("torch", torch.__version__)
for shape in ((), (1,)):
    for accumulate in (True, False):
        print(f"x, index and source of shape {shape}, accumulate={accumulate}")
        for backend in ("eager", "aot_eager", "aot_eager_decomp_partition", "inductor"):
            torch._dynamo.reset()
            x = torch.full(shape, -8.5, requires_grad=True)
            source = torch.full(shape, -7.9, requires_grad=True)
            index = torch.zeros(shape, dtype=torch.int64)
            call = f if backend == "eager" else torch.compile(f, backend=backend, fullgraph=True)
            try:
                out = call(x, index, source, accumulate)
                grads = torch.autograd.grad(out.sum(), (x, source))
                print(f"  {backend:27} grads {[g.tolist() for g in grads]}")
            except Exception as e:
                cause = getattr(e, "inner_exception", None) or e.__cause__ or e
                print(f"  {backend:27} raised {type(e).__name__}: {type(cause).__name__}: {str(cause).splitlines()[0][:90]}")
