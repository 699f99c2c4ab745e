"""`torch._higher_order_ops.while_loop` refuses a contiguous carried tensor whose dims are marked
unbacked (`torch._dynamo.decorators.mark_unbacked`) when the body returns a new tensor of its shape, such as
`x.cos()`: the input's fake strides are `(u1*u2, u2, 1)`, the body output's
`(Max(1, u1)*Max(1, u2), Max(1, u2), 1)`, and the metadata check compares the expressions rather
than the layouts, which are the same for every size the sizes can take but 0. Without the marks,
or with only the first dim marked, it compiles; eager runs.

Found by optests' `sequence-8` pattern (`mark_unbacked` on each dim of size >= 2, on one compiled
function): hop_db's `while_loop` and `while_loop_stack_output`.
Run: python findings/while_loop_unbacked_carried_strides.py
"""

import torch
import torch._dynamo
from torch._dynamo.decorators import mark_unbacked
from torch._higher_order_ops import while_loop


def f(x):
    return while_loop(lambda i, x: i > 0, lambda i, x: (i - 1, x.cos()), (torch.tensor(3), x))


print("torch", torch.__version__)
for marked in ((), (0,), (0, 1, 2)):
    x = torch.randn(2, 3, 4)
    expected = f(x)[1]
    for dim in marked:
        mark_unbacked(x, dim)
    torch._dynamo.reset()
    try:
        got = torch.compile(f, backend="aot_eager", fullgraph=True)(x)[1]
        result = f"compiles, equals eager: {torch.allclose(got, expected)}"
    except Exception as e:
        said = str(e).splitlines()
        result = f"raises {type(e).__name__}: {said[0]} {said[1][:80] if len(said) > 1 else ''}"
    print(f"mark_unbacked dims {list(marked)!s:10} {result}")
