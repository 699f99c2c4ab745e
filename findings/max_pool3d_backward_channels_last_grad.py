"""Eager: ``max_pool3d``'s backward on an unbatched input (``(C, D, H, W)``, 4-D) rejects a
gradient in ``channels_last`` memory format: "Unsupported memory format. Supports only
ChannelsLast3d, Contiguous".

Autograd takes a gradient of any layout (``torch.autograd.grad(out, x, g)``). ``max_pool3d``'s
CPU backward accepts only the contiguous and ``ChannelsLast3d`` formats,
and a 4-D tensor in ``channels_last`` is neither; the same gradient made contiguous works.
Compiled code (AOTAutograd) restrides tangents to the layout it traced with, which hides this.

Shown by optests' ``tangents`` call pattern (``tangents-1``: random gradients in another layout,
``channels_last`` for a 4-D output), backward stage: ``nn.functional.max_pool3d``, 134 of its 192
unbatched samples in each mode (none of its batched, 5-D ones)."""

import torch
import torch.nn.functional as F  # noqa: N812

torch.manual_seed(0)
x = torch.randn(2, 3, 6, 5, requires_grad=True)  # unbatched: C=2, D=3, H=6, W=5
out = F.max_pool3d(x, kernel_size=3, stride=2, padding=1, ceil_mode=True)
print("torch", torch.__version__)
print("output shape", tuple(out.shape))
for name, grad in (
    ("contiguous", torch.randn(out.shape)),
    ("channels_last", torch.randn(out.shape).contiguous(memory_format=torch.channels_last)),
):
    try:
        torch.autograd.grad(out, x, grad, retain_graph=True)
        print(f"backward with a {name:13} gradient: works")
    except RuntimeError as e:
        print(f"backward with a {name:13} gradient: raised RuntimeError: {e}")
