"""`torch.func.grad` of a function that applies dropout in training mode (`F.dropout`,
`F.alpha_dropout`, `F.feature_alpha_dropout`), traced with dynamic shapes, fails: "Cannot call
numel() on tensor with symbolic sizes/strides", in `aot_function(dynamic=True)` and in
`torch.compile(dynamic=True)` (`TorchRuntimeError`). Eager `torch.func.grad` runs, and so do both
with static shapes. Torch 2.15 compiles it with `torch.compile`; `aot_function` still fails. Per-sample gradients or a functional training step with dropout, compiled,
fail once their shapes are dynamic.

Found by optests' `func-2` pattern (a compiled function whose body applies `torch.func.grad`) in
dynamic mode: `nn.functional.feature_alpha_dropout` (with_train), and
`nn.functional.multi_head_attention_forward` (its sample with `dropout_p=0.5`, `training=True`).
Run: python findings/func_grad_dropout_dynamic_numel.py
"""

import torch
import torch._dynamo
import torch.nn.functional as F  # noqa: N812
from functorch.compile import aot_function, nop

torch.manual_seed(0)
x = torch.randn(5, 5, 5, 5)
dropouts = {
    "dropout": lambda t: F.dropout(t, p=0.5, training=True),
    "alpha_dropout": lambda t: F.alpha_dropout(t, p=0.5, training=True),
    "feature_alpha_dropout": lambda t: F.feature_alpha_dropout(t, p=0.5, training=True),
}

print("torch", torch.__version__)
for name, dropout in dropouts.items():
    grad = torch.func.grad(lambda t, dropout=dropout: dropout(t).sum())
    print(f"{name:22} eager torch.func.grad       returns shape {tuple(grad(x).shape)}")
    for dynamic in (False, True):
        for way, make in (
            ("aot_function", lambda dynamic=dynamic, grad=grad: aot_function(grad, nop, dynamic=dynamic)),
            ("torch.compile", lambda dynamic=dynamic, grad=grad: torch.compile(grad, backend="aot_eager", dynamic=dynamic)),
        ):
            torch._dynamo.reset()
            try:
                result = f"returns shape {tuple(make()(x).shape)}"
            except Exception as e:
                said = next((line for line in str(e).splitlines() if "Cannot call" in line), str(e).splitlines()[0])
                said = said[said.find("Cannot call") :].split("\\n")[0] if "Cannot call" in said else said
                result = f"raises {type(e).__name__}: {said}"
            print(f"{name:22} {way:13} dynamic={dynamic!s:5} {result}")
