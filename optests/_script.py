"""A call as Python source: the few lines of a finding's repro, and the inputs rebuilt exactly.

:func:`render` writes the lines that rerun :func:`optests.aot_autograd_check` on a call (a
finding's ``repro``); :func:`setup_source` the lines that define ``func``, ``args`` and ``kwargs``.
The check imports this module only when it makes a finding: nothing here is on the hot path.
The standalone script, which carries the check's own code, is :mod:`optests._repro`'s.
"""

from __future__ import annotations

import io
import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeGuard

import torch

#: Storages with at most this many elements are written out value by value.
MAX_INLINE_ELEMENTS = 256

#: dtypes that ``torch.tensor(t.tolist(), dtype=t.dtype)`` gives back bit for bit (NaN payloads aside)
_LITERAL_DTYPES = frozenset(
    {
        torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
        torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128,
    }
)  # fmt: skip

#: Non-tensor leaves whose ``repr`` is the expression that makes them again.
_REPR_TYPES = (
    type(None),
    bool,
    int,
    str,
    bytes,
    range,
    type(Ellipsis),
    torch.dtype,
    torch.memory_format,
    torch.layout,
    torch.Size,
)


def comment_text(text: object) -> str:
    """``text`` as it may stand in a comment of a generated script, whatever it holds: what is
    not printable (a line break, which would end the comment; a NUL or a lone surrogate, which no
    Python source may hold) is written as its escape (``\\n``, ``\\x00``, ``\\udc80``); the rest as it is."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def _dotted(name: object) -> TypeGuard[str]:
    """Whether ``name`` can follow ``import`` in a script: a dotted name of identifiers."""
    return isinstance(name, str) and all(part.isidentifier() for part in name.split("."))


def func_name(func: Callable[..., Any]) -> str:
    """A short readable name: ``aten.sin.default``, ``mylib::foo``, ``torch.nn.functional.relu``."""
    if isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return str(func)
    qualname = getattr(func, "_qualname", None)  # torch.library.custom_op's CustomOpDef
    if isinstance(qualname, str):
        return qualname
    return getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or type(func).__name__


#: Callables that write their own standalone-script source, by type: a sample source registers
#: its own (:class:`optests._modules.ModuleCall`: lines that rebuild the module), so that this
#: module need not import the sample sources.
_SOURCES: dict[type, Callable[[Any], tuple[list[str], str]]] = {}


def register_source(cls: type, source: Callable[[Any], tuple[list[str], str]]) -> None:
    """Have :func:`func_source` name an instance of ``cls`` in a script by ``source(instance)``:
    (import and definition lines, expression)."""
    _SOURCES[cls] = source


def func_source(func: Callable[..., Any]) -> tuple[list[str], str]:
    """(import lines, expression) naming ``func`` in a script, or an expression that explains
    why it cannot be named."""
    for cls, source in _SOURCES.items():
        if isinstance(func, cls):  # a module's sample: the lines rebuild the module
            return source(func)
    if isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return [], f"torch.ops.{func}"
    qualname = getattr(func, "_qualname", None)
    if isinstance(qualname, str) and "::" in qualname:
        ns, name = qualname.split("::", 1)
        module = getattr(getattr(func, "_init_fn", None), "__module__", None)
        imports = [f"import {module}  # registers {comment_text(qualname)}"] if _dotted(module) and module != "__main__" else []
        return imports, f"torch.ops.{ns}.{name}.default"
    owner, method = getattr(func, "__objclass__", None), getattr(func, "__name__", "")
    if isinstance(owner, type) and issubclass(owner, torch._C.TensorBase) and getattr(torch.Tensor, method, None) is func:
        return [], f"torch.Tensor.{method}"  # a method, as an OpInfo's in-place variant: torch.Tensor.mul_
    module = getattr(func, "__module__", None)
    if _dotted(module) and module != "__main__":
        for name in (getattr(func, "__qualname__", ""), getattr(func, "__name__", "")):
            if _dotted(name) and _resolves(module, name, func):
                # `import torch` does not import every submodule (torch.testing._internal.hop_db)
                return ([] if module == "torch" else [f"import {module}"]), f"{module}.{name}"
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


# ---------------------------------------------------------------------------------------------
# Inputs, rebuilt exactly.


def _is_plain(t: torch.Tensor) -> bool:
    return (
        type(t) is torch.Tensor
        and t.layout == torch.strided
        and t.device.type != "meta"
        and not t.is_conj()
        and not t.is_neg()
        and not t.is_quantized
    )


def _storage_key(t: torch.Tensor) -> tuple[str, int]:
    return str(t.device), t.untyped_storage().data_ptr()


def _storage_elements(t: torch.Tensor) -> int:
    return int(t.untyped_storage().nbytes()) // t.element_size()


def _dense_non_overlapping(t: torch.Tensor) -> bool:
    """True when the elements fill their memory exactly once, in some dimension order."""
    expected = 1
    for size, stride in sorted(((sz, st) for sz, st in zip(t.shape, t.stride()) if sz != 1), key=lambda p: p[1]):
        if stride != expected:
            return False
        expected *= size
    return True


def _is_whole(t: torch.Tensor) -> bool:
    """A tensor that is not a view and is its whole storage: ``torch.tensor(values)`` makes it."""
    return not t._is_view() and t.storage_offset() == 0 and _storage_elements(t) == t.numel() and _dense_non_overlapping(t)


def _typed(t: torch.Tensor) -> str:
    device = "" if t.device.type == "cpu" else f", device={str(t.device)!r}"
    return f"dtype={t.dtype}{device}"


def _grad_suffix(t: torch.Tensor) -> str:
    """What makes a rebuilt tensor a leaf that requires grad, or a non-leaf, as ``t`` is."""
    if t.grad_fn is not None:
        return ".requires_grad_().clone()"
    return ".requires_grad_()" if t.requires_grad else ""


class _Inputs:
    """Script lines that rebuild the tensors among ``values`` exactly as the check got them:
    size, strides, storage offset, dtype, device, ``requires_grad`` and leaf-ness; one object
    where the call passed one object twice; and where tensors share a storage (views of one base),
    that storage made once as a base and each tensor taken from it, so that they share it again.

    Values are written out where a storage has at most ``MAX_INLINE_ELEMENTS`` elements. Larger
    ones, and objects that have no literal, go to ``saved``: a list the script loads as ``SAVED``
    from a file beside it. Without ``saved`` (a finding's few-line repro) they get random
    stand-ins, or a TODO."""

    def __init__(self, values: Sequence[Any], saved: list[Any] | None) -> None:
        self.lines: list[str] = []
        self.imports: list[str] = []
        self._saved = saved
        self._exprs: dict[int, str] = {}
        self._tensors = [leaf for v in values for leaf in _leaves(v) if isinstance(leaf, torch.Tensor)]  # alive: ids stay unique
        self._uses = Counter(id(t) for t in self._tensors)
        self._groups: dict[tuple[str, int], list[torch.Tensor]] = {}
        for t in {id(t): t for t in self._tensors}.values():
            if _is_plain(t) and t.untyped_storage().nbytes():
                self._groups.setdefault(_storage_key(t), []).append(t)
        self._bases: dict[tuple[str, int], tuple[str, torch.Tensor | None, bool]] = {}
        self._counts: Counter[str] = Counter()

    def expr(self, v: Any) -> str:
        """An expression for ``v`` (a list, tuple or dict is written as a literal of its items)."""
        if isinstance(v, torch.Tensor):
            return self._tensor(v)
        if type(v) is list:
            return "[" + ", ".join(self.expr(x) for x in v) + "]"
        if type(v) is tuple:
            return "(" + ", ".join(self.expr(x) for x in v) + ("," if len(v) == 1 else "") + ")"
        if type(v) is dict:
            return "{" + ", ".join(f"{self.expr(k)}: {self.expr(x)}" for k, x in v.items()) + "}"
        return self._leaf(v)

    def _name(self, prefix: str) -> str:
        n = self._counts[prefix]
        self._counts[prefix] += 1
        return f"{prefix}{n}"

    def _line(self, prefix: str, code: str, comment: str = "") -> str:
        name = self._name(prefix)
        self.lines.append(f"{name} = {code}" + (f"  # {comment_text(comment)}" if comment else ""))
        return name

    def _save(self, obj: Any) -> str | None:
        if self._saved is None:
            return None
        if not (isinstance(obj, torch.Tensor) and _is_plain(obj)):  # what torch.save takes, the script gets
            try:
                torch.save(obj, io.BytesIO())
            except Exception:
                return None
        self._saved.append(obj)
        return f"SAVED[{len(self._saved) - 1}]"

    def _tensor(self, t: torch.Tensor) -> str:
        if id(t) in self._exprs:
            return self._exprs[id(t)]
        group = self._groups.get(_storage_key(t)) if _is_plain(t) and t.untyped_storage().nbytes() else None
        in_place = False
        if not _is_plain(t):
            code, comment = self._other(t)
        elif group is None or (len(group) == 1 and _is_whole(t)):
            (code, comment), in_place = self._whole(t), True
        else:
            code, comment = self._member(t, group), ""
        if code.isidentifier():
            expr = code
        elif in_place and not comment and self._uses[id(t)] == 1:
            expr = code  # its own storage, used once: written where it is used
        else:
            expr = self._line("x", code, comment)
        self._exprs[id(t)] = expr
        return expr

    def _values(self, t: torch.Tensor) -> tuple[str, str, bool]:
        """(expression, comment, exact strides): ``t``'s values, written out, saved or a stand-in."""
        n = t.numel()
        if n <= MAX_INLINE_ELEMENTS and t.dtype in _LITERAL_DTYPES:
            return f"torch.tensor({_nested(t.detach().cpu().tolist())}, {_typed(t)})", "", False
        saved = self._save(t.detach())
        if saved is not None:
            return saved, "", True
        shape = list(t.shape)
        if t.dtype.is_floating_point or t.dtype.is_complex:
            code = f"torch.randn({shape}, {_typed(t)})"
        elif t.dtype == torch.bool:
            code = f"torch.randint(0, 2, {shape}{_typed(t).removeprefix('dtype=torch.bool')}).bool()"
        else:
            code = f"torch.randint(0, 10, {shape}, {_typed(t)})"
        return code, f"values not embedded ({n} elements)", False

    def _whole(self, t: torch.Tensor) -> tuple[str, str]:
        """A tensor that shares its storage with no other input and is all of it."""
        if t.numel() == 0:
            return f"torch.empty_strided({list(t.shape)}, {list(t.stride())}, {_typed(t)}){_grad_suffix(t)}", ""
        code, comment, exact = self._values(t)
        if not exact and not t.is_contiguous():
            code = f"torch.empty_strided({list(t.shape)}, {list(t.stride())}, {_typed(t)}).copy_({code})"
        return code + _grad_suffix(t), comment

    def _member(self, t: torch.Tensor, group: list[torch.Tensor]) -> str:
        """A tensor that is a view, or shares its storage with other inputs: taken from its base."""
        base, base_tensor, base_grad = self._base(group)
        if t is base_tensor:
            return base
        src = base if t.grad_fn is not None or not base_grad else f"{base}.detach()"
        leaf_grad = ".requires_grad_()" if t.requires_grad and t.grad_fn is None else ""
        if t._is_view() and t.dtype == group[0].dtype:
            return f"{src}.as_strided({list(t.shape)}, {list(t.stride())}, {t.storage_offset()}){leaf_grad}"
        # not a view (or of another dtype), yet on that storage: set_ puts it there
        return (
            f"torch.empty(0, {_typed(t)}).set_({src}.untyped_storage(), {t.storage_offset()}, {list(t.shape)}, "
            f"{list(t.stride())}){leaf_grad}"
        )

    def _base(self, group: list[torch.Tensor]) -> tuple[str, torch.Tensor | None, bool]:
        """(name, the input it is or None, whether it requires grad) of the group's base, made
        on first use: the input that is the whole storage, else the storage as a 1-D tensor."""
        key = _storage_key(group[0])
        if key in self._bases:
            return self._bases[key]
        whole = next((t for t in group if _is_whole(t) and t.dtype == group[0].dtype), None)
        if whole is not None:
            code, comment = self._whole(whole)
            requires_grad = whole.requires_grad
        else:
            first = group[0]
            with torch.no_grad():
                storage = first.detach().new_empty(0).set_(first.untyped_storage(), 0, (_storage_elements(first),), (1,))
            code, comment, _ = self._values(storage)
            requires_grad = any(t.grad_fn is not None for t in group)
            # a view of a non-leaf (which autograd lets an in-place op change) needs a non-leaf base
            non_leaf = any(t._is_view() and t._base is not None and t._base.grad_fn is not None for t in group)
            code += ".requires_grad_().clone()" if non_leaf else ".requires_grad_()" if requires_grad else ""
        self.lines.append("")
        if whole is not None:
            self.lines.append("# one storage, as the check got it: an input, and the views of it below")
        else:
            below = "the inputs below are views of it" if len(group) > 1 else "the input below is a view of it"
            self.lines.append(f"# one storage, as the check got it: {below}")
        name = self._line("base", code, comment)
        self._bases[key] = (name, whole, requires_grad)
        return self._bases[key]

    def _other(self, t: torch.Tensor) -> tuple[str, str]:
        """A tensor the check copies with ``clone`` (sparse, a subclass, conjugate or quantized)."""
        saved = self._save(t.detach())
        kind = f"a {type(t).__name__} with layout {t.layout}"
        if saved is not None:
            return saved + _grad_suffix(t), f"{kind}, as torch.save keeps it"
        return f"torch.zeros({list(t.shape)}, {_typed(t)}){_grad_suffix(t)}", f"TODO: {kind} was here"

    def _leaf(self, v: Any) -> str:
        if type(v) is float:
            return _float(v)
        if type(v) is complex:
            return f"complex({_float(v.real)}, {_float(v.imag)})"
        if type(v) is torch.device:
            return f"torch.device({str(v)!r})"
        if type(v) is slice:
            return f"slice({self.expr(v.start)}, {self.expr(v.stop)}, {self.expr(v.step)})"
        if type(v) in _REPR_TYPES:
            return repr(v)
        if callable(v):
            imports, named = func_source(v)
            if "TODO" not in named:
                self.imports.extend(i for i in imports if i not in self.imports)
                return named
        saved = self._save(v)
        if saved is not None:
            return self._line("v", saved, f"a {type(v).__name__}, as pickle keeps it")
        return self._line("v", "None", f"TODO: a {type(v).__name__} was here: {repr(v)[:60]}")


def _leaves(v: Any) -> Iterator[Any]:
    """The leaves of ``v`` as :meth:`_Inputs.expr` writes it: inside lists, tuples and dicts."""
    if type(v) in (list, tuple):
        for x in v:
            yield from _leaves(x)
    elif type(v) is dict:
        for x in v.values():
            yield from _leaves(x)
    else:
        yield v


def setup_source(
    func: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    randomized_sample: tuple[Sequence[Any], Mapping[str, Any]] | None = None,
) -> str:
    """Script lines that define ``func``, ``args`` and ``kwargs`` (and ``randomized_sample``)."""
    imports, func_expr = func_source(func)
    body, extra = _call_lines(args, kwargs, randomized_sample, saved=None)
    return "\n".join([*imports, *(i for i in extra if i not in imports), f"func = {func_expr}", *body])


def value_source(value: Any) -> tuple[list[str], str]:
    """(lines, expression) that make ``value`` in a script, with :func:`setup_source`'s inputs'
    rules (tensors exactly as the check got them; a storage too large to write out gets a random
    stand-in): the lines, imports first, go before the expression."""
    inputs = _Inputs([value], None)
    expr = inputs.expr(value)
    return [*inputs.imports, *inputs.lines], expr


def _call_lines(
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    randomized_sample: tuple[Sequence[Any], Mapping[str, Any]] | None,
    saved: list[Any] | None,
) -> tuple[list[str], list[str]]:
    """(lines that define args, kwargs and randomized_sample, the imports they need)."""
    values: list[Any] = [list(args), dict(kwargs)]
    if randomized_sample is not None:
        values += [list(randomized_sample[0]), dict(randomized_sample[1])]
    inputs = _Inputs(values, saved)
    defined = [f"args = {inputs.expr(values[0])}", f"kwargs = {inputs.expr(values[1])}"]
    if randomized_sample is not None:
        defined.append("# the same call drawn with other data: the randomized rerun takes its floating values")
        defined.append(f"randomized_sample = ({inputs.expr(values[2])}, {inputs.expr(values[3])})")
    lines = inputs.lines[1:] if inputs.lines[:1] == [""] else inputs.lines
    return lines + defined, inputs.imports


def render(
    func: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    keywords: Mapping[str, object],
    *,
    randomized_sample: tuple[Sequence[Any], Mapping[str, Any]] | None = None,
    setup: str | None = None,
    beyond: Mapping[str, object] | None = None,
) -> str:
    """A script that reruns the check with ``keywords`` (``dynamic`` and each option the script
    writes out, by ``repr``; :meth:`optests._check.CheckOptions.rendered` picks them). ``setup``
    (defining func, args, kwargs, and ``randomized_sample`` when given) overrides the rendering
    from values, e.g. to rebuild an OpInfo sample by name. ``beyond``: options that are not
    keywords of ``aot_autograd_check`` (the backend, ...); with any, the script calls
    ``optests.run_check`` with them, and raises the finding it returns."""
    body = setup if setup is not None else setup_source(func, args, kwargs, randomized_sample)
    opts = [f"{k}={v!r}" for k, v in keywords.items()]
    if randomized_sample is not None:
        opts.append("randomized_sample=randomized_sample")
    if not beyond:
        return "\n".join(
            [
                "import torch",
                "from optests import aot_autograd_check",
                body,
                f"aot_autograd_check(func, args, kwargs, {', '.join(opts)})",
            ]
        )
    opts += [f"{k}={v!r}" for k, v in beyond.items()]
    return "\n".join(
        [
            "import torch",
            "from optests import run_check",
            body,
            f"result = run_check(func, args, kwargs, {', '.join(opts)})",
            "if result.error is not None:",
            "    raise result.error",
        ]
    )
