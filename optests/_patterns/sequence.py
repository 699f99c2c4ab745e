"""``sequence``: one function compiled once, with ``torch.compile(fullgraph=True, dynamic=None)``
and the key's backend as a Dynamo backend (``aot_eager``: Dynamo's ``aot_eager``), and called
over an ordered list of inputs without a Dynamo reset between them, as a user's loop calls it:
static first, automatically dynamic after a change. Each call is compared with eager (outputs,
metadata, mutations, and gradients where inputs require grad). Call 0 is the sample, judged as
the single call is; each derived sample then calls one kind of change, by index: 0 other sizes,
then 1 and 0 for each size; 1 other strides (non-dense, transposed, channels_last); 2 other
``requires_grad``; 3 another dtype; 4 other Python scalars (ints, floats, bools); 5 inputs that
alias one another (two halves of one storage, one tensor twice, an overlapping slice); 6 the call
under ``no_grad`` and ``inference_mode`` after one with grad; 7 ``mark_dynamic`` and 8
``mark_unbacked`` on every dim of size >= 2, then other sizes so marked; 9 (``module_db``) the
module in the other training mode, its parameters not requiring grad, as float64, with a forward
hook, with a backward hook; 10 (the op's first sample) the op's samples after it, in order, as a
training loop calls them (at most 8). A call eager rejects, or one whose marks the op's shapes cannot keep
(Dynamo's constraint violation, a data-dependent guard on an unbacked size), or a module hook
Dynamo does not support under ``fullgraph``, is dropped. A later call that differs from eager is
a finding at stage ``sequence`` naming the call and what changed; the record notes the number of
calls and of Dynamo compiles. In the ``dynamic`` modes the first call's dims of size >= 2 are
marked ``maybe_mark_dynamic`` (its graph is symbolic); no randomized rerun."""

from __future__ import annotations

import copy
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree

from .._script import func_source, register_source, value_source
from .._source import copy_definitions
from .._transforms import (
    MAX_PAIRS,
    Sample,
    _aliased,
    _duplicated,
    _fresh,
    _grad_subset,
    _noncontiguous,
    _transposed,
)
from ..patterns import Made, Transform
from .derived import differentiable, same
from .grad_mode import GRAD_MODES
from .single import Single

#: The kinds of sequence, by index: (name, what the derived sample's description says).
KINDS: tuple[tuple[str, str], ...] = (
    ("sizes", "other sizes, then 1 and 0 for each size"),
    ("strides", "other strides and layouts"),
    ("requires-grad", "other inputs requiring grad"),
    ("dtype", "floating inputs as another dtype"),
    ("scalars", "other Python scalars"),
    ("aliasing", "inputs that alias one another"),
    ("grad-mode", "under torch.no_grad() and torch.inference_mode() after a call with grad"),
    ("mark-dynamic", "torch._dynamo.mark_dynamic on every dim of size >= 2"),
    ("mark-unbacked", "torch._dynamo.decorators.mark_unbacked on every dim of size >= 2"),
    ("module", "the module changed between calls (training mode, requires_grad, dtype, hooks)"),
    ("samples", "the op's samples after it, in order"),
)

#: At most this many sizes, or scalars, are varied one by one.
MOST = 3


@dataclass
class Step:
    """One later call of a sequence: its inputs, and what it is, as messages name it."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    #: What this call is, in the terms of its kind: ``sizes [0, 5]``, ``under torch.no_grad()``.
    label: str
    #: The grad mode it is called under (an index of :data:`GRAD_MODES`), None: as it is.
    grad_mode: int | None = None
    #: ``mark_dynamic`` or ``mark_unbacked`` on every dim of size >= 2 of the compiled call's inputs.
    mark: str = ""
    #: What is done to the function (a module's) before the call, on eager's and compiled's alike.
    before: Callable[[Any], None] | None = None
    #: The module's hook it adds (a compiled call Dynamo refuses under fullgraph is dropped).
    hook: bool = False


@dataclass
class Steps:
    """A sequence: the function called (a module's, copied: the calls change it), what the first
    call is in the terms of its kind, and the later calls."""

    func: Callable[..., Any]
    first: str
    later: list[Step] = field(default_factory=list)


def _shapes(sample: Sample) -> str:
    return "sizes " + " and ".join(str(list(sample.tensor(pos).shape)) for pos in sample.inputs)


def _distinct_sizes(sample: Sample) -> list[int]:
    return sorted({s for pos in sample.inputs for s in sample.tensor(pos).shape if s >= 2})[:MOST]


def _resize(sample: Sample, mapping: dict[int, int], seed: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    generator = torch.Generator().manual_seed(zlib.crc32(f"{seed}:{sorted(mapping.items())}".encode()))
    replace = {
        pos: _fresh(sample.tensor(pos), tuple(mapping.get(s, s) for s in sample.tensor(pos).shape), generator)
        for pos in sample.inputs
    }
    return sample.build(replace)


def _requires_grad(sample: Sample) -> str:
    wanted = [sample.name(pos) for pos in sample.inputs if sample.tensor(pos).requires_grad]
    return f"requires_grad on {', '.join(wanted)}" if wanted else "no input requiring grad"


def _dtypes(sample: Sample) -> str:
    return "dtypes " + ", ".join(str(sample.tensor(pos).dtype).removeprefix("torch.") for pos in sample.inputs)


def _scalar_leaves(sample: Sample) -> list[int]:
    return [pos for pos, leaf in enumerate(sample.leaves) if type(leaf) in (bool, int, float)][:MOST]


def _scalars(sample: Sample, leaves: list[Any]) -> str:
    return ", ".join(f"{sample.name(pos)}={leaves[pos]!r}" for pos in _scalar_leaves(sample))


def _other(value: Any, n: int) -> Any:
    if type(value) is bool:
        return not value
    if type(value) is int:
        return value + n
    return value * (1.5 if n == 1 else 0.5) + 0.25 * n


def _marked(sample: Sample, mark: str) -> str:
    dims = [f"{sample.name(pos)} dims {[d for d, s in enumerate(sample.tensor(pos).shape) if s >= 2]}" for pos in sample.inputs]
    return f"{mark} on " + "; ".join(d for d in dims if not d.endswith("[]"))


def _module(func: Any) -> torch.nn.Module | None:
    module = getattr(func, "module", None)
    return module if isinstance(module, torch.nn.Module) else None


def _forward_hook(module: Any, inputs: Any, out: Any) -> Any:
    return pytree.tree_map(lambda t: t * 2 if isinstance(t, torch.Tensor) and t.is_floating_point() else t, out)


def _backward_hook(module: Any, grad_inputs: Any, grad_outputs: Any) -> Any:
    return tuple(g * 2 if g is not None else None for g in grad_inputs)


def _train(training: bool) -> Callable[[Any], None]:
    def before(func: Any) -> None:
        func.module.train(training)

    return before


def _add_forward_hook(func: Any) -> None:
    func.module.register_forward_hook(_forward_hook)


def _add_backward_hook(func: Any) -> None:
    func.module.register_full_backward_hook(_backward_hook)


class Following:
    """The op's first sample's callable, carrying the samples after it (``samples``): called,
    it is the callable."""

    def __init__(self, func: Callable[..., Any], following: tuple[tuple[Any, Any], ...]) -> None:
        self.func, self.following = func, following

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"{self.func!r} (and the {len(self.following)} samples after this one)"


def _following_source(func: Following) -> tuple[list[str], str]:
    """(lines, expression) that make ``func`` in a repro script: the class, copied, around the
    op's callable, and the samples after the first written out as the check's inputs are."""
    lines, inner = func_source(func.func)
    if "TODO" in inner:
        return lines, inner
    made, samples = value_source(list(func.following))
    copied = copy_definitions(__name__, ["Following"])  # headed "# -- from optests._patterns.sequence"
    return [*lines, *copied.imports, f"\n\n{copied.code}\n", *made], f"Following({inner}, tuple({samples}))"


register_source(Following, _following_source)  # a sequence-10 finding's script calls the op's later samples


class Sequence(Single):
    """The first call as the single call; then :meth:`steps` says the later calls, which
    ``optests._check._sequence`` makes on the same compiled function."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.kind = KINDS[index][0]

    def steps(self, func: Callable[..., Any], args: Any, kwargs: Any) -> Steps:
        """The sequence of this kind from the sample ``func(*args, **kwargs)``."""
        sample = Sample(args, kwargs)
        kind, seed = self.kind, self.index
        if kind == "sizes":
            found = Steps(func, _shapes(sample))
            sizes = _distinct_sizes(sample)
            for mapping in [{s: s + 1 for s in sizes}] + [{s: n} for s in sizes for n in (1, 0)]:
                a, k = _resize(sample, mapping, seed)
                found.later.append(Step(a, k, _shapes(Sample(a, k))))
            return found
        if kind == "strides":
            found = Steps(func, "the sample's layouts")
            made = [*_noncontiguous(sample, 1, seed).values(), *_transposed(sample, 1, seed).values()]
            found.later += [Step(*m.call, m.description) for m in made]
            return found
        if kind == "requires-grad":
            found = Steps(func, _requires_grad(sample))
            for m in list(_grad_subset(sample, 1, seed).values())[: MOST + 1]:
                found.later.append(Step(*m.call, _requires_grad(Sample(*m.call))))
            return found
        if kind == "dtype":
            floating = [sample.tensor(pos) for pos in sample.inputs if sample.tensor(pos).is_floating_point()]
            dtype = torch.float32 if all(t.dtype == torch.float64 for t in floating) else torch.float64
            a, k = sample.build(dtype=dtype)
            return Steps(func, _dtypes(sample), [Step(a, k, _dtypes(Sample(a, k)))])
        if kind == "scalars":
            found = Steps(func, _scalars(sample, sample.leaves))
            for pos in _scalar_leaves(sample):
                for n in (1, 2):
                    leaves = list(sample.leaves)
                    leaves[pos] = _other(leaves[pos], n)
                    a, k = pytree.tree_unflatten(leaves, sample.spec)
                    found.later.append(Step(*Sample(a, k).build(), _scalars(sample, leaves)))
                    if type(sample.leaves[pos]) is bool:
                        break
            return found
        if kind == "aliasing":
            found = Steps(func, "no inputs aliased")
            aliased, duplicated = _aliased(sample, 1, seed), _duplicated(sample, 1, seed)
            # one of each: two halves of one storage, one tensor twice, an overlapping slice
            made = [m for m in (aliased.get(0), duplicated.get(0), aliased.get(MAX_PAIRS)) if m is not None]
            found.later += [Step(*m.call, m.description) for m in made]
            return found
        if kind == "grad-mode":
            found = Steps(func, "grad enabled")
            found.later += [Step(*sample.build(), f"under {name}", grad_mode=i) for i, (name, _) in enumerate(GRAD_MODES)]
            return found
        if kind in ("mark-dynamic", "mark-unbacked"):
            mark = "mark_dynamic" if kind == "mark-dynamic" else "mark_unbacked"
            found = Steps(func, f"{_shapes(sample)}, unmarked")
            found.later.append(Step(*sample.build(), f"{_shapes(sample)}, {_marked(sample, mark)}", mark=mark))
            a, k = _resize(sample, {s: s + 1 for s in _distinct_sizes(sample)}, seed)
            found.later.append(Step(a, k, f"{_shapes(Sample(a, k))}, {_marked(Sample(a, k), mark)}", mark=mark))
            return found
        if kind == "samples":
            found = Steps(func, "sample 0")
            for n, (a, k) in enumerate(getattr(func, "following", ()), 1):
                found.later.append(Step(*Sample(a, k).build(), f"sample {n}"))
            return found
        assert kind == "module"
        module = _module(func)
        assert module is not None
        func = copy.copy(func)
        func.module = copy.deepcopy(module)  # type: ignore[attr-defined]
        training = module.training
        found = Steps(func, "train()" if training else "eval()")
        found.later.append(Step(*sample.build(), "eval()" if training else "train()", before=_train(not training)))
        found.later.append(Step(*sample.build(), "train()" if training else "eval()", before=_train(training)))
        grad_off = {pos: False for pos in sample.inputs if sample.tensor(pos).requires_grad}
        if grad_off:
            found.later.append(Step(*sample.build(requires_grad=grad_off), "no parameter or input requiring grad"))
        if any(sample.tensor(pos).is_floating_point() for pos in sample.inputs):
            found.later.append(Step(*sample.build(dtype=torch.float64), "parameters, buffers and inputs as float64"))
        found.later.append(Step(*sample.build(), "a forward hook (out * 2)", before=_add_forward_hook, hook=True))
        found.later.append(Step(*sample.build(), "a full backward hook (grad_input * 2)", before=_add_backward_hook, hook=True))
        return found


def _applies(kind: str, sample: Sample) -> bool:
    module = _module(sample.origin.func) if sample.origin is not None else None
    if kind == "module":
        return module is not None
    if kind == "samples":
        return bool(getattr(sample.origin, "following", ()))
    if kind in ("sizes", "mark-dynamic", "mark-unbacked"):
        return module is None and bool(_distinct_sizes(sample))
    if kind == "strides":
        return bool(_noncontiguous(sample, 1, 0) or _transposed(sample, 1, 0))
    if kind in ("requires-grad", "grad-mode"):
        return differentiable(sample)
    if kind == "dtype":
        return any(sample.tensor(pos).is_floating_point() for pos in sample.inputs)
    if kind == "scalars":
        return bool(_scalar_leaves(sample))
    assert kind == "aliasing"
    return bool(_aliased(sample, 1, 0) or _duplicated(sample, 1, 0))


def _derive(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    if not sample.inputs:
        return {}
    found = {
        i: same(sample, f"the sample, then {what}, on one compiled function")
        for i, (kind, what) in enumerate(KINDS)
        if _applies(kind, sample)
    }
    samples = [k for k, _ in KINDS].index("samples")
    if samples in found:  # the samples after it ride on the callable the derived sample calls
        assert sample.origin is not None
        call, description = found[samples][:2]
        found[samples] = Made(call, description, Following(sample.origin.func, tuple(getattr(sample.origin, "following", ()))))
    return found


SEQUENCE = Transform(_derive, pattern=Sequence, count=len(KINDS))
