"""AOTAutograd: a gradient hook on an input that gets no gradient (``register_hook`` on a tensor
the output does not depend on differentiably, such as the condition of a ``torch.where``) is
never called in eager, and is called once with ``None`` after a compiled call (``aot_function``,
``torch.compile`` with ``aot_eager`` or inductor), leaf or not: the compiled function is one
autograd node whose backward returns ``None`` for that input, and the hook runs on it. A hook
written for eager (``lambda g: g * 2``, ``g.clamp(...)``) raises in the compiled backward only,
and one that counts or logs gradients sees a call eager never makes.

Found by optests' ``hooks`` call pattern (recording hooks on every input that requires grad):
``nn.functional.cosine_embedding_loss`` and ``nn.functional.hinge_embedding_loss``, whose
``target`` takes no gradient (backward: the hook on input 2 is called once, with None; eager
calls it 0 times)."""

import torch
from functorch.compile import aot_function, nop


def f(x, t):
    return torch.where(t > 0, x, -x)


print("torch", torch.__version__)
calls = {
    "eager": f,
    "aot_function": aot_function(f, nop, nop),
    "torch.compile(aot_eager)": torch.compile(f, backend="aot_eager", fullgraph=True),
    "torch.compile(inductor)": torch.compile(f, fullgraph=True),
}
for name, fn in calls.items():
    for leaf in (True, False):
        x = torch.randn(3, requires_grad=True)
        t = torch.randn(3, requires_grad=True)
        t = t if leaf else t * 1
        seen = []
        t.register_hook(seen.append)
        fn(x, t).sum().backward()
        doubling = torch.randn(3, requires_grad=True)
        doubling.register_hook(lambda g: g * 2)
        try:
            fn(x, doubling).sum().backward()
            doubled = "runs"
        except TypeError as e:
            doubled = f"raises TypeError: {e}"
        print(f"{name:25} {'leaf' if leaf else 'non-leaf':8} hook on t called {len(seen)} time(s) with {seen}; a hook g * 2 {doubled}")
