"""AOTAutograd: ``F.multilabel_margin_loss`` with a target padded with -1 (the documented end
marker: targets stop at the first -1) gives another loss compiled than in eager. The Python
decomposition of ``multilabel_margin_loss_forward``, which AOTAutograd applies under every
backend (``aot_function`` with no-op compilers, ``torch.compile`` with ``aot_eager`` or inductor),
still counts the slots after the first -1, as class 0: eager 0.85, compiled 2.05 for one row. A
silent wrong loss (and gradient) for the documented input (pytorch/pytorch#141017, open;
#185464).

Found by optests' ``special`` transform (``special-7``: -1 as the last element of an index
argument; here it is the documented padding) under ``aot_eager`` and
``aot_eager_decomp_partition``: ``nn.functional.multilabel_margin_loss``, forward."""

import torch
import torch.nn.functional as F
from functorch.compile import aot_function, nop


def loss(x, target):
    return F.multilabel_margin_loss(x, target)


print("torch", torch.__version__)
x = torch.tensor([0.1, 0.2, 0.4, 0.8])
calls = {
    "eager": loss,
    "aot_function": aot_function(loss, nop, nop),
    "torch.compile(aot_eager)": torch.compile(loss, backend="aot_eager", fullgraph=True),
    "torch.compile(inductor)": torch.compile(loss, fullgraph=True),
}
for target in ([3, 0, 1, 2], [3, 0, -1, 1], [-1, 0, 1, 2]):
    t = torch.tensor(target)
    print(f"target {target}:", ", ".join(f"{name} {call(x, t).item():.4f}" for name, call in calls.items()))
