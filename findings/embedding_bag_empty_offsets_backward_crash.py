"""Eager CPU: `F.embedding_bag` with an empty `offsets` (no bags) and a non-empty input of indices
kills the process with SIGSEGV. In modes sum and mean, with or without `per_sample_weights`, the
forward returns an empty output of shape (0, D) and the backward with a materialized cotangent
of that shape (`out.backward(t)`) crashes (a cotangent broadcast from a scalar,
`out.sum().backward()`, runs); in mode max the forward itself crashes.

Each case runs in a child process, since the crash ends the one it runs in.

Found by optests' `sequence-0` pattern (other sizes, then 1 and 0 for each size, on one compiled
function): `nn.functional.embedding_bag`, the call of sizes [10, 5], [5], [0] and [5] (offsets of
size 0): the compiled backward (`aot_eager`) crashed the check; here eager's crashes alike.
Run: python findings/embedding_bag_empty_offsets_backward_crash.py
"""

import subprocess
import sys

CASE = """
import sys, torch
import torch.nn.functional as F
mode, weighted, cotangent = sys.argv[1], sys.argv[2] == "weighted", sys.argv[3]
torch.manual_seed(0)
weight = torch.randn(10, 5, requires_grad=True)
indices, offsets = torch.tensor([4, 5, 2, 4, 5]), torch.tensor([], dtype=torch.int64)
psw = torch.randn(5, requires_grad=True) if weighted else None
out = F.embedding_bag(indices, weight, offsets=offsets, mode=mode, per_sample_weights=psw)
print("forward: output of shape", tuple(out.shape), end="; ", flush=True)
if cotangent == "sum":
    out.sum().backward()
else:
    out.backward(torch.randn(out.shape))
print("backward runs")
"""

if __name__ == "__main__":
    import torch

    print("torch", torch.__version__)
    for mode, weighted, cotangent in (
        ("sum", "weighted", "random"),
        ("sum", "unweighted", "random"),
        ("mean", "unweighted", "random"),
        ("max", "unweighted", "random"),
        ("sum", "weighted", "sum"),
    ):
        run = subprocess.run([sys.executable, "-c", CASE, mode, weighted, cotangent], capture_output=True, text=True)
        said = run.stdout.strip()
        if run.returncode:
            step = "the backward" if said else "the forward"
            said = f"{said} {step}".strip() + f" kills the process ({'SIGSEGV' if run.returncode == -11 else run.returncode})"
        how = "out.sum().backward()" if cotangent == "sum" else "out.backward(randn)"
        print(f"mode={mode:4} {weighted:10} {how:22} {said}")
