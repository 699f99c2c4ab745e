"""``native_batch_norm`` (and ``_native_batch_norm_legit``, ``_batch_norm_with_update``) in
training mode on an input with one value per channel: eager returns the normalized output and a
NaN running variance (the unbiased variance of one value), while tracing it for
``torch.compile`` fails: the fake kernel (the decomposition) computes the Bessel correction
``n / (n - 1)`` with Python numbers and raises ``ZeroDivisionError: float division by zero``
(``TorchRuntimeError`` under Dynamo, on a fresh compile and after a recompile alike).
``F.batch_norm`` refuses such an input in eager ("Expected more than 1 value per channel when
training"); the ATen ops do not, so compiled code that calls them fails where eager does not.

Found by optests' ``sequence`` call pattern (``sequence-0``: other sizes, then 1 and 0 for each
size, on one compiled function): ``native_batch_norm``, ``_native_batch_norm_legit`` and
``_batch_norm_with_update``, call 2 (sizes [1, 1, 1] after [6, 6, 6])."""

import torch


def f(x, w, b, running_mean, running_var):
    return torch.native_batch_norm(x, w, b, running_mean, running_var, True, 0.1, 1e-5)[0]


torch.manual_seed(0)
print("torch", torch.__version__)
calls = {
    "eager": f,
    "torch.compile(aot_eager)": torch.compile(f, backend="aot_eager", fullgraph=True),
    "torch.compile(inductor)": torch.compile(f, backend="inductor", fullgraph=True),
}
for name, call in calls.items():
    x, w, b = torch.randn(1, 1, 1), torch.randn(1), torch.randn(1)  # one value per channel
    running_mean, running_var = torch.zeros(1), torch.ones(1)
    try:
        out = call(x, w, b, running_mean, running_var)
        print(f"{name:25} out {out.flatten().tolist()}, running_var {running_var.tolist()}")
    except Exception as e:
        print(f"{name:25} raises {type(e).__name__}: {str(e).splitlines()[0]}; {str(e).splitlines()[1].split('): ')[-1]}")
