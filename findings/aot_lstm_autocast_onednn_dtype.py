"""``nn.LSTM`` under CPU autocast: what eager returns depends on the CPU's oneDNN, and
``aot_function`` fails on a CPU whose oneDNN has bfloat16 kernels.

Under ``torch.autocast("cpu", dtype=torch.bfloat16)``, eager ``nn.LSTM`` on float32 inputs takes
oneDNN's path (``use_mkldnn``: float32 on a CPU), whose inner op ``mkldnn_rnn_layer`` is on
autocast's lower-precision list:
- on a CPU whose oneDNN has bfloat16 kernels (AVX-512;
  ``torch.ops.mkldnn._is_mkldnn_bf16_supported()``), eager returns bfloat16 outputs;
- on a CPU without them, eager raises oneDNN's "could not create a primitive descriptor for the
  LSTM forward propagation primitive";
- with oneDNN off (``torch.backends.mkldnn.flags(enabled=False)``), eager returns float32.

So which dtype a compiled LSTM must return under CPU autocast depends on the CPU. On a CPU of
the first kind, with parameters that require grad, ``aot_function`` (either partitioner) also
fails at its first call: "expected all tensors_saved_with_vc_check to be Tensors" (the forward
saves a ``None``); with oneDNN off it runs and returns float32.
``torch.compile(backend="aot_eager")`` returns what eager does, either way.

Found by optests' ``autocast`` call pattern: ``nn.LSTM``, train and eval, static and dynamic,
fails at metadata on a CPU of the first kind (the outputs its trace records are float32, eager's
bfloat16) and is not applicable on one of the second (eager fails). optests calls eager again
with oneDNN off on a CPU of the first kind and, where an output's dtype differs, makes the sample
not applicable there too, so that its verdict is the same on both."""

import warnings

import torch
from functorch.compile import aot_function, min_cut_rematerialization_partition, nop

warnings.filterwarnings("ignore", message="TF32 acceleration on top of oneDNN")
torch.manual_seed(0)
lstm = torch.nn.LSTM(4, 3)
x = torch.randn(5, 2, 4)
names = [name for name, _ in lstm.named_parameters()]


def f(x, *params):
    out, (h, c) = torch.func.functional_call(lstm, dict(zip(names, params)), (x,))
    return out, h, c


def dtypes(fn, *args):
    try:
        return ", ".join(str(t.dtype).removeprefix("torch.") for t in fn(*args))
    except Exception as e:
        return f"raised {type(e).__name__}: " + str(e).splitlines()[0][:90]


params = [p.detach().requires_grad_() for p in lstm.parameters()]
print("torch", torch.__version__)
print("oneDNN has bfloat16 kernels on this CPU:", torch.ops.mkldnn._is_mkldnn_bf16_supported())
with torch.autocast("cpu", dtype=torch.bfloat16):
    for onednn in (True, False):
        with torch.backends.mkldnn.flags(enabled=onednn, deterministic=None, allow_tf32=None, fp32_precision=None):
            print(f"oneDNN {'on' if onednn else 'off'}")
            print("  eager                   ", dtypes(f, x, *params))
            print("  aot_function            ", dtypes(aot_function(f, nop, nop), x, *params))
            mincut = aot_function(f, nop, nop, partition_fn=min_cut_rematerialization_partition)
            print("  aot_function, min-cut   ", dtypes(mincut, x, *params))
            torch._dynamo.reset()
            print("  torch.compile(aot_eager)", dtypes(torch.compile(f, backend="aot_eager"), x, *params))
