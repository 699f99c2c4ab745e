"""``torch.func.vmap`` of ``F.interpolate`` (any mode: nearest, linear, bilinear, bicubic,
trilinear, and bilinear with ``antialias=True``, which is ``_upsample_bilinear2d_aa``), traced
with dynamic shapes: the upsampling ops' batching rules ask the batched input for concrete sizes,
and tracing fails with "Cannot call sizes() on tensor with symbolic sizes/strides", in
``aot_function(dynamic=True)`` and in ``torch.compile(dynamic=True)`` (``TorchRuntimeError``;
2.15: ``Unsupported``). With static shapes both trace and match eager; eager runs.
A compiled training step that vmaps an upsampling layer (per-sample gradients, ensembles) fails
once its shapes are dynamic.

Found by optests' ``func`` call pattern (``func-3``: a compiled function whose body applies
``torch.func.vmap``) in dynamic mode: the first sample of every ``nn.functional.interpolate``
variant and of ``upsample_nearest``, ``upsample_bilinear`` and ``_upsample_bilinear2d_aa``."""

import torch
import torch.nn.functional as F
from functorch.compile import aot_function, nop


torch.manual_seed(0)
ups = {  # each over a batch of 2 inputs: of shape (1, 2, 5), and (1, 1, 4, 6) (antialias takes 4-D)
    "nearest": (lambda t: F.interpolate(t, scale_factor=2.0, mode="nearest"), torch.randn(2, 1, 2, 5)),
    "bilinear, antialias": (
        lambda t: F.interpolate(t, scale_factor=0.5, mode="bilinear", antialias=True),
        torch.randn(2, 1, 1, 4, 6),
    ),
}


print("torch", torch.__version__)
for mode, (up, x) in ups.items():

    def f(x, up=up):
        return torch.func.vmap(up)(x)

    expected = f(x)
    for dynamic in (False, True):
        torch._dynamo.reset()
        calls = {
            "aot_function": aot_function(f, nop, nop, dynamic=dynamic),
            "torch.compile(aot_eager)": torch.compile(f, backend="aot_eager", dynamic=dynamic, fullgraph=True),
        }
        for name, call in calls.items():
            try:
                same = torch.allclose(call(x), expected)
                result = "equals eager" if same else "differs from eager"
            except Exception as e:
                said = next((line.strip() for line in str(e).splitlines() if "Cannot call" in line), str(e).splitlines()[0])
                said = said[said.find("Cannot call") :].split("\\")[0]  # Dynamo quotes the error with its "\\n"s
                result = f"raises {type(e).__name__}: {said}"
            print(f"{mode:20} {name:25} dynamic={dynamic!s:5}: {result}")
