"""Running a call: compiled by the backend, called by the pattern under the RNG seed."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import functorch.compile  # noqa: F401  (the aot_eager backend's, loaded with the check: before a runner forks)
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .._backends import get_backend
from .._findings import user_code
from .._patterns import Called, CallPattern
from ._options import _Checking

_SEED = 42


_RANDOM_DATA_SEED = 1234


@contextlib.contextmanager
def _seeded(tensors: Sequence[torch.Tensor], seed: int = _SEED) -> Iterator[None]:
    devices = sorted({t.device.index or 0 for t in tensors if t.device.type == "cuda"})
    with torch.random.fork_rng(devices=devices):
        _manual_seed(seed)
        yield


def _manual_seed(seed: int) -> None:
    """``torch.manual_seed(seed)``; where no accelerator is in use, the CPU generator's alone:
    torch's queues a seeding of each accelerator not yet initialized, formatting the caller's
    stack for each (about 2 ms a call, five calls a check), which only an accelerator
    initialized later would run, and the next check seeds it then."""
    if _accelerator_in_use():
        torch.manual_seed(seed)
    else:
        torch.default_generator.manual_seed(seed)


def _accelerator_in_use() -> bool:
    """An accelerator that ``torch.manual_seed`` seeds at once: CUDA, XPU or MTIA initialized, MPS
    built in, or a PrivateUse1 backend registered."""
    initialized = (torch.cuda.is_initialized(), torch.xpu.is_initialized(), torch.mtia.is_initialized())  # type: ignore[no-untyped-call]
    return any(initialized) or bool(torch._C._has_mps) or torch._C._get_privateuse1_backend_name() != "privateuseone"


def _called(pattern: CallPattern, fn: Callable[..., Any], inputs: list[torch.Tensor], seed: int = _SEED) -> Called:
    """``fn`` (eager, compiled or the float64 reference's eager) called as ``pattern`` calls it,
    under the RNG seed: the same for each, so ops that draw random numbers agree. What the op or
    the backend raises is theirs, ``SystemExit`` too (:func:`optests._findings.user_code`)."""
    with _seeded(inputs, seed), user_code():
        return pattern.call(fn, inputs)


def _user_gradients(pattern: CallPattern, called: Called, inputs: list[torch.Tensor]) -> tuple[torch.Tensor | None, ...]:
    """``pattern``'s gradients of what :func:`_called` made: as user code (the op's backward)."""
    with user_code():
        return pattern.gradients(called, inputs)


@dataclass
class _Run:
    inputs: list[torch.Tensor]
    called: Called | None = None
    grads: tuple[torch.Tensor | None, ...] | None = None
    error: BaseException | None = None  # forward (or trace) error
    backward_error: BaseException | None = None

    @property
    def out(self) -> Any:
        """The function's outputs, as it returned them."""
        return self.called.out if self.called is not None else None


class _DrawsRandom(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Notes the first op tagged ``nondeterministic_seeded`` that runs under it, and whether any
    such op drew from the global CPU generator (its state moved: not a ``generator=`` of the
    call's own, not another device's)."""

    found: str | None = None
    drew_globally: bool = False

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if torch.Tag.nondeterministic_seeded not in func.tags:
            return func(*args, **(kwargs or {}))
        if self.found is None:
            self.found = str(func)
        before = torch.get_rng_state()
        out = func(*args, **(kwargs or {}))
        self.drew_globally = self.drew_globally or not torch.equal(before, torch.get_rng_state())
        return out


def _random_draws(pattern: CallPattern, eager: Callable[..., Any], inputs: list[torch.Tensor]) -> _DrawsRandom | None:
    """What eager's call, as ``pattern`` makes it (forward only), draws on ``inputs``: a
    :class:`_DrawsRandom` that watched it; None where the call raises."""
    draws = _DrawsRandom()  # type: ignore[no-untyped-call]
    try:
        with draws, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _called(pattern, eager, inputs)
    except Exception:
        return None
    return draws


def _is_inductor(backend: str) -> bool:
    """Whether ``backend`` names inductor, by any of its names (``dynamo:inductor`` is the same
    backend object's kind)."""
    return getattr(get_backend(backend), "backend", None) == "inductor"


def _draws_as_eager(backend: str, called: Called | None) -> bool:
    """Whether ``backend``'s compiled call (``called``, None where it raised) draws random
    numbers as eager does: the backend says so (``Backend.same_random``), or it is inductor and
    the pattern called it under ``fallback_random=True`` (``rng``)."""
    fallback = called is not None and called.fallback_random
    return get_backend(backend).same_random or (fallback and _is_inductor(backend))


def _compile(call: Callable[..., Any], opts: _Checking) -> Callable[..., Any]:
    options = opts.options
    return get_backend(options.backend).compile(
        call, dynamic=options.dynamic, disable_functionalization=options.disable_functionalization
    )
