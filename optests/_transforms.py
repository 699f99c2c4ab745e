"""Input transforms: derive samples from a sample, so that the check reaches code paths that
plain samples never do (non-dense and transposed layouts, one tensor passed twice, inputs that
share a storage, partial ``requires_grad``, other dtypes, other sizes).

A transform is a deterministic function from one sample ``(args, kwargs)`` to zero or more
derived samples; zero where it does not apply (no tensor of two or more dims to transpose, no
two inputs of one shape to duplicate, ...)::

    for d in derive("transposed", args, kwargs):
        result = run_check(func, d.args, d.kwargs, dynamic, check_gradients=d.check_gradients(True))
        # a derived sample whose eager call fails (stage ``eager``) is not applicable, never a finding

Derived samples never share a tensor with the sample they come from. Every tensor in them is
a leaf; the layout transforms (``noncontiguous``, ``transposed``, ``duplicated``, ``aliased``)
keep values exactly and ``requires_grad`` as it was (``duplicated``, and ``aliased``'s second
sample, pass one input's values for both inputs of a pair). A tensor passed twice stays one
tensor passed twice. Non-tensor arguments are passed through as they are: ``resized`` does not
change sizes written in them (a ``view`` shape): such a sample usually fails eagerly.
``resized`` draws its sizes with hypothesis (seeded, derandomized, no example database) and its
values from a seeded generator, so a rerun derives the same samples (with the same hypothesis
release: another may draw other sizes); :func:`shrink_resized` finds the smallest sizes that
still show a failure. Hypothesis still caches what it reads of local source files in its storage
directory (``.hypothesis/constants``, or ``$HYPOTHESIS_STORAGE_DIRECTORY``); nothing else is written.

The check side imports this module (it imports torch); ``resized`` also needs hypothesis.
"""

from __future__ import annotations

import functools
import importlib
import warnings
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

import torch
import torch.utils._pytree as pytree

from ._key import DERIVATIONS, TRANSFORMS, parse_transforms, transform_name

if TYPE_CHECKING:
    import hypothesis
    from hypothesis.strategies import SearchStrategy

    from ._patterns import CallPattern

__all__ = [
    "DTYPES",
    "MAX_PAIRS",
    "MAX_SIZE",
    "TRANSFORMS",
    "Derived",
    "Origin",
    "Transform",
    "derive",
    "parse_transforms",
    "judged_dtype",
    "makes",
    "not_applicable",
    "shrink_resized",
    "shrinkable",
    "suffixes",
]


#: ``duplicated`` and ``aliased`` derive one sample per pair of same-shaped inputs, at most this many.
MAX_PAIRS = 4

#: The dtypes ``dtypes`` casts floating inputs to, one derived sample each, in this order.
DTYPES: tuple[torch.dtype, ...] = (torch.float64, torch.float16, torch.bfloat16)

#: ``resized`` replaces every size of 2 or more by a size in ``[2, MAX_SIZE]``.
MAX_SIZE = 9

_MIN_SIZE = 2
_DRAW_EXAMPLES = 100


@dataclass(frozen=True, eq=False)
class Derived:
    """One sample derived from another by a transform.

    ``index`` names which of the samples a transform can derive this is, the same whatever else
    it derives from a sample: ``transposed`` 0 (last two dims swapped) and 1 (channels_last);
    ``duplicated`` and ``aliased`` the pair's number; ``grad-subset`` 0 (no input requires grad)
    and 1 + an input's position (it alone requires grad); ``dtypes`` the position in
    :data:`DTYPES`; ``resized`` the draw. ``noncontiguous`` derives one at most and has no index
    (``None``). ``description`` says in a few words what
    changed, e.g. ``args[1] is args[0]`` or ``sizes 3->5, 4->2``.
    """

    transform: str
    index: int | None
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    description: str
    #: The call pattern the check calls it with (``optests._patterns``; "": the default's): a
    #: pattern's derived sample names its own, by its suffix.
    pattern: str = ""
    #: The callable checked in place of the base sample's (``inplace``: the in-place variant).
    func: Callable[..., Any] | None = None
    #: ``False``: its gradients are not checked (``grad-mode``: its outputs require none).
    gradients: bool | None = None
    #: The lower precision a call pattern computes in (``autocast``), whose OpInfo decorations
    #: apply (an override to the results of that dtype only); None: its inputs' dtype.
    judged: torch.dtype | None = None

    @property
    def suffix(self) -> str:
        """What a derived sample's id adds to its base id: ``transposed``, ``duplicated-1``."""
        return self.transform if self.index is None else f"{self.transform}-{self.index}"

    @property
    def requires_grad(self) -> bool:
        """Whether some tensor input requires grad."""
        return any(isinstance(leaf, torch.Tensor) and leaf.requires_grad for leaf in pytree.tree_leaves((self.args, self.kwargs)))

    def check_gradients(self, requested: bool | Literal["auto"]) -> bool | Literal["auto"]:
        """The ``check_gradients`` to check this sample with, for a caller that would check its
        base sample with ``requested``: ``False`` where no input requires grad (the inference
        sample of ``grad-subset``), since the check cannot take gradients of nothing (it would
        report an eager failure, and the inference path would go unchecked); else ``requested``."""
        if self.gradients is False:
            return False
        return requested if self.requires_grad else False


class Origin(Protocol):
    """What a call pattern may need of the sample it derives from, beyond ``(args, kwargs)``:
    the callable, the OpInfo (None for a given sample: its in-place and out variants) and the
    ``check_gradients`` its base sample is checked with. ``optests._pipeline.Base`` is one."""

    @property
    def func(self) -> Callable[..., Any]: ...

    @property
    def opinfo(self) -> Any: ...

    @property
    def check_gradients(self) -> bool | Literal["auto"]: ...


def derive(
    transform: str,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    *,
    draws: int = 1,
    seed: int = 0,
    origin: Origin | None = None,
) -> list[Derived]:
    """The samples ``transform`` derives from ``(args, kwargs)``; empty where it does not apply.

    ``draws`` (``resized`` only): how many size mappings to draw (fewer come back when there are
    not that many). ``seed`` (``resized`` only) picks the sizes and values; the same arguments
    always derive the same samples. ``origin``: the sample's callable and OpInfo, for the call
    patterns that need them (``inplace``, ``out``); without it they derive what they can.
    """
    row = transform_of(transform)
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws}")
    sample = Sample(args, kwargs, origin)
    with warnings.catch_warnings():
        # a pattern may call the op (``out``: what its out= tensors must hold): a warning there
        # is no finding, and under "error" filters it would raise where the op warns once per
        # process (TORCH_WARN_ONCE), so whether a sample derives would depend on what ran first
        warnings.simplefilter("ignore")
        made = row.derive(sample, draws, seed)
    # an index names what each sample is, whatever else the transform derives from this sample
    # (transposed-1 is channels_last, dtypes-1 float16, grad-subset-0 the inference sample), so
    # registry entries stay put; only noncontiguous, which derives one at most, has none
    found = []
    for i, m in sorted(made.items()):
        index = None if row.unindexed else i
        suffix = transform if index is None else f"{transform}-{index}"
        pattern = (
            suffix if row.pattern is not None else ""
        )  # a pattern's derived sample is checked with the pattern its suffix names
        found.append(Derived(transform, index, *m.call, m.description, pattern, m.func, m.gradients, m.judged))
    return found


def judged_dtype(d: Derived, base: torch.dtype) -> torch.dtype:
    """The dtype whose tolerances and OpInfo decorations judge ``d``: the one ``dtypes`` cast its
    floating inputs to, the one a pattern names (``autocast``), else the base sample's."""
    if d.judged is not None:
        return d.judged
    if transform_of(d.transform).casts:
        for leaf in pytree.tree_leaves((d.args, d.kwargs)):
            if isinstance(leaf, torch.Tensor) and leaf.is_floating_point():
                return leaf.dtype
    return base


def not_applicable(suffix: str, eager_message: str, context: str) -> str:
    """The message of a derived sample whose eager call fails: not a finding, not a valid call."""
    return (
        f"{suffix} does not apply: eager fails on the derived sample ({eager_message.removesuffix(f' [{context}]')}) [{context}]"
    )


def suffixes(transform: str, args: Sequence[Any], kwargs: Mapping[str, Any], *, origin: Origin | None = None) -> list[str]:
    """The suffixes of the samples ``derive(transform, args, kwargs)`` gives with one draw, for
    naming them before they are made (``resized`` is not drawn: its one sample exists where the
    inputs have a size to replace; if no draw then differs from the sample, it is not applicable)."""
    found = transform_of(transform)
    if found.draws:
        return [f"{transform}-0"] if _sizes(Sample(args, kwargs)) else []
    if found.indices is not None:
        return [f"{transform}-{i}" for i in found.indices(Sample(args, kwargs, origin))]
    return [d.suffix for d in derive(transform, args, kwargs, origin=origin)]


def shrink_resized(
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    fails: Callable[[Derived], bool],
    *,
    seed: int = 0,
    max_examples: int = 100,
) -> Derived | None:
    """The ``resized`` sample with the smallest sizes for which ``fails`` is true, or ``None`` if
    none was found in ``max_examples`` draws (or the sample has no size to replace).

    Searches the size mappings with ``hypothesis.find`` (seeded by ``seed``, no database) and
    shrinks the first failing one. ``fails`` is called once per
    candidate (a check of the derived sample, say: each costs one); an exception it raises counts
    as "does not fail". Shrinking makes each new size as small as it can, the smallest old size's
    first. The result's ``description`` is the mapping, e.g. ``sizes 3->2, 4->3``.
    """
    import random

    _require_hypothesis()
    import hypothesis
    from hypothesis.errors import NoSuchExample, Unsatisfiable

    sample = Sample(args, kwargs)
    sizes = _sizes(sample)
    if not sizes:
        return None

    def condition(new: list[int]) -> bool:
        try:
            return bool(fails(_as_derived(_resize(sample, dict(zip(sizes, new)), seed))))
        except Exception:
            return False

    try:
        found = hypothesis.find(
            _size_strategy(sizes),
            condition,
            settings=_settings(max_examples, shrink=True),
            random=random.Random(seed),
        )
    except (NoSuchExample, Unsatisfiable):
        return None
    return _as_derived(_resize(sample, dict(zip(sizes, found)), seed))


# ---------------------------------------------------------------------------------------------
# The sample, flattened.


class Made(NamedTuple):
    """One derived sample as a transform or call pattern makes it (:class:`Derived` adds its name
    and index): the call ``(args, kwargs)``, a few words on what changed, and what the check does
    otherwise with it (the callable in place of the base sample's, whether gradients are checked,
    the dtype it is judged by). Public as :class:`optests.patterns.Made`."""

    call: tuple[tuple[Any, ...], dict[str, Any]]
    description: str
    func: Callable[..., Any] | None = None
    gradients: bool | None = None
    judged: torch.dtype | None = None


class Sample:
    """The sample a transform or call pattern derives from (public as
    :class:`optests.patterns.Sample`): ``(args, kwargs)`` flattened with pytree. ``inputs`` are the positions of the distinct
    tensors the transforms work on (plain strided tensors, not on the meta device), each at its
    first occurrence; ``names`` are their names as the check's messages spell them; ``origin``
    what else is known of the sample (its callable, its OpInfo)."""

    def __init__(self, args: Sequence[Any], kwargs: Mapping[str, Any], origin: Origin | None = None) -> None:
        self.args, self.kwargs, self.origin = tuple(args), dict(kwargs), origin
        flat, self.spec = pytree.tree_flatten_with_path((tuple(args), dict(kwargs)))
        self.leaves = [leaf for _, leaf in flat]
        self.names = [_name(path) for path, _ in flat]
        seen: set[int] = set()
        self.inputs: list[int] = []
        for pos, leaf in enumerate(self.leaves):
            if _transformable(leaf) and id(leaf) not in seen:
                seen.add(id(leaf))
                self.inputs.append(pos)

    def tensor(self, pos: int) -> torch.Tensor:
        leaf = self.leaves[pos]
        assert isinstance(leaf, torch.Tensor)
        return leaf

    def name(self, pos: int) -> str:
        return self.names[pos]

    def names_of(self, positions: Iterable[int], most: int = 4) -> str:
        """``args[0], args[1]``; past ``most`` names, ``args[0], ... and 3 more``."""
        names = [self.names[pos] for pos in positions]
        if len(names) <= most:
            return ", ".join(names)
        return ", ".join(names[: most - 1]) + f" and {len(names) - most + 1} more"

    def build(
        self,
        replace: Mapping[int, torch.Tensor] | None = None,
        *,
        requires_grad: Mapping[int, bool] | None = None,
        dtype: torch.dtype | None = None,
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``(args, kwargs)`` with the input at each position of ``replace`` replaced (wherever
        that tensor occurs), and every other input copied exactly: values, strides, storage
        offset (inputs that share a storage become views of one copy of it); ``requires_grad`` as
        ``requires_grad`` gives it for its position, else as it was; floating inputs cast to
        ``dtype``, if given."""
        replace = replace or {}
        requires_grad = requires_grad or {}
        keys = {pos: _storage_id(self.tensor(pos)) for pos in self.inputs if pos not in replace}
        shared = {k for k in keys.values() if k is not None and list(keys.values()).count(k) > 1}
        bases: dict[tuple[str, int], torch.Tensor] = {}
        new: dict[int, torch.Tensor] = {}
        for pos in self.inputs:
            t = self.tensor(pos)
            if pos in replace:
                new[id(t)] = replace[pos]
                continue
            cast = dtype if dtype is not None and t.is_floating_point() else None
            share = bases if keys[pos] in shared and cast is None else None
            new[id(t)] = _exact_copy(t, requires_grad.get(pos, t.requires_grad), share, cast)
        leaves = [new.get(id(leaf), leaf) if isinstance(leaf, torch.Tensor) else leaf for leaf in self.leaves]
        args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return tuple(args), dict(kwargs)


#: The names pattern modules outside this package may still use.
_Made, _Sample = Made, Sample


def _name(path: tuple[Any, ...]) -> str:
    head, rest = path[0], path[1:]
    root = "args" if getattr(head, "idx", 0) == 0 else "kwargs"
    return root + pytree.keystr(rest)


def _transformable(leaf: object) -> bool:
    return (
        isinstance(leaf, torch.Tensor)
        and type(leaf) in (torch.Tensor, torch.nn.Parameter)
        and leaf.layout == torch.strided
        and leaf.device.type != "meta"
        and not leaf.is_quantized
    )


def _plain(t: torch.Tensor) -> torch.Tensor:
    """``t`` detached, with its conjugate and negative bits resolved (same values)."""
    return t.detach().resolve_conj().resolve_neg()


def _leaf(t: torch.Tensor, requires_grad: bool) -> torch.Tensor:
    """``t`` (made under no_grad, so without history) as a leaf requiring grad or not."""
    return t.requires_grad_(requires_grad and (t.is_floating_point() or t.is_complex()))


def _storage_id(t: torch.Tensor) -> tuple[str, int] | None:
    """What identifies a tensor's storage (None: an empty one, which nothing shares)."""
    storage = t.untyped_storage()
    return (str(t.device), storage.data_ptr()) if storage.nbytes() else None


def _exact_copy(
    t: torch.Tensor,
    requires_grad: bool,
    bases: dict[tuple[str, int], torch.Tensor] | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """A leaf with the values (cast to ``dtype``, if given), size, strides and storage offset of
    ``t``, on a copy of its storage: overlapping and non-dense layouts survive. ``bases`` (for an
    input whose storage other inputs share) maps that storage to a flat tensor over its copy,
    made by the first of them; the copies are views of it, as views of one base are."""
    target = dtype or t.dtype
    with torch.no_grad():
        src = _plain(t)
        old = src.untyped_storage()
        key = _storage_id(src)
        whole = bases.get(key) if bases is not None and key is not None else None
        if whole is None:
            whole = src.new_empty(0).set_(old, 0, (old.nbytes() // src.element_size(),), (1,))
            whole = whole.clone() if dtype is None else whole.to(dtype)
            if bases is not None and key is not None:
                bases[key] = whole
        if bases is not None and whole.dtype == target:
            copy = whole.as_strided(src.size(), src.stride(), src.storage_offset())
        else:
            copy = torch.empty(0, dtype=target, device=src.device)
            copy.set_(whole.untyped_storage(), src.storage_offset(), src.size(), src.stride())
    return _leaf(copy, requires_grad)


def _copy_into(t: torch.Tensor, out: torch.Tensor, requires_grad: bool) -> torch.Tensor:
    with torch.no_grad():
        out.copy_(_plain(t))
    return _leaf(out, requires_grad)


# ---------------------------------------------------------------------------------------------
# The layout transforms: values kept exactly.


def _filler(dtype: torch.dtype) -> float | bool | int:
    """A value no correct kernel reads: what OpInfo's ``noncontiguous_like`` puts in the gaps."""
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    return True if dtype == torch.bool else 12


def _noncontiguous(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    """Every input as every other element of a storage twice its size, starting at offset 1
    (as ``SampleInput.noncontiguous()``): not dense, same values; the gaps hold NaN (12, True)."""
    if not any(sample.tensor(pos).numel() >= 2 for pos in sample.inputs):
        return {}  # a tensor of fewer than two elements is contiguous whatever its strides
    replace: dict[int, torch.Tensor] = {}
    for pos in sample.inputs:
        t = sample.tensor(pos)
        with torch.no_grad():
            base = t.new_empty((*t.shape, 2))
            base[..., 0] = _filler(t.dtype)
            base[..., 1] = _plain(t)
        replace[pos] = _leaf(base[..., 1], t.requires_grad)
    return {0: Made(sample.build(replace), "every tensor input non-dense (strides doubled, storage offset 1)")}


def _transposed(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    """Every input of two or more dims stored with its last two dims swapped in memory; then, if
    any, every 4-D input as channels_last (a second sample). Dense, not contiguous, same values."""
    made: dict[int, Made] = {}
    swapped: dict[int, torch.Tensor] = {}
    for pos in sample.inputs:
        t = sample.tensor(pos)
        if t.dim() >= 2:
            strides = t.detach().transpose(-1, -2).contiguous().transpose(-1, -2).stride()
            out = torch.empty_strided(t.shape, strides, dtype=t.dtype, device=t.device)
            if not out.is_contiguous():
                swapped[pos] = _copy_into(t, out, t.requires_grad)
    if swapped:
        made[0] = Made(sample.build(swapped), f"{sample.names_of(swapped)} with the last two dims swapped in memory")
    channels_last: dict[int, torch.Tensor] = {}
    for pos in sample.inputs:
        t = sample.tensor(pos)
        if t.dim() == 4:
            out = torch.empty_like(t, memory_format=torch.channels_last, requires_grad=False)
            if not out.is_contiguous():
                channels_last[pos] = _copy_into(t, out, t.requires_grad)
    if channels_last:
        made[1] = Made(sample.build(channels_last), f"{sample.names_of(channels_last)} as channels_last")
    return made


def _pairs(sample: Sample) -> list[tuple[int, int]]:
    """Pairs of distinct, non-empty inputs of one shape, dtype and device; at most MAX_PAIRS."""
    pairs = []
    for n, i in enumerate(sample.inputs):
        for j in sample.inputs[n + 1 :]:
            a, b = sample.tensor(i), sample.tensor(j)
            if a.numel() and a.shape == b.shape and a.dtype == b.dtype and a.device == b.device:
                pairs.append((i, j))
    return pairs[:MAX_PAIRS]


def _duplicated(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    """For each pair, the first input passed for both (requiring grad if either did)."""
    made: dict[int, Made] = {}
    for n, (i, j) in enumerate(_pairs(sample)):
        first = sample.tensor(i)
        one = _exact_copy(first, first.requires_grad or sample.tensor(j).requires_grad)
        made[n] = Made(sample.build({i: one, j: one}), f"{sample.name(j)} is {sample.name(i)}")
    return made


def _aliased(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    """For each pair that does not share a storage yet, the two as the two halves of one storage:
    contiguous views that do not overlap, each with its own values (indices below MAX_PAIRS). Then
    (indices MAX_PAIRS and up) each input that fits as an overlapping slice of another, passed as
    one: ``state[1:]`` next to ``state``, as users pass them. Kernels and fake kernels
    that look at storages (``data_ptr``, ``untyped_storage``) see one storage; AOTAutograd must
    prove the two independent. (Views of the same memory are not derived: every mutating op then
    fails to trace with dynamic shapes in torch 2.13, whatever its kernel, and that is ``duplicated``'s
    ground anyway.)"""
    made: dict[int, Made] = {}
    for n, (i, j) in enumerate(_pairs(sample)):
        a, b = sample.tensor(i), sample.tensor(j)
        if a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr():
            continue
        with torch.no_grad():
            base = a.new_empty(2 * a.numel())
            halves = (base[: a.numel()].view(a.shape), base[a.numel() :].view(a.shape))
        replace = {i: _copy_into(a, halves[0], a.requires_grad), j: _copy_into(b, halves[1], b.requires_grad)}
        made[n] = Made(sample.build(replace), f"{sample.name(i)} and {sample.name(j)} as the two halves of one storage")
    for n, (i, j) in enumerate(_slices(sample)):
        a, b = sample.tensor(i), sample.tensor(j)
        with torch.no_grad():  # both views of one flat base, b as a[1 : 1 + len(b)]: its values become a's rows there
            base = a.new_empty(a.numel())
            row = a.numel() // a.shape[0]
            whole, part = base.view(a.shape), base[row : row * (1 + b.shape[0])].view(b.shape)
        replace = {i: _copy_into(a, whole, a.requires_grad), j: _leaf(part, b.requires_grad)}
        description = f"{sample.name(j)} as {sample.name(i)}[1:{1 + b.shape[0]}], overlapping it"
        made[MAX_PAIRS + n] = Made(sample.build(replace), description)
    return made


def _slices(sample: Sample) -> list[tuple[int, int]]:
    """Pairs (i, j) of inputs of one dtype and device where input j fits as an overlapping slice of
    input i at a nonzero offset: the same trailing sizes, a smaller first size; at most MAX_PAIRS."""
    pairs = []
    for i in sample.inputs:
        for j in sample.inputs:
            a, b = sample.tensor(i), sample.tensor(j)
            if (
                i != j
                and a.dim() >= 1
                and a.dim() == b.dim()
                and a.shape[1:] == b.shape[1:]
                and 0 < b.shape[0] < a.shape[0]
                and a.dtype == b.dtype
                and a.device == b.device
                and a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()
            ):
                pairs.append((i, j))
    return pairs[:MAX_PAIRS]


# ---------------------------------------------------------------------------------------------
# requires_grad and dtypes.


def _grad_subset(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    """No input requiring grad (the inference path); then, where several inputs require grad,
    each of them alone."""
    differentiable = [pos for pos in sample.inputs if sample.tensor(pos).requires_grad]
    if not differentiable:
        return {}
    made: dict[int, Made] = {}
    for only in [None, *(differentiable if len(differentiable) > 1 else [])]:
        what = "no input requires grad" if only is None else f"only {sample.name(only)} requires grad"
        index = 0 if only is None else 1 + sample.inputs.index(only)  # 0: the inference sample; 1 + the input's position
        made[index] = Made(sample.build(requires_grad={pos: pos == only for pos in differentiable}), what)
    return made


def _dtypes(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    """Every floating input cast to each of DTYPES (same size, strides, requires_grad), skipping a
    dtype every floating input has already."""
    floating = [pos for pos in sample.inputs if sample.tensor(pos).is_floating_point()]
    made: dict[int, Made] = {}
    for dtype in DTYPES:
        if all(sample.tensor(pos).dtype == dtype for pos in floating):
            continue
        made[DTYPES.index(dtype)] = Made(sample.build(dtype=dtype), f"floating inputs as {str(dtype).removeprefix('torch.')}")
    return made


# ---------------------------------------------------------------------------------------------
# resized: sizes drawn and shrunk with hypothesis.


def _sizes(sample: Sample) -> list[int]:
    """The distinct sizes of 2 or more of the inputs: what ``resized`` replaces."""
    return sorted({s for pos in sample.inputs for s in sample.tensor(pos).shape if s >= _MIN_SIZE})


def _require_hypothesis() -> None:
    try:
        import hypothesis  # noqa: F401
    except ImportError as e:
        raise ImportError("the resized transform draws sizes with hypothesis: pip install hypothesis") from e


def _size_strategy(sizes: list[int]) -> SearchStrategy[list[int]]:
    """A new size for each old one, of the other parity: every size changes, and an odd size
    meets a kernel or formula that was only ever given even ones (``n // 2``), and vice versa.

    Each size is drawn as the bits of an index into its candidates, booleans alone: hypothesis
    may swap a drawn integer for a constant from the source of the modules around the run (and
    caches those in ``.hypothesis/`` under the working directory), never a boolean. So the
    sizes depend on the seed alone, and nothing is written. Shrinking clears bits: towards the
    smallest candidate."""
    from hypothesis import strategies as st

    def new_size(old: int) -> SearchStrategy[int]:
        candidates = [n for n in range(_MIN_SIZE, MAX_SIZE + 1) if n % 2 != old % 2]
        bits = (len(candidates) - 1).bit_length()
        assert len(candidates) == 2**bits, "every index the bits spell names a candidate: none is drawn more often"
        return st.lists(st.booleans(), min_size=bits, max_size=bits).map(
            lambda b: candidates[int("".join("01"[x] for x in b), 2)]
        )

    return st.tuples(*(new_size(s) for s in sizes)).map(list)


def _settings(max_examples: int, shrink: bool) -> hypothesis.settings:
    import hypothesis

    phases = [hypothesis.Phase.generate, hypothesis.Phase.shrink] if shrink else [hypothesis.Phase.generate]
    return hypothesis.settings(
        parent=hypothesis.settings.get_profile("default"),  # not the profile a test session loaded
        max_examples=max_examples,
        database=None,
        derandomize=True,
        deadline=None,
        phases=phases,
        suppress_health_check=list(hypothesis.HealthCheck),
        verbosity=hypothesis.Verbosity.quiet,
        print_blob=False,
    )


def _draw_mappings(sizes: list[int], draws: int, seed: int) -> list[dict[int, int]]:
    """Up to ``draws`` distinct mappings of ``sizes``, none the identity nor all sizes 2 (the
    first example hypothesis tries, and the smallest; shrinking finds it where it matters)."""
    import hypothesis

    drawn: list[dict[int, int]] = []

    # max_examples does not depend on draws (up to a point), so fewer draws are a prefix of more
    @_settings(max_examples=max(_DRAW_EXAMPLES, 3 * draws), shrink=False)
    @hypothesis.seed(seed)
    @hypothesis.given(_size_strategy(sizes))
    def collect(new: list[int]) -> None:
        mapping = dict(zip(sizes, new))
        boring = all(v == k for k, v in mapping.items()) or all(v == _MIN_SIZE for v in new)
        if len(drawn) < draws and not boring and mapping not in drawn:
            drawn.append(mapping)

    collect()
    return drawn


def _resized(sample: Sample, draws: int, seed: int) -> dict[int, Made]:
    """Every size of 2 or more replaced by a drawn one, the same for equal sizes in every input
    (so matmul-like relations between shapes hold); values drawn anew (see ``_fresh``)."""
    sizes = _sizes(sample)
    if not sizes:
        return {}
    _require_hypothesis()
    return dict(enumerate(_resize(sample, mapping, seed) for mapping in _draw_mappings(sizes, draws, seed)))


def _resize(sample: Sample, mapping: Mapping[int, int], seed: int) -> Made:
    key = f"{seed}:{sorted(mapping.items())}".encode()
    generator = torch.Generator().manual_seed(zlib.crc32(key))
    replace = {
        pos: _fresh(sample.tensor(pos), tuple(mapping.get(s, s) for s in sample.tensor(pos).shape), generator)
        for pos in sample.inputs
    }
    return Made(sample.build(replace), "sizes " + ", ".join(f"{k}->{v}" for k, v in sorted(mapping.items())))


def _fresh(t: torch.Tensor, shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
    """A contiguous leaf of ``shape`` with random values of ``t``'s dtype, within the range of
    ``t``'s values where it has any (so non-negative inputs stay non-negative, indices stay
    indices as far as sizes allow), ``requires_grad`` as ``t``."""
    with torch.no_grad():
        src = _plain(t)
        wide = torch.float64
        if src.is_complex():
            out = torch.randn(shape, generator=generator, dtype=torch.complex128)
        elif src.dtype == torch.bool:
            out = torch.rand(shape, generator=generator) < 0.5
        else:
            values = src.to("cpu", wide) if src.numel() else src.new_empty(0, device="cpu", dtype=wide)
            finite = values[values.isfinite()]
            lo, hi = (float(finite.min()), float(finite.max())) if finite.numel() else (-1.0, 1.0)
            if src.is_floating_point():
                out = torch.rand(shape, generator=generator, dtype=wide) * (hi - lo) + lo
            else:
                high = min(int(hi) + 1, torch.iinfo(torch.int64).max)
                out = torch.randint(int(lo), max(high, int(lo) + 1), shape, generator=generator)
        out = out.to(device=src.device, dtype=src.dtype)
    return _leaf(out, t.requires_grad)


def _as_derived(made: Made) -> Derived:
    (args, kwargs), description = made.call, made.description
    return Derived("resized", 0, args, kwargs, description)


@dataclass(frozen=True)
class Transform:
    """What a transform or call pattern does, in one place: how it derives samples, and what the
    harness asks of it beyond that (nothing outside its module compares its name). Each is
    declared once, in :data:`optests._key.DERIVATIONS`, which names the module attribute that
    holds its row."""

    #: ``(sample, draws, seed)`` -> the derived samples by index
    derive: Callable[[Sample, int, int], dict[int, Made]]
    #: It derives one sample at most, named without an index (``noncontiguous``).
    unindexed: bool = False
    #: It casts floating inputs: a derived sample is judged by the dtype it cast to (``dtypes``).
    casts: bool = False
    #: It draws its samples (``resized``): named before they are drawn (one where the sample has a
    #: size to replace), and a finding can be shrunk (:func:`shrink_resized`).
    draws: bool = False
    #: A call pattern's: the pattern (``optests._patterns``) that checks the sample it derived
    #: with this index (the derived sample's ``pattern`` is its suffix, which names it).
    pattern: Callable[[int], CallPattern] | None = None
    #: The indices of what it derives from a sample, named without deriving it (where deriving
    #: costs a call of the op): one it then cannot make is not applicable. None: derive to name.
    indices: Callable[[Sample], list[int]] | None = None
    #: A call pattern's: how many patterns its indices name (``0`` to ``count - 1``).
    count: int = 1


NONCONTIGUOUS = Transform(_noncontiguous, unindexed=True)
TRANSPOSED = Transform(_transposed)
DUPLICATED = Transform(_duplicated)
ALIASED = Transform(_aliased)
GRAD_SUBSET = Transform(_grad_subset)
DTYPES_TRANSFORM = Transform(_dtypes, casts=True)
RESIZED = Transform(_resized, draws=True)


@functools.cache
def transform_of(name: str) -> Transform:
    """The row of the transform or pattern ``name`` (:data:`optests._key.DERIVATIONS` says where
    it lives); a ``ValueError`` naming the known ones."""
    where = DERIVATIONS.get(name)
    if where is None:
        raise ValueError(f"unknown transform {name!r}; expected one of: {', '.join(TRANSFORMS)}")
    module, _, attribute = where.partition(":")
    row = getattr(importlib.import_module(module), attribute)
    if not isinstance(row, Transform):
        raise TypeError(f"{where}={type(row).__name__}, but expected a Transform [the declaration of {name!r}]")
    return row


def makes(suffix: str) -> bool:
    """Whether some derived sample's suffix can be ``suffix``, by its transform's row: with an
    index where the transform has them (``transposed-0``, ``noncontiguous``), and for a call
    pattern an index below its count (``tangents`` has three: ``tangents-3`` is none)."""
    name = transform_name(suffix)
    if name not in DERIVATIONS:
        return False
    row = transform_of(name)
    if name == suffix:
        return row.unindexed
    return not row.unindexed and (row.pattern is None or int(suffix.rpartition("-")[2]) < row.count)


def shrinkable(suffix: str) -> bool:
    """Whether a finding on the sample ``suffix`` names can be shrunk (:func:`shrink_resized`)."""
    return transform_name(suffix) in DERIVATIONS and transform_of(transform_name(suffix)).draws
