"""``module_db``: torch.nn modules (``ModuleInfo`` entries) checked as PyTorch's in-tree
``TestEagerFusionModuleInfo`` checks them, through the one pipeline the OpInfos go through.

A ``ModuleInfo`` is two ops to the harness, ``NAME.train`` and ``NAME.eval`` (one,
``NAME.train``, where its ``train_and_eval_differ`` is false, as in-tree): a :class:`ModuleEntry`
each. Sample ``i`` of one is the ``i``-th ``ModuleInput`` (with a forward input) that the
``ModuleInfo``'s ``module_inputs_func`` makes for that training mode. Its call is
``ModuleCall(module)(parameters, buffers, *forward_args, **forward_kwargs)``: the module, built
from the input's constructor arguments, called through ``torch.func.functional_call`` with its
parameters and buffers as inputs of the compiled function. So the check compares gradients
w.r.t. the parameters like any input's, and a buffer the module updates in place (batch norm's
running statistics) like any input mutation.

The code that builds a sample (:func:`module_samples` and what it uses) depends on torch only:
a repro script carries a copy of it (``optests._source``), so the script rebuilds the module by
this very code.
"""

from __future__ import annotations

import functools
import sys
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ._script import comment_text, register_source
from ._source import copy_definitions
from ._threads import on_shallow_stack

#: The in-tree test whose ``DecorateInfo`` decorations (and a ModuleInfo's plain decorators) the
#: sweep honours, by mode (static, dynamic).
TEST_CLASS = "TestEagerFusionModuleInfo"
TEST_NAMES = {False: "test_aot_autograd_module_exhaustive", True: "test_aot_autograd_symbolic_module_exhaustive"}

#: The variants of a module's ops: its training mode, as ids spell it.
TRAINING = {"train": True, "eval": False}

#: The input transforms that derive no samples from a module's (every other one does): ``resized``,
#: whose sizes would not match the sizes the module was built with (``in_features``,
#: ``normalized_shape``, ``num_heads``): most of its samples would fail eagerly, and the others
#: call a module that was never built.
NOT_FOR_MODULES = frozenset({"resized"})


def is_module_info(obj: object) -> bool:
    """Whether ``obj`` is a ``ModuleInfo`` (or an object with its two defining attributes)."""
    return isinstance(getattr(obj, "module_cls", None), type) and callable(getattr(obj, "module_inputs_func", None))


class ModuleCall:
    """``module`` called through ``torch.func.functional_call`` with the parameters and buffers
    it is given: ``call(parameters, buffers, *args, **kwargs)`` is ``module(*args, **kwargs)``
    with each parameter and buffer replaced by the tensor of its name (which the call's
    in-place updates then update). Its own parameters and buffers are never used."""

    def __init__(self, module: torch.nn.Module) -> None:
        self.module = module

    def __call__(
        self, parameters: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor], /, *args: Any, **kwargs: Any
    ) -> Any:
        return torch.func.functional_call(self.module, (parameters, buffers), args, kwargs)

    def __repr__(self) -> str:
        return f"ModuleCall({type(self.module).__name__})"


def build_module(info: Any, module_input: Any, device: str, dtype: torch.dtype, training: bool) -> torch.nn.Module:
    """The module ``module_input``'s constructor arguments make, on ``device`` in ``dtype``, in
    training mode or not; a lazy module is called once (without grad), to size its parameters."""
    constructor = module_input.constructor_input
    module: torch.nn.Module = info.module_cls(*constructor.args, **constructor.kwargs).to(device).to(dtype)
    module.train(training)
    if isinstance(module, torch.nn.modules.lazy.LazyModuleMixin):
        forward = module_input.forward_input
        with torch.no_grad():
            torch.nn.Module.__call__(module, *forward.args, **forward.kwargs)
    return module


def module_inputs(info: Any, device: str, dtype: torch.dtype, training: bool, seed: int) -> list[Any]:
    """The ModuleInfo's inputs that have a forward input, made under ``seed``."""
    torch.manual_seed(seed)
    made = info.module_inputs_func(info, device=device, dtype=dtype, requires_grad=True, training=training)
    return [m for m in made if m.forward_input is not None]


def module_call(
    info: Any, module_input: Any, device: str, dtype: torch.dtype, training: bool, seed: int
) -> tuple[ModuleCall, list[Any], dict[str, Any]]:
    """``(func, args, kwargs)``: the module built under ``seed`` (its parameters drawn from it),
    its parameters and buffers (detached, each parameter a leaf that requires grad as it did),
    and the forward input."""
    torch.manual_seed(seed)
    module = build_module(info, module_input, device, dtype, training)
    forward = module_input.forward_input
    return ModuleCall(module), [*module_state(module), *forward.args], dict(forward.kwargs)


def module_state(module: torch.nn.Module) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """``(parameters, buffers)`` of ``module`` by name, as :class:`ModuleCall` takes them: each
    detached (a leaf that requires grad as the parameter did). A tensor under two names (tied
    weights) is given once, under its first name: ``functional_call`` ties the others to it
    (given under both, the compiled call's two inputs would be two tensors, which it refuses)."""
    parameters = {name: p.detach().requires_grad_(p.requires_grad) for name, p in module.named_parameters()}
    buffers = {name: b.detach().requires_grad_(b.requires_grad) for name, b in module.named_buffers()}
    return parameters, buffers


def module_samples(
    info: Any, device: str, dtype: torch.dtype, training: bool, seed: int, only: int | None = None
) -> list[tuple[ModuleCall, list[Any], dict[str, Any]]]:
    """The module's samples in order (``only``: just that one), each built under ``seed`` anew,
    so that sample ``i`` is the same whether it is made alone or with the others."""
    inputs = module_inputs(info, device, dtype, training, seed)
    chosen = range(len(inputs)) if only is None else [only]
    return [module_call(info, inputs[i], device, dtype, training, seed) for i in chosen]


@dataclass(frozen=True)
class ModuleEntry:
    """One ``ModuleInfo`` in one training mode: an op to the harness, named ``NAME.train`` or
    ``NAME.eval``. ``locator`` is how a script finds the ModuleInfo: ``(module, attribute,
    index)`` of the list that holds it, or of the ModuleInfo itself (index None); None where it
    cannot be found by name."""

    info: Any
    training: bool
    locator: tuple[str, str, int | None] | None = None

    @property
    def name(self) -> str:
        return str(self.info.name) if hasattr(self.info, "name") else self.info.module_cls.__name__

    @property
    def variant_test_name(self) -> str:
        return "train" if self.training else "eval"

    @property
    def op(self) -> type:
        return self.info.module_cls  # type: ignore[no-any-return]

    supports_autograd = True

    def supports_dtype(self, dtype: torch.dtype, device: str) -> bool:
        supported = self.info.supported_dtypes(device) if hasattr(self.info, "supported_dtypes") else self.info.dtypes
        return dtype in set(supported)

    @property
    def decorators(self) -> tuple[Any, ...]:
        return tuple(getattr(self.info, "decorators", ()) or ())

    def param_kwargs(self, dtype: torch.dtype) -> dict[str, Any]:
        """What PyTorch's ``modules`` decorator gives a test (and ``DecorateInfo.active_if``)."""
        return {"module_info": self.info, "dtype": dtype, "training": self.training}


def entries(infos: Sequence[Any], locate: Callable[[int], tuple[str, str, int | None] | None]) -> list[ModuleEntry]:
    """Each ModuleInfo's ops: ``NAME.train``, and ``NAME.eval`` where train and eval differ
    (``train_and_eval_differ``), as the in-tree test runs them."""
    out: list[ModuleEntry] = []
    for i, info in enumerate(infos):
        modes = (True, False) if getattr(info, "train_and_eval_differ", False) else (True,)
        out.extend(ModuleEntry(info, training, locate(i)) for training in modes)
    return out


def locate(info: Any) -> tuple[str, str, int | None] | None:
    """Where a script finds a ModuleInfo that is not in a database: an attribute of the module
    that defines its class or its inputs function."""
    for func in (info.module_inputs_func, info.module_cls):
        module = sys.modules.get(getattr(func, "__module__", "") or "")
        for attr, value in vars(module).items() if module is not None else ():
            if value is info and module is not None and module.__name__ != "__main__":
                return module.__name__, attr, None
    return None


# -- the harness's side: samples, repro lines -----------------------------------------------------

#: Where each sample's call came from: (entry, device, dtype, index, seed), for its repro script.
_ORIGINS: weakref.WeakKeyDictionary[ModuleCall, tuple[ModuleEntry, str, torch.dtype, int, int]] = weakref.WeakKeyDictionary()


def samples(entry: ModuleEntry, device: str, dtype: torch.dtype, seed: int) -> list[tuple[ModuleCall, list[Any], dict[str, Any]]]:
    """The entry's samples (:func:`module_samples`), made in a fork of the RNG, warnings ignored."""
    import warnings

    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. a deprecated constructor argument: not ours to report
        made = on_shallow_stack(functools.partial(module_samples, entry.info, device, dtype, entry.training, seed))
    for index, (call, _, _) in enumerate(made):
        _ORIGINS[call] = (entry, device, dtype, index, seed)
    return made


def _info_expr(entry: ModuleEntry) -> tuple[str, str] | None:
    """(import line, expression) that find the entry's ModuleInfo in a script."""
    if entry.locator is None:
        return None
    module, attr, index = entry.locator
    return f"from {module} import {attr}", (attr if index is None else f"list({attr})[{index}]")


def setup_lines(entry: ModuleEntry, device: str, dtype: torch.dtype, index: int, seed: int, redraw: int | None) -> str | None:
    """Lines that define ``func``, ``args`` and ``kwargs`` as sample ``index`` (and with
    ``redraw``, ``randomized_sample``: the sample drawn under that seed), for a finding's
    few-line repro, which imports optests: the module is rebuilt by name, nothing is written out."""
    found = _info_expr(entry)
    if found is None:
        return None
    line, info = found
    call = f"module_samples(info, {device!r}, {dtype}, {entry.training}, {{}}, only={index})"
    return "\n".join(
        [
            line,
            f"from {__name__} import module_samples",
            f"info = {info}  # {comment_text(f'{entry.name}, {entry.variant_test_name} mode')}",
            f"((func, args, kwargs),) = {call.format(seed)}",
        ]
        + ([f"randomized_sample = tuple({call.format(redraw)}[0][1:])"] if redraw is not None else [])
    )


def script_source(call: ModuleCall) -> tuple[list[str], str]:
    """(lines, expression) that make ``call`` in a standalone script, which needs torch, not
    optests: the lines hold a copy of this module's code that builds a sample; the expression
    builds the module from its ModuleInfo, found by name. A TODO where it cannot be found."""
    origin = _ORIGINS.get(call)
    found = _info_expr(origin[0]) if origin is not None else None
    if origin is None or found is None:
        return (
            [],
            f"None  # TODO: {comment_text(repr(call))} cannot be rebuilt by name; build the module and pass ModuleCall(module)",
        )
    entry, device, dtype, index, seed = origin
    line, info = found
    copied = copy_definitions(__name__, ["module_samples"])  # headed "# -- from optests._modules"
    return [*copied.imports, line, f"\n\n{copied.code}\n"], (
        f"module_samples({info}, {device!r}, {dtype}, {entry.training}, {seed}, only={index})[0][0]"
        f"  # {comment_text(f'{entry.name}, {entry.variant_test_name} mode')}, ModuleInput {index}"
    )


register_source(ModuleCall, script_source)  # a finding's standalone script rebuilds the module
