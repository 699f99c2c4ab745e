"""Eager CPU: the backward of `torch.native_batch_norm` in evaluation mode (`training=False`, running
statistics given) on an input with no elements, a batch of 0 or 0 channels, kills the process with
SIGFPE (an integer division by zero). The forward returns the empty output. The same input with
elements runs, an empty input in training mode raises "input tensor must have at least one
element", and `F.batch_norm` (which takes another path for an empty batch) runs. The op is public
(`torch.native_batch_norm`), and a crash ends every other computation of the process.

Each case runs in a child process, since the crash ends the one it runs in.

Found by optests' `sequence-0` pattern (other sizes, then 1 and 0 for each size, on one compiled
function): `native_batch_norm` and `_native_batch_norm_legit` (their second samples, in
evaluation mode), where eager's backward of the calls of sizes [3, 0, 4] and [0, 2, 4] crashed.
Run: python findings/batch_norm_eval_empty_backward_crash.py
"""

import subprocess
import sys

CASE = """
import sys, torch
import torch.nn.functional as F
shape, training = tuple(int(v) for v in sys.argv[1].split(",")), sys.argv[2] == "train"
c = shape[1]
x = torch.randn(shape, requires_grad=True)
weight, bias = torch.randn(c, requires_grad=True), torch.randn(c, requires_grad=True)
running_mean, running_var = torch.zeros(c), torch.ones(c)
try:
    if sys.argv[3] == "F.batch_norm":
        out = F.batch_norm(x, running_mean, running_var, weight, bias, training=training)
    else:
        out = torch.native_batch_norm(x, weight, bias, running_mean, running_var, training, 0.1, 1e-5)[0]
except (RuntimeError, ValueError) as e:
    print(f"forward raises {type(e).__name__}:", str(e).splitlines()[0][:60])
    sys.exit(0)
print("forward: output of shape", tuple(out.shape), end="; ", flush=True)
out.sum().backward()
print("backward runs; x.grad of shape", tuple(x.grad.shape))
"""

if __name__ == "__main__":
    import torch

    print("torch", torch.__version__)
    for op in ("torch.native_batch_norm", "F.batch_norm"):
        for shape in ("3,2,4", "0,2,4", "3,0,4")[: 3 if op == "torch.native_batch_norm" else 2]:
            for mode in ("eval", "train"):
                run = subprocess.run([sys.executable, "-c", CASE, shape, mode, op], capture_output=True, text=True)
                died = (
                    "SIGFPE" if run.returncode == -8 else f"exit status {run.returncode}: {run.stderr.strip().splitlines()[-1:]}"
                )
                said = run.stdout.strip() + (f" the backward kills the process ({died})" if run.returncode else "")
                print(f"{op:23} input ({shape}), {mode:5}: {said}")
