"""`F.channel_shuffle` with `groups` equal to 1 or to the number of channels (a shuffle that moves
nothing): eager returns a new tensor, but under `torch.compile` with `aot_eager_decomp_partition`
or `inductor` the result is a view of the input. Changing the result in place then silently changes
the input, in compiled code only. Other `groups` give a new tensor under every backend.

Found by optests' `sequence-4` pattern (the sample, then other Python scalars, on one compiled
function) under `aot_eager_decomp_partition`: `nn.functional.channel_shuffle`, `groups=4` after
`groups=2` on 4 channels; a fresh compile with `groups=4` does the same.
Run: python findings/channel_shuffle_identity_aliases_input.py
"""

import torch
import torch._dynamo

print("torch", torch.__version__)
for groups in (1, 2, 4):
    for backend in ("eager", "aot_eager", "aot_eager_decomp_partition", "inductor"):
        x = torch.arange(16.0).reshape(1, 4, 2, 2)
        before = x.clone()

        def f(t, groups=groups):
            return torch.nn.functional.channel_shuffle(t, groups)

        torch._dynamo.reset()
        call = f if backend == "eager" else torch.compile(f, backend=backend, fullgraph=True)
        y = call(x)
        y.add_(100)  # the caller changes the result in place
        changed = not torch.equal(x, before)
        print(
            f"groups={groups} {backend:27} result shares the input's storage: {y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()!s:5}  input changed: {changed}"
        )
