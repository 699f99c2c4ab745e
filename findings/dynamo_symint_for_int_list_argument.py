"""A Python int passed for an ATen op's ``int[2]`` argument (eager broadcasts one int to the
list), compiled with ``torch.compile``: once the int changes between calls, Dynamo makes it
automatically dynamic, a ``SymInt``, and the op's schema parser refuses it ("Expected a value of
type 'List[int]' for argument 'kernel_size' but instead found type 'SymInt'"). The second call,
with another kernel size, fails while tracing (``TorchRuntimeError``) where eager runs; the first
compile of each size alone works. PyTorch's own symbolic-shapes test xfails
``max_pool2d_with_indices_backward`` for this message (pytorch/pytorch#125638).

Found by optests' ``sequence`` call pattern (``sequence-4``: other Python scalars, on one
compiled function): ``max_pool2d_with_indices_backward``, call 1 (kernel_size=4 after 3), and
``sequence-10`` (the op's samples in order)."""

import torch

torch.manual_seed(0)
x = torch.randn(1, 2, 6, 6)


def f(x, k):
    out, indices = torch.ops.aten.max_pool2d_with_indices(x, k, 2)  # int for int[2]: eager takes it
    return torch.ops.aten.max_pool2d_with_indices_backward(torch.ones_like(out), x, k, 2, 0, 1, False, indices)


print("torch", torch.__version__)
compiled = torch.compile(f, backend="aot_eager", fullgraph=True)
for k in (3, 4):
    expected = f(x, k)
    try:
        got = compiled(x, k)
        print(f"kernel_size={k}: compiled {'equals' if torch.equal(got, expected) else 'differs from'} eager")
    except Exception as e:
        why = next((line.strip() for line in str(e).splitlines() if "Expected a value of type" in line), str(e).splitlines()[0])
        print(f"kernel_size={k}: compiled raises {type(e).__name__}: {why[why.find('aten::'):][:160]}")
