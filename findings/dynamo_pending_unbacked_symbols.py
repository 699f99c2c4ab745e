"""Dynamo refuses a data-dependent op whose fake kernel allocates an unbacked size it does not return:
`torch.combinations(x, r)` with `r >= 2`, and `torch.tensor_split(x, indices)` with a tensor of
indices on an input whose split dim has size 0 (the slices' unbacked bounds clamp to 0 and are
not in the outputs). Both raise `InternalTorchDynamoError: PendingUnbackedSymbolNotFound` from a
fresh `torch.compile(fullgraph=True)` (optests met it on later calls of one compiled function);
eager runs. `combinations` with `r=1` and `tensor_split`
of a non-empty input compile. Torch 2.15 compiles `combinations`; `tensor_split` still raises.

Found by optests' `sequence` patterns (`sequence-4`: another `r`; `sequence-10`: the op's next
sample; `sequence-0`: sizes of 0): `combinations`, `tensor_split`.
Run: python findings/dynamo_pending_unbacked_symbols.py
"""

import torch
import torch._dynamo

torch.manual_seed(0)
indices = torch.tensor([1, 2, 3])
cases = {
    "combinations(x[4], r=1)": (lambda x: torch.combinations(x, r=1), torch.randn(4)),
    "combinations(x[4], r=2)": (lambda x: torch.combinations(x, r=2), torch.randn(4)),
    "combinations(x[4], r=3)": (lambda x: torch.combinations(x, r=3), torch.randn(4)),
    "tensor_split(x[5, 5], tensor([1, 2, 3]))": (lambda x: torch.tensor_split(x, indices), torch.randn(5, 5)),
    "tensor_split(x[0, 5], tensor([1, 2, 3]))": (lambda x: torch.tensor_split(x, indices), torch.randn(0, 5)),
}


def same(a, b):
    a, b = (a, b) if isinstance(a, (tuple, list)) else ((a,), (b,))
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


print("torch", torch.__version__)
for name, (f, x) in cases.items():
    expected = f(x)
    torch._dynamo.reset()
    try:
        got = torch.compile(f, backend="aot_eager", fullgraph=True)(x)
        result = f"compiles, equals eager: {same(got, expected)}"
    except Exception as e:
        result = f"raises {type(e).__name__}: {str(e).partition(':')[0]}"  # the symbols' order varies
    print(f"{name:42} {result}")
