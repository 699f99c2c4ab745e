"""`torch.ops.aten._softmax_backward_data(grad_output, output, dim, input_dtype)` on float64
tensors with `input_dtype=torch.float32` (eager accepts it; its CPU kernel computes in float64):
compiled by inductor, the forward is eager's, but the gradient of `grad_output` is wrong. With
`output` a softmax (summing to 1) and the loss the outputs' sum, eager's is
`output * (1 - output.sum())`, zero; inductor's is not (up to 0.33 an element here). With
`input_dtype=torch.float64`, and under `aot_eager` and `aot_eager_decomp_partition`, it is
eager's.

Found by optests' `sequence-3` pattern (the sample, then its floating inputs as another dtype,
on one compiled function) under `inductor`: `_softmax_backward_data`, float64 after float32; a
fresh compile with the float64 inputs gives the same gradients.
Run: python findings/inductor_softmax_backward_data_mixed_dtype_gradient.py
"""

import torch
import torch._dynamo

print("torch", torch.__version__)
torch.manual_seed(0)
for input_dtype in (torch.float32, torch.float64):

    def f(grad_output, output, input_dtype=input_dtype):
        return torch.ops.aten._softmax_backward_data(grad_output, output, 0, input_dtype)

    grad_output = torch.randn(5, dtype=torch.float64, requires_grad=True)
    output = torch.randn(5, dtype=torch.float64).softmax(0).requires_grad_()
    eager = f(grad_output, output)
    expected = torch.autograd.grad(eager.sum(), grad_output)[0]
    for backend in ("aot_eager", "aot_eager_decomp_partition", "inductor"):
        torch._dynamo.reset()
        out = torch.compile(f, backend=backend, fullgraph=True)(grad_output, output)
        got = torch.autograd.grad(out.sum(), grad_output)[0]
        print(
            f"input_dtype={input_dtype!s:13} {backend:27} forward as eager: {torch.allclose(out, eager)!s:5}  "
            f"gradient of grad_output {[round(v, 4) for v in got.tolist()]} (eager {[round(v, 4) for v in expected.tolist()]})"
        )
