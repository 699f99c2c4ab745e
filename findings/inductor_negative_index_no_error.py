"""Inductor (CPU): an index op that eager refuses a negative index for runs compiled and wraps
it. ``torch.index_select(x, 0, torch.tensor([-1]))`` raises "index out of range in self" in
eager; compiled by inductor it returns ``x[-1]``. ``index_add`` and ``index_copy`` alike (eager:
"index -1 is out of bounds"), writing into the last row. ``aot_eager`` raises as eager does.
Where eager raises, the compiled call silently returns a value.

Found by optests' ``special`` transform (index arguments negative or out of range; where eager
raises, the compiled call must raise too) under the ``inductor`` backend: ``index_select``."""

import torch

print("torch", torch.__version__)
x = torch.arange(12.0).reshape(4, 3)
index = torch.tensor([-1])
ops = {
    "index_select": lambda x, i: torch.index_select(x, 0, i),
    "index_add": lambda x, i: torch.index_add(x, 0, i, torch.ones(1, 3)),
    "index_copy": lambda x, i: torch.index_copy(x, 0, i, torch.full((1, 3), -5.0)),
}
for op, fn in ops.items():
    for name, call in {
        "eager": fn,
        "aot_eager": torch.compile(fn, backend="aot_eager", fullgraph=True),
        "inductor": torch.compile(fn, fullgraph=True),
    }.items():
        try:
            out = call(x, index)
        except Exception as e:  # noqa: BLE001
            print(f"{op:12} {name:10} raises {type(e).__name__}: {str(e).splitlines()[0][:70]}")
        else:
            print(f"{op:12} {name:10} returns {out.tolist()}")
