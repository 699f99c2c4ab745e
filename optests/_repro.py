"""Repro scripts: Python source that reproduces a check on the same call."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

#: Tensors with at most this many elements are written out value by value.
MAX_INLINE_ELEMENTS = 256

_DEFAULTS: dict[str, object] = {
    "check_gradients": True,
    "try_check_data_specialization": False,
    "skip_correctness_check": False,
    "disable_functionalization": False,
    "check_metadata": True,
    "check_mutations": True,
    "randomize_without_gradients": True,
    "float64_reference": True,
    "randomized_sample": False,
}


def func_name(func: Callable[..., Any]) -> str:
    """A short readable name: ``aten.sin.default``, ``mylib::foo``, ``torch.nn.functional.relu``."""
    if isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return str(func)
    qualname = getattr(func, "_qualname", None)  # torch.library.custom_op's CustomOpDef
    if isinstance(qualname, str):
        return qualname
    return getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or type(func).__name__


def func_source(func: Callable[..., Any]) -> tuple[list[str], str]:
    """(import lines, expression) naming ``func`` in a script, or an expression that explains
    why it cannot be named."""
    if isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return [], f"torch.ops.{func}"
    qualname = getattr(func, "_qualname", None)
    if isinstance(qualname, str) and "::" in qualname:
        ns, name = qualname.split("::", 1)
        module = getattr(getattr(func, "_init_fn", None), "__module__", None)
        imports = [f"import {module}  # registers {qualname}"] if module and module != "__main__" else []
        return imports, f"torch.ops.{ns}.{name}.default"
    module = getattr(func, "__module__", None)
    if module and module != "__main__":
        for name in (getattr(func, "__qualname__", ""), getattr(func, "__name__", "")):
            if name and "<" not in name and _resolves(module, name, func):
                return ([] if module.split(".")[0] == "torch" else [f"import {module}"]), f"{module}.{name}"
    return [], f"None  # TODO: {func_name(func)!r} cannot be imported by name; define it here"


def _resolves(module: str, name: str, func: object) -> bool:
    import sys

    obj: object = sys.modules.get(module)
    for part in name.split("."):
        obj = getattr(obj, part, None)
    return obj is func


def _float(v: float) -> str:
    if math.isnan(v):
        return "float('nan')"
    if math.isinf(v):
        return "float('inf')" if v > 0 else "float('-inf')"
    return repr(v)


def _nested(v: Any) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_nested(x) for x in v) + "]"
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, complex):
        return f"complex({_float(v.real)}, {_float(v.imag)})"
    return repr(v)


def tensor_source(t: torch.Tensor) -> str:
    """An expression that rebuilds ``t``: values inline when small, else a random stand-in."""
    dtype = str(t.dtype)
    device = "" if t.device.type == "cpu" else f", device={str(t.device)!r}"
    shape = list(t.shape)
    if t.layout != torch.strided or type(t) is not torch.Tensor:
        expr = f"torch.zeros({shape}, dtype={dtype}{device})  # TODO: a {type(t).__name__} with layout {t.layout} was here"
    elif t.numel() <= MAX_INLINE_ELEMENTS:
        values = _nested(t.detach().cpu().resolve_conj().resolve_neg().tolist())
        expr = f"torch.tensor({values}, dtype={dtype}{device})"
        if not t.is_contiguous() and _dense_non_overlapping(t):
            expr = f"torch.empty_strided({shape}, {list(t.stride())}, dtype={dtype}{device}).copy_({expr})"
    elif t.dtype.is_floating_point or t.dtype.is_complex:
        expr = f"torch.randn({shape}, dtype={dtype}{device})  # values not embedded ({t.numel()} elements)"
    elif t.dtype == torch.bool:
        expr = f"torch.randint(0, 2, {shape}{device}).bool()  # values not embedded ({t.numel()} elements)"
    else:
        expr = f"torch.randint(0, 10, {shape}, dtype={dtype}{device})  # values not embedded ({t.numel()} elements)"
    if t.requires_grad:
        expr = expr.replace(")  #", ").requires_grad_()  #", 1) if "  #" in expr else expr + ".requires_grad_()"
    return expr


def _dense_non_overlapping(t: torch.Tensor) -> bool:
    """True when the elements fill their memory exactly once, in some dimension order."""
    expected = 1
    for size, stride in sorted(((sz, st) for sz, st in zip(t.shape, t.stride()) if sz != 1), key=lambda p: p[1]):
        if stride != expected:
            return False
        expected *= size
    return True


def value_source(v: Any) -> str:
    if isinstance(v, torch.Tensor):
        return tensor_source(v)
    if isinstance(v, list):
        return "[" + ", ".join(value_source(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + "".join(value_source(x) + ", " for x in v).rstrip(" ") + ")" if v else "()"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: {value_source(x)}" for k, x in v.items()) + "}"
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, torch.device):
        return f"torch.device({str(v)!r})"
    return repr(v)


def setup_source(func: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    """Script lines that define ``func``, ``args`` and ``kwargs``."""
    imports, func_expr = func_source(func)
    lines = [*imports, f"func = {func_expr}", f"args = {value_source(list(args))}", f"kwargs = {value_source(dict(kwargs))}"]
    return "\n".join(lines)


def render(
    func: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    options: Mapping[str, object],
    *,
    setup: str | None = None,
    randomized_sample: tuple[Sequence[Any], Mapping[str, Any]] | None = None,
) -> str:
    """A script that reruns the check. ``setup`` (defining func, args, kwargs, and
    ``randomized_sample`` when one is given) overrides the rendering from values, e.g. to
    rebuild an OpInfo sample by name."""
    body = setup if setup is not None else setup_source(func, args, kwargs)
    if setup is None and randomized_sample is not None:
        body += f"\nrandomized_sample = ({value_source(list(randomized_sample[0]))}, {value_source(dict(randomized_sample[1]))})"
    opts = [f"dynamic={options['dynamic']!r}"] + [
        f"{k}={v!r}" for k, v in options.items() if k in _DEFAULTS and _DEFAULTS[k] != v and k != "randomized_sample"
    ]
    if options.get("randomized_sample"):
        opts.append("randomized_sample=randomized_sample")
    return "\n".join(
        [
            "import torch",
            "from optests import aot_autograd_check",
            body,
            f"aot_autograd_check(func, args, kwargs, {', '.join(opts)})",
        ]
    )


STANDALONE = '''\
"""Repro written by `optests check`: {summary}

It needs torch and the module that registers the op, not optests:
    python {script}
It prints what differs and exits with status 1 while the bug is there, 0 once it is fixed.
"""

import os
import sys

sys.path.insert(0, os.getcwd())  # run it from your project, where your op's module is importable

import torch
import torch.utils._pytree as pytree
from functorch.compile import compiled_function, default_partition, min_cut_rematerialization_partition, nop
{imports}
OP = {func}
DYNAMIC = {dynamic}
GRADIENTS = {gradients}  # compare gradients too ("auto": if some input and some output require grad)
NO_FUNCTIONALIZATION = {nofunc}
ARGS, KWARGS = torch.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), {inputs!r}), weights_only=False)

LEAVES, SPEC = pytree.tree_flatten((ARGS, KWARGS))
TENSORS = [x for x in LEAVES if isinstance(x, torch.Tensor)]


def call(tensors):
    it = iter(tensors)
    args, kwargs = pytree.tree_unflatten([next(it) if isinstance(x, torch.Tensor) else x for x in LEAVES], SPEC)
    return OP(*args, **kwargs)


def fresh():
    """Copies with the same values, strides and requires_grad, for each run on its own."""
    out = []
    for t in TENSORS:
        c = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
        with torch.no_grad():
            c.copy_(t)
        out.append(c.requires_grad_(t.requires_grad))
    return out


TRACED = []


def traced(tensors):
    out = call(tensors)
    if not TRACED:  # the first trace: what the fake/meta kernels predicted
        TRACED.append([(o.dtype, [int(s) for s in o.shape], [int(s) for s in o.stride()]) if isinstance(o, torch.Tensor) else None for o in pytree.tree_leaves(out)])
    return out


def seeded(f, tensors):
    with torch.random.fork_rng():
        torch.manual_seed(42)
        return f(tensors)


def loss(out):
    return sum(o.sum().abs() for o in pytree.tree_leaves(out) if isinstance(o, torch.Tensor))


def strides(shape, stride):
    return [st for sz, st in zip(shape, stride) if sz > 1] if all(s > 0 for s in shape) else None


problems = []
eager_in = fresh()
eager_out = seeded(call, eager_in)
eager_leaves = pytree.tree_leaves(eager_out)
grads = GRADIENTS if GRADIENTS != "auto" else any(t.requires_grad for t in eager_in) and any(isinstance(o, torch.Tensor) and o.requires_grad for o in eager_leaves)
diff = [t for t in eager_in if t.requires_grad]
eager_grads = torch.autograd.grad(loss(eager_out), diff, allow_unused=True) if grads else None

compiled = compiled_function(
    traced, nop, nop, dynamic=DYNAMIC, keep_inference_input_mutations=True, disable_functionalization=NO_FUNCTIONALIZATION,
    partition_fn=default_partition if NO_FUNCTIONALIZATION else min_cut_rematerialization_partition,
)
comp_in = fresh()
try:
    comp_out = seeded(compiled, comp_in)
except Exception as e:
    comp_out = None
    problems.append(f"the compiled call raised {{type(e).__name__}}: {{e}}")

if TRACED:
    for i, (pred, real) in enumerate(zip(TRACED[0], eager_leaves)):
        if pred is None or not isinstance(real, torch.Tensor):
            continue
        dtype, shape, stride = pred
        if dtype != real.dtype or shape != list(real.shape):
            problems.append(f"output {{i}}: the trace predicted {{dtype}}{{shape}}, the real kernel returned {{real.dtype}}{{list(real.shape)}}")
        elif strides(shape, stride) != strides(list(real.shape), list(real.stride())):
            problems.append(f"output {{i}}: the trace predicted strides {{stride}}, the real kernel returned {{list(real.stride())}}")
for i, (before, e, c) in enumerate(zip(TENSORS, eager_in, comp_in)):
    e_mut, c_mut = not torch.equal(e.detach(), before.detach()), not torch.equal(c.detach(), before.detach())
    if e_mut != c_mut:
        problems.append(f"input {{i}}: eager {{'mutates' if e_mut else 'does not mutate'}} it, the compiled call {{'does' if c_mut else 'does not'}}")
if comp_out is not None:
    try:
        torch.testing.assert_close(comp_out, eager_out, equal_nan=True)
    except AssertionError as e:
        problems.append("outputs differ: " + str(e).splitlines()[0] + " " + " ".join(str(e).splitlines()[1:4]))
    if grads:
        try:
            comp_grads = torch.autograd.grad(loss(comp_out), [t for t in comp_in if t.requires_grad], allow_unused=True)
            torch.testing.assert_close(comp_grads, eager_grads, equal_nan=True)
        except Exception as e:
            problems.append("gradients differ: " + " ".join(str(e).splitlines()[:4]))

for p in problems:
    print(p)
print("REPRODUCED" if problems else "not reproduced: eager and compiled agree")
sys.exit(1 if problems else 0)
'''


def write_standalone(
    directory: Path,
    name: str,
    func: Callable[..., Any],
    inputs: tuple[Any, Any],
    *,
    summary: str,
    dynamic: bool,
    gradients: object,
    nofunc: bool,
    imports: Sequence[str],
    func_expr: str | None = None,
) -> Path:
    """Write ``NAME.py`` and its saved inputs ``NAME.pt`` into ``directory``; the script's path."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / f"{name}.py"
    torch.save(inputs, directory / f"{name}.pt")
    func_imports, named = func_source(func)
    if func_expr is None or "TODO" not in named:
        func_expr = named
    lines = [f"import {m}  # registers the op" for m in imports] + [
        i for i in func_imports if not any(i.startswith(f"import {m} ") for m in imports)
    ]
    script.write_text(
        STANDALONE.format(
            summary=summary.replace('"""', "'''"),
            script=script.name,
            imports="\n".join(dict.fromkeys(lines)),
            func=func_expr,
            dynamic=dynamic,
            gradients=repr(gradients),
            nofunc=nofunc,
            inputs=f"{name}.pt",
        )
    )
    return script
