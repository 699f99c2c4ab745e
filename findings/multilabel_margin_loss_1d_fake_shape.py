"""``multilabel_margin_loss`` of a 1-D input with ``reduction="none"``: the fake (meta) kernel
predicts a 1-element output, shape ``[1]``, where the CPU kernel returns a 0-d tensor, shape ``[]``.

A traced graph (AOTAutograd, ``torch.compile``) carries the wrong shape. Found by optests'
``module_db`` sweep: ``nn.MultiLabelMarginLoss``'s sample 6 (a 1-D input, ``reduction="none"``),
at stage ``metadata``. Batched (2-D) inputs and the other reductions agree."""

import torch
from functorch.compile import aot_function, nop
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.nn.functional import multilabel_margin_loss

print("torch", torch.__version__)
x = torch.randn(10)
target = torch.tensor([3, 0, -1, 2, 1, 0, 0, 0, 0, 0])
for reduction in ("none", "mean"):
    eager = multilabel_margin_loss(x, target, reduction=reduction)
    meta = multilabel_margin_loss(x.to("meta"), target.to("meta"), reduction=reduction)
    with FakeTensorMode() as mode:
        fake = multilabel_margin_loss(mode.from_tensor(x), mode.from_tensor(target), reduction=reduction)
    print(f"reduction={reduction}: eager {list(eager.shape)}, meta {list(meta.shape)}, fake {list(fake.shape)}")

compiled = aot_function(lambda a, t: multilabel_margin_loss(a, t, reduction="none"), nop, nop)
out = compiled(x, target)
print("aot_function, reduction=none: shape", list(out.shape), "eager", list(multilabel_margin_loss(x, target, reduction="none").shape))
