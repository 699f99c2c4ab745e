"""The float64 judgement: a difference within rounding of the same call in float64 is noted, not a finding."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.utils._pytree as pytree

from .._patterns import CallPattern
from ._copies import _copies, _identical, _storage_groups
from ._options import _Checking
from ._running import _SEED, _called, _user_gradients
from ._tolerances import _DEFAULT_TOLERANCES
from ._trace import _TensorCall

__all__ = ["ROUNDING_MULTIPLIER", "LOWER_ROUNDING_FRACTION"]

#: A compiled result that differs from eager is put down to float32 rounding when its distance
#: from the float64 result is at most this many times eager's own (plus the dtype's atol), eager's
#: counted as at least the dtype's epsilon times the largest magnitude of that float64 result.
ROUNDING_MULTIPLIER = 3.0


#: What the float64 call gives: the pattern's compared outputs, the gradients (None: none taken),
#: and the inputs as the call left them (None: the two seeds wrote them otherwise).
_Reference = tuple[Any, tuple[torch.Tensor | None, ...] | None, tuple[torch.Tensor, ...] | None]


class _Float64Reference:
    """The same call in float64 on the same values, through the same call pattern, made only
    when a comparison fails: the truth against which eager's and the compiled call's rounding
    errors are measured, for outputs, gradients and what the call wrote into its inputs. None
    (no reference) when the op fails in float64, or draws random numbers (two seeds disagree).
    Where the pattern's backward took tangents it drew (:attr:`Called.tangents`), the float64
    backward takes eager's, widened in their layouts: the gradients of the same tangents."""

    def __init__(
        self,
        call: _TensorCall,
        originals: list[torch.Tensor],
        gradients: bool,
        pattern: CallPattern,
        tangents: list[torch.Tensor] | None = None,
    ) -> None:
        self._call, self._originals, self._gradients, self._pattern = call, originals, gradients, pattern
        self._tangents = tangents
        self._made = False
        self._value: _Reference | None = None

    def _get(self) -> _Reference | None:
        if not self._made:
            self._made = True
            runs = [self._run(seed) for seed in (_SEED, _SEED + 1)]
            if runs[0] is not None and runs[1] is not None and _same_values(runs[0][:2], runs[1][:2]):
                same_inputs = _same_values(runs[0][2], runs[1][2])
                self._value = (runs[0][0], runs[0][1], runs[0][2] if same_inputs else None)
        return self._value

    def _run(self, seed: int) -> _Reference | None:
        inputs = _copies(self._originals, widen=True)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                called = _called(self._pattern, self._call.eager, inputs, seed)
                if self._tangents is not None:
                    called.tangents = _copies(self._tangents, widen=True)
                grads = _user_gradients(self._pattern, called, inputs) if self._gradients else None
        except Exception:
            return None
        return called.compared, grads, tuple(t.detach() for t in inputs)

    def out(self) -> Any:
        value = self._get()
        return None if value is None else value[0]

    def grads(self) -> Any:
        value = self._get()
        return None if value is None else value[1]

    def after(self, i: int) -> torch.Tensor | None:
        """Input ``i`` as the float64 call left it (what it wrote there), or None: no reference,
        or the input's memory overlaps another input's, where what the call leaves depends on
        the order of its writes, which the float64 kernels need not share."""
        alone = len(_storage_groups(self._originals, overlap=True)[i]) == 1
        value = self._get() if alone else None
        return None if value is None or value[2] is None else value[2][i]


def _same_values(a: Any, b: Any) -> bool:
    """Bitwise the same (NaN equal to NaN); False where the tensors cannot be compared (sparse,
    nested): a reference that cannot be shown reproducible is not one."""
    a_leaves, b_leaves = pytree.tree_leaves(a), pytree.tree_leaves(b)
    if len(a_leaves) != len(b_leaves):
        return False
    for x, y in zip(a_leaves, b_leaves):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            try:
                if (
                    x.layout != torch.strided
                    or y.layout != torch.strided
                    or not _identical(x.detach(), y.detach(), strides=False)
                ):
                    return False
            except (RuntimeError, NotImplementedError):
                return False
        elif isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor) or not (x == y or (x != x and y != y)):
            return False
    return True


def _rounding_only(
    actual: Any,
    expected: Any,
    truth: Any,
    opts: _Checking,
    grads: bool,
    precision: torch.dtype | None = None,
    weighed: bool = False,
) -> str | None:
    """Why the difference between ``actual`` (compiled) and ``expected`` (eager) is rounding, or
    None: every differing leaf is floating, finite where they differ, and each differing element
    no further from the float64 ``truth`` than ``ROUNDING_MULTIPLIER`` times eager's (plus atol),
    eager's error counted as at least the dtype's epsilon times the leaf's largest finite float64
    magnitude: an element of a sum rounds at its terms' scale, not its own, so eager landing on the
    truth for one element does not hold compiled code to a precision its dtype lacks there. (An
    error below that, times ``ROUNDING_MULTIPLIER``, plus atol, is always put down to rounding.)
    Where the call computed in a lower ``precision`` (autocast) and eager's leaf shows that
    precision's rounding (:func:`_lower_rounding`), an element's own error counts as at least
    the leaf's relative error times the element's size: whether one element of a bfloat16 result
    lands on the truth is chance, and compiled code may round it otherwise. A leaf eager computed
    at its own precision keeps the element-by-element rule: a compiled result computed in
    bfloat16 beside it is a finding (pytorch/pytorch#153044). Where the gradients are of tangents a
    pattern drew (``weighed``, :attr:`Called.tangents`), eager's error counts as at least the
    median of its errors over the leaf's differing elements: each element sums rounding errors
    the random tangents weigh, so one of eager's landing near the truth is chance (layer norm of
    data far from zero: the per-row mean's rounding, weighed by each row's tangent, in the weight's
    gradient). A median, not the largest: one ill-conditioned element excuses no other."""
    flatten: Callable[[Any], list[Any]] = list if grads else pytree.tree_leaves
    a_l, e_l, r_l = flatten(actual), flatten(expected), flatten(truth)
    if not len(a_l) == len(e_l) == len(r_l):
        return None
    worst, lowest = (0.0, 0.0), 0.0  # the largest errors; the largest lower-precision level used
    floor = 0.0  # the largest least error eager's counted as, where it decided
    median = 0.0  # the largest median eager's error counted as, where it decided (``weighed``)
    for a, e, r in zip(a_l, e_l, r_l):
        try:
            opts.options.assert_equals_fn(a, e)
            continue
        except Exception:
            pass
        if not (isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor) and isinstance(r, torch.Tensor)):
            return None
        if not (e.is_floating_point() or e.is_complex()) or a.dtype != e.dtype or not a.shape == e.shape == r.shape:
            return None
        if a.device != e.device or a.layout != e.layout:
            return None
        with torch.no_grad():
            try:
                wide = torch.complex128 if e.is_complex() else torch.float64
                got, eager, exact = (x.detach().cpu().to_dense().to(wide) for x in (a, e, r))
            except (RuntimeError, NotImplementedError):
                return None
            differ = ~((got == eager) | (got.isnan() & eager.isnan()))
            if not bool(differ.any()):  # the values agree: what assert_equals_fn saw is not rounding
                return None
            finite = torch.isfinite(got[differ]).all() & torch.isfinite(eager[differ]).all() & torch.isfinite(exact[differ]).all()
            if not bool(finite):
                return None
            level = _lower_rounding(eager, exact, e.dtype, precision)
            c_dist, e_dist = (got - exact).abs()[differ], (eager - exact).abs()[differ]
            # element by element: a large rounding error on one element must not excuse another;
            # but eager's counts as at least epsilon times the leaf's largest finite magnitude (a
            # sum rounds at its terms' scale, not its own). Not empty: the differing elements are
            # finite in both.
            scale = exact.abs()[torch.isfinite(exact) & torch.isfinite(eager)].max()
            step = torch.finfo(e.dtype).eps * float(scale)
            own = torch.maximum(e_dist, level * exact.abs()[differ])
            atol = _DEFAULT_TOLERANCES.get(e.dtype, (0.0, 0.0))[1]
            typical = float(e_dist.median()) if weighed else 0.0
            if not bool((c_dist <= ROUNDING_MULTIPLIER * own.clamp(min=max(step, typical)) + atol).all()):
                return None
            if not bool((c_dist <= ROUNDING_MULTIPLIER * own.clamp(min=step) + atol).all()):
                median = max(median, typical)
            elif not bool((c_dist <= ROUNDING_MULTIPLIER * own + atol).all()):
                floor = max(floor, step)
            worst, lowest = max(worst, (float(c_dist.max()), float(e_dist.max()))), max(lowest, level)
    lower = ""
    if lowest and precision is not None:
        lower = f"; eager rounds at {str(precision).removeprefix('torch.')}'s precision, {lowest:.2g} relative"
    if floor:
        lower += f"; eager's error counted as at least {floor:.3g}, epsilon times the largest magnitude"
    if median:
        lower += f"; eager's error counted as at least {median:.3g}, its median, the tangents weighing each term"
    return (
        f"rounding: compiled is {worst[0]:.3g} from the float64 result, eager {worst[1]:.3g} "
        f"(each element within {ROUNDING_MULTIPLIER:g}x{lower})"
    )


#: Eager's leaf shows a lower precision's rounding when the median of its elements' errors
#: relative to the float64 result is at least this fraction of that precision's machine epsilon
#: (bfloat16: 2**-7 / 16, about 5e-4; float32 results are some thousand times closer, and one
#: ill-conditioned element does not move a median), or when each of its values is one of that
#: precision's and the float64 result's are not all (one bfloat16 element may land on the truth
#: by chance; a result that is exact in float32, ones, shows nothing).
LOWER_ROUNDING_FRACTION = 1 / 16


def _lower_rounding(eager: torch.Tensor, exact: torch.Tensor, dtype: torch.dtype, precision: torch.dtype | None) -> float:
    """The relative error each element of eager's leaf (of ``dtype``, widened, as ``exact``)
    counts as having, where the call computed in ``precision``, coarser than ``dtype``, and the
    leaf shows that precision's rounding (``LOWER_ROUNDING_FRACTION``): the leaf's
    ``max |eager - exact| / max |exact|`` over its finite elements, at least the precision's unit
    roundoff. Else 0: the element-by-element rule."""
    if precision is None or torch.finfo(precision).eps <= torch.finfo(dtype).eps:
        return 0.0
    finite = torch.isfinite(eager) & torch.isfinite(exact)
    nonzero = finite & (exact != 0)
    if not bool(nonzero.any()):
        return 0.0
    eps = torch.finfo(precision).eps
    e, x = eager[nonzero], exact[nonzero]
    typical = float(((e - x).abs() / x.abs()).median())
    shown = typical >= LOWER_ROUNDING_FRACTION * eps or (not e.is_complex() and _in(e, precision) and not _in(x, precision))
    if not shown:
        return 0.0
    return max(float((eager - exact).abs()[finite].max()) / float(exact.abs()[finite].max()), eps / 2)


def _in(values: torch.Tensor, precision: torch.dtype) -> bool:
    """Each of ``values`` (real) is one of ``precision``'s."""
    return bool((values == values.to(precision).to(values.dtype)).all())
