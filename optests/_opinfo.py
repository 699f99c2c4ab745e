"""OpInfo databases: which ops exist, their samples (deterministic), and how to check each.

``module_db`` (and a database of your own that lists ``ModuleInfo`` entries) is a database too:
each ModuleInfo is one op per training mode (:class:`optests._modules.ModuleEntry`), and the
functions here hand its samples, decorations and repro lines over to :mod:`optests._modules`."""

from __future__ import annotations

import atexit
import fnmatch
import functools
import gc
import importlib
import logging
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import torch

from . import _modules
from ._backends import IN_TREE_TESTS
from ._key import BUILTIN_DBS, KNOWN_DBS, MODULE_DBS
from ._modules import ModuleEntry, entries, is_module_info, setup_lines
from ._script import comment_text
from ._threads import on_shallow_stack as _on_shallow_stack
from .errors import DatabaseError as DatabaseError

_T = TypeVar("_T")

# A process that has loaded the OpInfo databases spends about 1.1 s of its exit in the garbage
# collector's last full pass over their objects (measured; 0.13 s without it). Every sweep
# process exits this way, the xdist workers one after another before the controller, so skip
# that pass. The sweep closes its files and child processes itself before exit.
# Not where torch has loaded triton (CUDA builds, such as PyPI's torch 2.15 for Linux): its
# nanobind bindings report every object the skipped pass leaves alive as a leak, thirty lines
# of noise on stderr at each process's exit.


def _skip_last_collection() -> None:
    if "triton" not in sys.modules:
        gc.freeze()


atexit.register(_skip_last_collection)

_BUILTIN_MODULES = {
    "op_db": "torch.testing._internal.common_methods_invocations",
    "hop_db": "torch.testing._internal.hop_db",
    "custom_op_db": "torch.testing._internal.custom_op_db",
    "module_db": "torch.testing._internal.common_modules",
}

#: Seed set before every ``sample_inputs`` call so samples are identical on every worker and run.
SAMPLE_SEED = 0
#: The seed the samples are drawn again under, for the check's randomized rerun: data from the
#: op's own generator keeps its preconditions (positive definite, in the domain, ...), where
#: uniform noise makes ill-conditioned inputs whose verdicts rounding can flip.
RANDOMIZED_SAMPLE_SEED = 1

#: The in-tree test whose ``DecorateInfo`` decorations (and an OpInfo's plain decorators, which
#: PyTorch's test framework applies to every test) the sweep honours, by mode.
TEST_CLASS = "TestEagerFusionOpInfo"
TEST_NAMES = IN_TREE_TESTS[TEST_CLASS]


@dataclass(frozen=True)
class OpRef:
    """One OpInfo of one database; ``id`` is ``name`` or ``name.variant``."""

    db: str
    name: str
    variant: str
    index: int  # position in its database (OpInfos may share a name across databases)

    @property
    def id(self) -> str:
        return f"{self.name}.{self.variant}" if self.variant else self.name

    @property
    def source(self) -> str:
        """Where it is, for a message: ``mymod:ops[3] (name 'a', variant 'b')``."""
        variant = f", variant {self.variant!r}" if self.variant else ""
        return f"{self.db}[{self.index}] (name {self.name!r}{variant})"


@functools.cache
def _load(db: str) -> tuple[Any, ...]:
    if db in _BUILTIN_MODULES:
        # torch's test utilities import torch.utils.cpp_extension, which in a CUDA build of torch
        # on a machine without CUDA (PyPI's 2.15 on a CPU machine) logs "No CUDA runtime is
        # found" to stderr: not ours to report, and it would break one-line errors
        extension_log = logging.getLogger("torch.utils.cpp_extension")
        level = extension_log.level
        try:
            with warnings.catch_warnings():
                # e.g. deprecations in the packages torch's test utilities import (numba, under
                # a -W error run): not findings, and they must not stop the sweep
                warnings.simplefilter("ignore")
                extension_log.setLevel(logging.ERROR)
                module = importlib.import_module(_BUILTIN_MODULES[db])
        except Exception as e:  # e.g. a missing test dependency of torch's: expecttest
            raise DatabaseError(
                f"OpInfo database {db!r}: importing {_BUILTIN_MODULES[db]} failed: {type(e).__name__}: {e}"
            ) from None
        finally:
            extension_log.setLevel(level)
        if db in MODULE_DBS:
            return _module_entries(tuple(getattr(module, db)), _BUILTIN_MODULES[db], db)
        return tuple(getattr(module, db))
    if ":" not in db:
        raise DatabaseError(f"unknown OpInfo database {db!r}; known: {', '.join(KNOWN_DBS)}, or MODULE:ATTRIBUTE")
    try:
        ops = tuple(import_attribute(db))
    except (ValueError, TypeError) as e:
        raise DatabaseError(f"OpInfo database {db!r}: {e}") from None

    if any(is_module_info(o) for o in ops):  # a module database of the user's
        bad = [o for o in ops if not is_module_info(o)]
        if bad:
            raise DatabaseError(f"OpInfo database {db!r}: {bad[0]!r} is not a ModuleInfo, as others in it are")
        module_name, _, attr = db.partition(":")
        return _module_entries(ops, module_name, attr)
    bad = [o for o in ops if not (hasattr(o, "sample_inputs") and hasattr(o, "name"))]
    if bad:
        raise DatabaseError(f"OpInfo database {db!r}: {bad[0]!r} is not an OpInfo")
    return ops


def _module_entries(infos: tuple[Any, ...], module: str, attr: str) -> tuple[Any, ...]:
    """A list of ModuleInfos as the database's ops: one per training mode each."""

    return tuple(entries(infos, lambda i: (module, attr, i)))


def import_attribute(spec: str) -> Any:
    """The object a ``MODULE:ATTRIBUTE`` reference names; ``ValueError`` with a one-line reason."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError("expected MODULE:ATTRIBUTE")
    from ._imports import ImportFailed, import_module

    try:
        module = import_module(module_name)
    except ImportFailed as e:  # whatever it raised, sys.exit too
        raise ValueError(str(e)) from None
    if not hasattr(module, attr):
        raise ValueError(f"{module_name} has no attribute {attr!r}")
    return getattr(module, attr)


def opinfo(ref: OpRef) -> Any:
    return _load(ref.db)[ref.index]


def all_ops(dbs: Sequence[str] = BUILTIN_DBS) -> list[OpRef]:
    """The ops of ``dbs``, each database's in its order (a ModuleInfo's ``train`` op, then its ``eval``)."""
    refs = []
    for db in dbs:
        for i, op in enumerate(_load(db)):
            refs.append(OpRef(db, op.name, op.variant_test_name, i))
    return refs


def refuse_clashes(refs: Sequence[OpRef]) -> None:
    """A :class:`DatabaseError` where two of ``refs`` share an op id (``name`` or ``name.variant``),
    in one database or across two: their samples' test ids, results and registry entries would
    be one. The message names the id and both ops."""
    seen: dict[str, OpRef] = {}
    for ref in refs:
        first = seen.setdefault(ref.id, ref)
        if first is not ref:
            raise DatabaseError(
                f"two ops have the id {ref.id!r}: {first.source} and {ref.source}; their test ids would clash, rename one"
            )


def select(refs: Sequence[OpRef], patterns: Sequence[str]) -> list[OpRef]:
    """Ops whose id (``name`` or ``name.variant``) or name matches any glob in ``patterns``."""
    if not patterns:
        return list(refs)
    return [r for r in refs if any(fnmatch.fnmatchcase(r.id, p) or fnmatch.fnmatchcase(r.name, p) for p in patterns)]


@dataclass(frozen=True)
class SampleCall:
    """One sample as the check takes it, with the settings the OpInfo asks for."""

    func: Any
    args: list[Any]
    kwargs: dict[str, Any]
    #: An OpInfo's ``supports_autograd``; ``"auto"`` for a module's (gradients where some input
    #: and some output require grad, as for a given sample).
    check_gradients: bool | Literal["auto"]
    skip_correctness_check: bool


def applicable(ref: OpRef, device: str, dtype: torch.dtype) -> bool:
    return bool(opinfo(ref).supports_dtype(dtype, device))


def samples(ref: OpRef, device: str, dtype: torch.dtype, redraw: bool = False) -> Iterator[SampleCall]:
    """The op's samples in order, generated under a fixed seed (same values everywhere)."""
    return samples_of(opinfo(ref), device, dtype, redraw)


def samples_of(op: Any, device: str, dtype: torch.dtype, redraw: bool = False) -> Iterator[SampleCall]:
    """Samples of any OpInfo object (also one outside the databases). ``redraw``: the same
    samples with other random values, drawn in one stream from ``RANDOMIZED_SAMPLE_SEED``
    (torch's sample iterator otherwise reseeds itself before each sample, with a seed of its own).
    A module's (:class:`optests._modules.ModuleEntry`) are built by :mod:`optests._modules`."""

    if isinstance(op, ModuleEntry):
        for func, args, kwargs in _modules.samples(op, device, dtype, RANDOMIZED_SAMPLE_SEED if redraw else SAMPLE_SEED):
            yield SampleCall(func, args, kwargs, "auto", False)
        return
    grad = bool(op.supports_autograd)
    skip_correctness = bool(getattr(op, "skip_correctness_check_compile_vs_eager", False))
    extra = {"set_seed": False} if redraw else {}

    def generate() -> list[Any]:
        # seeded here, on the shallow stack too: where CUDA is not initialized, torch.manual_seed
        # formats the caller's whole stack three times (measured: 1.2 ms at a sweep's depth, 0.3 ms
        # here; a sweep's collection seeds once per op, its runner child once per op again)
        with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. "sparse CSR support is in beta": not ours to report
            torch.manual_seed(RANDOMIZED_SAMPLE_SEED if redraw else SAMPLE_SEED)
            return list(op.sample_inputs(device, dtype, requires_grad=grad, **extra))

    generated = _on_shallow_stack(generate)
    for s in generated:
        yield SampleCall(op.op, [s.input, *s.args], dict(s.kwargs), grad, skip_correctness)


@dataclass(frozen=True)
class Decorations:
    """What an OpInfo's decorations ask of the in-tree test the sweep stands for."""

    #: Why the test is skipped (``unittest.skip``); empty: it runs.
    skip: str = ""
    #: Tolerances raised by ``toleranceOverride`` or ``precisionOverride`` (None: the defaults).
    atol: float | None = None
    rtol: float | None = None
    #: Whose decorations they are, and the in-tree test they aim at.
    owner: str = "OpInfo"
    test_class: str = TEST_CLASS

    @property
    def skip_message(self) -> str:
        """How a skipped sample's record says why ("" when the test runs)."""
        return f"the {self.owner}'s decorations skip {self.test_class} here: {self.skip}" if self.skip else ""

    def assert_equals(self, dtype: torch.dtype, *, leaves_of_dtype: bool = False) -> Callable[..., None]:
        """The comparison the check uses: NaN equal to NaN, with the override's tolerances (for
        the tensors of ``dtype`` only, where ``leaves_of_dtype``: see :func:`optests._check.tolerant`)."""
        # here, not at the top: the check loads AOTAutograd (functorch.compile), which a process that
        # only lists or collects samples never needs
        from ._check import assert_close_equal_nan, tolerant

        return (
            tolerant(dtype, self.atol, self.rtol, leaves_of_dtype=leaves_of_dtype) if self.tolerance else assert_close_equal_nan
        )

    @property
    def tolerance(self) -> str:
        """How the results record the override, e.g. ``OpInfo tolerance override(atol=0.005, rtol=0.0001)``."""
        if self.atol is None and self.rtol is None:
            return ""
        return f"{self.owner} tolerance override(atol={self.atol or 0:g}, rtol={self.rtol or 0:g})"


def decorations(op: Any, dynamic: bool, device: str, dtype: torch.dtype, test: str = TEST_CLASS) -> Decorations:
    """The skips and tolerance overrides an OpInfo declares for the in-tree ``test``'s test (one
    of ``optests._backends.IN_TREE_TESTS``, ``TestEagerFusionOpInfo`` by default; the backend's) of this mode (or
    for every test), on this device and dtype, matched as PyTorch's test
    framework matches them (``DecorateInfo.is_active``). Other decorators (``skipCPUIfNoLapack``,
    ``slowTest``, ...) decide at run time inside a test class, and are not honoured.
    A module's (:class:`optests._modules.ModuleEntry`) are those aimed at
    ``TestEagerFusionModuleInfo`` under every backend (``common_modules`` aims none at an inductor
    test: PyTorch runs ``module_db`` through AOTAutograd alone), matched with the training mode as
    ``active_if`` sees it."""
    from torch.testing._internal.common_device_type import precisionOverride, toleranceOverride
    from torch.testing._internal.opinfo.core import DecorateInfo

    test_class, test_name, owner = test, IN_TREE_TESTS[test][dynamic], "OpInfo"
    param_kwargs: dict[str, Any] = {"dtype": dtype}
    if isinstance(op, _modules.ModuleEntry):
        test_class, test_name, owner = _modules.TEST_CLASS, _modules.TEST_NAMES[dynamic], "ModuleInfo"
        param_kwargs = op.param_kwargs(dtype)
    active: list[Any] = []
    for d in getattr(op, "decorators", ()) or ():
        if not isinstance(d, DecorateInfo):
            active.append(d)  # a plain decorator applies to every test of the op
            continue
        try:
            if d.is_active(test_class, test_name, device, dtype, param_kwargs):
                active.extend(d.decorators)
        except Exception:  # an active_if that cannot judge these arguments
            continue
    skip, atol, rtol, tolerance_set = "", None, None, False
    for dec in active:
        if isinstance(dec, toleranceOverride) and dtype in dec.d:
            atol, rtol, tolerance_set = float(dec.d[dtype].atol), float(dec.d[dtype].rtol), True
        elif isinstance(dec, precisionOverride) and dtype in dec.d and not tolerance_set:
            atol = float(dec.d[dtype])  # the framework raises atol only; toleranceOverride wins
        elif not skip:
            skip = _skip_reason(dec)
    return Decorations(skip, atol, rtol, owner, test_class)


def _skip_reason(decorator: Any) -> str:
    """The reason of a ``unittest.skip``-style decorator ("" for any other decorator)."""

    def probe() -> None:  # pragma: no cover - never called
        pass

    try:
        decorated = decorator(probe)
    except Exception:
        return ""
    if getattr(decorated, "__unittest_skip__", False):
        return str(getattr(decorated, "__unittest_skip_why__", "") or "skipped")
    return ""


def repro_setup(ref: OpRef, device: str, dtype: torch.dtype, index: int, redraw: bool = False) -> str | None:
    """Script lines that rebuild sample ``index`` of ``ref`` by name (defines func, args, kwargs,
    and with ``redraw`` randomized_sample: the same sample drawn under the randomized rerun's seed).
    None where the lines cannot name it (a module database's ModuleInfo that cannot be found)."""

    entry = opinfo(ref)
    if isinstance(entry, ModuleEntry):
        return setup_lines(entry, device, dtype, index, SAMPLE_SEED, RANDOMIZED_SAMPLE_SEED if redraw else None)
    module, _, attr = ref.db.partition(":")
    if not attr:
        module, attr = _BUILTIN_MODULES[ref.db], ref.db
    draw = f"list(op.sample_inputs({device!r}, {dtype}, requires_grad=op.supports_autograd{{}}))[{index}]"
    return "\n".join(
        [
            f"from {module} import {attr}",
            f"op = list({attr})[{ref.index}]  # {comment_text(ref.id)}",
            f"torch.manual_seed({SAMPLE_SEED})",
            f"sample = {draw.format('')}",
            "func, args, kwargs = op.op, [sample.input, *sample.args], sample.kwargs",
        ]
        + (
            [
                f"torch.manual_seed({RANDOMIZED_SAMPLE_SEED})",
                f"other = {draw.format(', set_seed=False')}",
                "randomized_sample = ([other.input, *other.args], other.kwargs)",
            ]
            if redraw
            else []
        )
    )


@functools.cache
def cached_samples(ref: OpRef, device: str, dtype: torch.dtype) -> tuple[SampleCall, ...]:
    """``samples`` as a tuple, kept for the life of the process. Collection makes every sample
    (to count them), and the sweep's runner child is forked afterwards: it inherits them all
    rather than making each op's samples again (every op's float32 CPU samples: about 210 MiB,
    8 s to make, measured)."""
    return tuple(samples(ref, device, dtype))


def redrawn(op: Any, device: str, dtype: torch.dtype) -> tuple[SampleCall, ...]:
    """Any OpInfo's samples drawn again under ``RANDOMIZED_SAMPLE_SEED``, for the randomized
    rerun; none if its generator fails that way (the rerun then uses noise)."""
    try:
        return tuple(samples_of(op, device, dtype, redraw=True))
    except Exception:
        return ()


@functools.lru_cache(maxsize=4)
def randomized_samples(ref: OpRef, device: str, dtype: torch.dtype) -> tuple[SampleCall, ...]:
    """:func:`redrawn` for a database op, kept for the few ops the runner child is working on
    (it runs an op's samples together)."""
    return redrawn(opinfo(ref), device, dtype)
