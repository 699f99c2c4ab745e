"""Inductor (CPU): an index op that eager refuses a negative index for runs compiled and wraps
it. ``torch.index_select(x, 0, torch.tensor([-1]))`` raises "index out of range in self" in
eager; compiled by inductor it returns ``x[-1]``. ``index_add``, ``index_copy`` and
``index_reduce`` alike (eager: "index -1 is out of bounds", "index out of range"), writing into
the last row. The decompositions do it (``aot_eager_decomp_partition``, which applies them,
answers as inductor does); ``aot_eager`` raises as eager does. Where eager raises, the compiled
call silently returns a value (pytorch/pytorch#169779, ``index_select``; #185885,
``index_add``).

Found by optests' ``special`` transform (index arguments negative or out of range; where eager
raises, the compiled call must raise too): ``index_select`` under ``inductor``; ``index_select``,
``index_add``, ``index_copy`` and ``index_reduce.mean`` under ``aot_eager_decomp_partition``."""

import warnings

import torch

warnings.filterwarnings("ignore", "index_reduce")  # "is in beta"
print("torch", torch.__version__)
x = torch.arange(12.0).reshape(4, 3)
index = torch.tensor([-1])
ops = {
    "index_select": lambda x, i: torch.index_select(x, 0, i),
    "index_add": lambda x, i: torch.index_add(x, 0, i, torch.ones(1, 3)),
    "index_copy": lambda x, i: torch.index_copy(x, 0, i, torch.full((1, 3), -5.0)),
    "index_reduce": lambda x, i: torch.index_reduce(x, 0, i, torch.full((1, 3), -5.0), "mean"),
}
for op, fn in ops.items():
    for name in ("eager", "aot_eager", "aot_eager_decomp_partition", "inductor"):
        call = fn if name == "eager" else torch.compile(fn, backend=name, fullgraph=True)
        try:
            out = call(x, index)
        except Exception as e:
            print(f"{op:12} {name:27} raises {type(e).__name__}: {str(e).splitlines()[0][:70]}")
        else:
            print(f"{op:12} {name:27} returns {out.tolist()}")
