"""AOTAutograd: an output that is a view of an input, traced under ``torch.inference_mode()``,
loses ``requires_grad`` and its view relationship.

Under ``torch.inference_mode()``, eager ``x.view(-1)`` of an ``x`` that requires grad (and was made
outside the mode) is a view of ``x`` (``_base is x``) with ``requires_grad=True``. Compiled by
AOTAutograd (``aot_function``, no-op compilers) and first called under the mode, the output shares
``x``'s storage but is no view of ``x`` and has ``requires_grad=False``: the metadata collected
under the mode records the aliased output as not requiring grad, and the runtime regenerates the
alias from ``x`` detached. Every view op tried does the same (``x[0]``, ``diagonal``,
``unbind``, ``split``); under ``torch.no_grad()`` the compiled output matches eager's.
``torch.compile(backend="aot_eager")`` matches eager for ``view``; for ``unsafe_split`` (and
``unsafe_chunk``), whose outputs eager records as views of the input only under the mode, it too
returns ``requires_grad=False`` where eager's output requires grad, on a fresh compile and
when the function compiled with grad, then under ``no_grad()``, is called under the mode.

Shown by optests' ``grad-mode`` call pattern (``grad-mode-1``: the call, and so the trace, under
``torch.inference_mode()``), metadata stage; and by its ``sequence`` pattern (``sequence-6``:
the call under ``no_grad()`` and then ``inference_mode()`` after one with grad, on one compiled
function): ``unsafe_split``, ``unsafe_chunk``."""

import torch
from functorch.compile import aot_function, min_cut_rematerialization_partition, nop


def f(x):
    return x.view(-1)


def g(x):
    return torch.unsafe_split(x, 1)[0]


def show(name, out, x):
    print(
        f"{name:13} requires_grad={out.requires_grad!s:5} _is_view={out._is_view()!s:5} "
        f"_base is x={out._base is x!s:5} "
        f"shares x's storage={out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()}"
    )


print("torch", torch.__version__)
for fn, call in ((f, "x.view(-1)"), (g, "torch.unsafe_split(x, 1)[0]")):
    for mode in (torch.no_grad, torch.inference_mode):
        print(f"{call} under torch.{mode.__name__}():")
        x = torch.randn(2, 3, requires_grad=True)
        compiled = aot_function(fn, nop, nop, partition_fn=min_cut_rematerialization_partition, keep_inference_input_mutations=True)
        torch._dynamo.reset()
        dynamo = torch.compile(fn, backend="aot_eager")
        with mode():
            show("eager", fn(x), x)
            show("aot_function", compiled(x), x)
            show("aot_eager", dynamo(x), x)
