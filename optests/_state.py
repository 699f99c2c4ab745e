"""The process state a check runs in, kept the same for every check: a verdict depends on the
sample only, not on what a check before it (a backend, an op, a sample generator) left behind.

:func:`kept` runs a check and then puts back what it changed: grad mode, the default dtype and
device, deterministic algorithms (and the fill of uninitialized memory, cuDNN's flags, oneDNN on
or off), anomaly mode, autocast, float32 matmul precision, torch's intra-op thread count, and the
configs of Dynamo, AOTAutograd and Inductor. What cannot be put back from outside (an inference
mode, a torch function or dispatch mode, saved tensors hooks or a functorch transform entered and
still held) is named by :func:`leaks`; the runner's child then is unfit (:func:`fit`), and is
replaced.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

#: The devices whose autocast state is kept.
_AUTOCAST = ("cpu", "cuda")
#: The cuDNN flags kept.
_CUDNN = ("enabled", "deterministic", "benchmark", "allow_tf32")


def _configs() -> dict[str, Any]:
    """The config modules a check reads, by name (Inductor's only once something imported it)."""
    import sys

    import torch._dynamo.config
    import torch._functorch.config

    found: dict[str, Any] = {"dynamo": torch._dynamo.config, "functorch": torch._functorch.config}
    inductor = sys.modules.get("torch._inductor.config")
    if inductor is not None:
        found["inductor"] = inductor
    return found


#: Each kept setting: its name, how to read it, how to set it back (None: it cannot be, from outside).
_SETTINGS: tuple[tuple[str, Callable[[], Any], Callable[[Any], None] | None], ...] = (
    ("grad mode", torch.is_grad_enabled, lambda v: torch._C._set_grad_enabled(v)),
    ("inference mode", torch.is_inference_mode_enabled, None),
    ("default dtype", torch.get_default_dtype, torch.set_default_dtype),
    ("default device", lambda: _default_device(), lambda v: torch.set_default_device(v)),
    (
        "deterministic algorithms",
        lambda: (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()),
        lambda v: torch.use_deterministic_algorithms(v[0], warn_only=v[1]),
    ),
    (
        "deterministic fill of uninitialized memory",
        torch._C._get_deterministic_fill_uninitialized_memory,
        torch._C._set_deterministic_fill_uninitialized_memory,
    ),
    (
        "anomaly mode",
        lambda: (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
        lambda v: torch.set_anomaly_enabled(v[0], v[1]),
    ),
    (
        "autocast",
        lambda: (
            tuple((torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in _AUTOCAST),
            torch.is_autocast_cache_enabled(),
        ),
        lambda v: _set_autocast(*v),
    ),
    (
        "cudnn flags",
        lambda: tuple(getattr(torch.backends.cudnn, f) for f in _CUDNN),
        lambda v: _set_cudnn(*v),
    ),
    ("mkldnn", torch._C._get_mkldnn_enabled, torch._C._set_mkldnn_enabled),
    ("float32 matmul precision", torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
    ("thread count", torch.get_num_threads, torch.set_num_threads),
    (
        "torch function modes",
        torch._C._len_torch_function_stack,
        None,
    ),
    ("torch dispatch modes", torch._C._len_torch_dispatch_stack, None),
    ("saved tensors hooks", lambda: torch._C._autograd._top_saved_tensors_default_hooks(False) is not None, None),
    ("functorch transform level", torch._C._functorch.maybe_current_level, None),
)


def _default_device() -> torch.device | None:
    """The device set as default, or None where none is: setting a device pushes a torch function
    mode, so the state with none is set back as None (``set_default_device(None)``), which leaves
    no mode behind."""
    from torch.utils._device import CURRENT_DEVICE

    return CURRENT_DEVICE


def _set_cudnn(*flags: bool) -> None:
    """Set cuDNN's flags through torch's own setters: torch's test utilities (imported with the
    OpInfo databases) forbid setting them as attributes (``disable_global_flags``)."""
    setters = (
        torch._C._set_cudnn_enabled,
        torch._C._set_cudnn_deterministic,
        torch._C._set_cudnn_benchmark,
        torch._C._set_cudnn_allow_tf32,
    )
    for set_flag, value in zip(setters, flags):
        set_flag(value)


def _set_autocast(devices: tuple[tuple[bool, torch.dtype], ...], cache: bool) -> None:
    for device, (enabled, dtype) in zip(_AUTOCAST, devices):
        torch.set_autocast_enabled(device, enabled)
        torch.set_autocast_dtype(device, dtype)
    torch.set_autocast_cache_enabled(cache)


def _read(read: Callable[[], Any]) -> Any:
    """``read()``; where it raises (a torch function mode still held refuses the call), a value
    that differs from every setting's."""
    try:
        return read()
    except Exception as e:
        return _Unreadable(f"{type(e).__name__}: {e}")


class _Unreadable(str):
    """A setting that could not be read."""


def capture() -> dict[str, Any]:
    """The state checks keep, by setting (the configs as a copy of each)."""
    state = {name: _read(read) for name, read, _ in _SETTINGS}
    for name, module in _configs().items():
        state[f"{name} config"] = _read(module.get_config_copy)
    return state


def restore(state: dict[str, Any]) -> list[str]:
    """Set back every setting that differs from ``state`` (:func:`capture`'s); the names of those
    that still differ (they cannot be set back from outside)."""
    setters = {name: write for name, _, write in _SETTINGS}
    modules = _configs()
    now = capture()
    changed = [name for name, value in now.items() if name in state and value != state[name]]
    if not changed:
        return []
    for name in changed:
        write = setters.get(name)
        if isinstance(state[name], _Unreadable):
            continue
        try:
            if write is not None:
                write(state[name])
            elif name.endswith(" config"):  # only the keys that changed (a deprecated key warns when set)
                was = now[name] if isinstance(now[name], dict) else {}
                modules[name.removesuffix(" config")].load_config({k: v for k, v in state[name].items() if was.get(k) != v})
        except Exception:  # it stays as the check left it, and is named below
            pass
    now = capture()
    return [name for name, value in state.items() if now.get(name) != value]


#: What the last :func:`kept` could not set back.
_LEFT: list[str] = []
#: The state the last :func:`kept` block set back (None: it could not set back all of it).
_SET_BACK: list[dict[str, Any] | None] = [None]


@contextlib.contextmanager
def kept(*, since_last: bool = False) -> Iterator[None]:
    """Run the block, then set back the state it changed (:func:`restore`); what could not be is
    :func:`leaks`. ``since_last``: nothing that changes this state ran since the last block (the
    runner's child between its tasks), so the state that block set back is where this one starts,
    and is not captured again (each capture copies every config: about 2 ms)."""
    last = _SET_BACK[0]
    before = last if since_last and last is not None else capture()
    _SET_BACK[0] = None
    try:
        yield
    finally:
        _LEFT[:] = restore(before)
        _SET_BACK[0] = None if _LEFT else before


def leaks() -> list[str]:
    """What the last :func:`kept` block changed and could not set back (``inference mode``)."""
    return list(_LEFT)


def fit() -> bool:
    """Whether this process may run another check: the last one left nothing behind."""
    return not _LEFT
