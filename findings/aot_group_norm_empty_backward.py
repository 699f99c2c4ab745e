"""AOTAutograd: ``F.group_norm`` of an input with a dimension of size 0, compiled with a
backward, fails while tracing it: the decomposition of ``native_group_norm_backward`` divides by
the number of elements of a group, 0 here (``ZeroDivisionError: float division by zero``), in
``aot_function`` and in ``torch.compile(backend="aot_eager")`` (``BackendCompilerFailed``).
Eager's forward and backward take the empty input (an empty output; the gradients of x empty,
of the bias zeros, of the weight NaN).
A training loop that meets an empty batch (a size-0 spatial dim) works in eager and fails
compiled.

Found by optests' ``sequence`` call pattern (``sequence-0``: other sizes, then 1 and 0 for each
size, on one compiled function): ``nn.functional.group_norm``, call 3 (sizes [1, 6, 0] after
[1, 6, 1])."""

import warnings

import torch
import torch.nn.functional as F
from functorch.compile import aot_function, nop

warnings.filterwarnings("ignore", "Error detected in")  # anomaly mode's traceback, printed while tracing


def f(x, w, b):
    return F.group_norm(x, 2, w, b)


print("torch", torch.__version__)
calls = {
    "eager": f,
    "aot_function": aot_function(f, nop, nop),
    "torch.compile(aot_eager)": torch.compile(f, backend="aot_eager", fullgraph=True),
}
for name, call in calls.items():
    x = torch.randn(1, 6, 0, requires_grad=True)
    w, b = torch.randn(6, requires_grad=True), torch.randn(6, requires_grad=True)
    try:
        out = call(x, w, b)
        gx, gw, gb = torch.autograd.grad(out.sum(), (x, w, b))
        print(f"{name:25} out {tuple(out.shape)}, grads of x {tuple(gx.shape)}, w {gw.tolist()}, b {gb.tolist()}")
    except Exception as e:
        inner = getattr(e, "inner_exception", None)  # what the backend raised, under BackendCompilerFailed
        said = f" (the backend raised {type(inner).__name__}: {inner})" if inner is not None else f": {str(e).splitlines()[0]}"
        print(f"{name:25} raises {type(e).__name__}{said}")
