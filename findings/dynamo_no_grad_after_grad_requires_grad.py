"""``torch.compile`` with ``backend="aot_eager_decomp_partition"``: a function called once with
grad enabled, then again under ``torch.no_grad()``, returns from the second call an output with
``requires_grad=True`` (eager: ``False``): a graph that records autograd is used where grad mode
is off. ``backend="aot_eager"`` returns ``False`` as eager does. Any op shows it where its output
is computed from an input that requires grad: ``x.double()``, ``torch.unsafe_split``.
``backend="inductor"`` shows it too where a 0-d tensor is converted to complex (``x.cdouble()``,
``x.cfloat()``), not for a 1-d one.

Found by optests' ``sequence`` call pattern (``sequence-6``: the call under ``no_grad()`` and
``inference_mode()`` after one with grad, on one compiled function), under
``aot_eager_decomp_partition``: the dtype conversions (``double``, ``half``, ``bfloat16``,
``cfloat``, ``cdouble``), ``unsafe_split``, ``unsafe_chunk``; under ``inductor``: ``cfloat`` and
``cdouble`` of a 0-d sample."""

import torch


def f(x):
    return x.double()


print("torch", torch.__version__)
for name, f, shape in (("x.double(), x of size 3", f, (3,)), ("x.cdouble(), x 0-d", lambda x: x.cdouble(), ())):
    for backend in ("aot_eager", "aot_eager_decomp_partition", "inductor"):
        torch._dynamo.reset()
        compiled = torch.compile(f, backend=backend, fullgraph=True)
        x = torch.randn(shape, requires_grad=True)
        first = compiled(x)
        with torch.no_grad():
            second, expected = compiled(x), f(x)
        print(
            f"{name:24} {backend:27} with grad: requires_grad={first.requires_grad}; then under no_grad(): "
            f"requires_grad={second.requires_grad} (eager {expected.requires_grad})"
        )
