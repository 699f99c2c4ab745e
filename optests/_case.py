"""The sweep's cases: which samples of which ops a run checks, in which modes, dtypes and devices.
Imports torch (and the OpInfo databases) only when cases are made."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._findings import Outcome, Stage, Verdict
from ._key import DEFAULT_BACKEND, Mode, SampleKey
from ._pipeline import Base, Selection, keys, suffixes, transforms_for
from ._results import SampleResult
from ._settings import Settings
from .errors import SelectionError as SelectionError

if TYPE_CHECKING:
    from ._opinfo import OpRef


@dataclass(frozen=True)
class Case:
    """One sample of one op (``key``) and the OpInfo it comes from. A key without a sample has
    nothing to check: ``reason`` says why (no samples for the dtype, or they cannot be made)."""

    ref: OpRef
    key: SampleKey
    reason: str = ""

    @classmethod
    def of(
        cls,
        ref: OpRef,
        mode: str,
        dtype: str,
        device: str,
        sample: int | None,
        reason: str = "",
        broken: bool = False,
        transform: str = "",
        backend: str = DEFAULT_BACKEND,
    ) -> Case:
        key = SampleKey(ref.name, ref.variant, Mode(mode), dtype, device, sample, broken, transform, backend)
        return cls(ref, key, reason)

    @property
    def id(self) -> str:
        return self.key.id

    def result(
        self,
        outcome: Outcome,
        stage: Stage | None = None,
        message: str = "",
        duration: float = 0.0,
        verdict: Verdict | None = None,
        tolerance: str = "",
    ) -> SampleResult:
        return SampleResult(self.key, self.ref.db, outcome, stage, message, duration, verdict, tolerance)


def select_ops(settings: Settings) -> list[OpRef]:
    """The ops the settings select; a :class:`SelectionError` for a bad database or no match."""
    from . import _opinfo

    try:
        refs = _opinfo.select(_opinfo.all_ops(settings.dbs), settings.ops)
        _opinfo.refuse_clashes(refs)
    except _opinfo.DatabaseError as e:
        raise SelectionError(f"--optests-dbs: {e}") from None
    if not refs:
        raise SelectionError(f"--optests-ops: no op matches {', '.join(settings.ops)} in {', '.join(settings.dbs)}")
    if settings.ids is not None:
        named = settings.ids.op_ids
        refs = [r for r in refs if r.id in named]
        if not refs:
            raise SelectionError(
                f"--optests-ids: {settings.ids.path} names no op that --optests-ops and --optests-dbs select "
                f"(it names {len(named)}, e.g. {min(named)})"
            )
    return refs


def collect(settings: Settings) -> list[Case]:
    """Every case of the sweep, op-major (an op's modes run back to back and share samples)."""
    import torch

    from . import _opinfo

    cases: list[Case] = []
    for ref in select_ops(settings):
        for dtype_name in settings.dtypes:
            dtype = getattr(torch, dtype_name)
            for device in settings.devices:
                count, reason = 0, ""
                if device == "cuda" and not torch.cuda.is_available():
                    reason = "cuda is not available on this machine"
                elif not _opinfo.applicable(ref, device, dtype):
                    reason = f"{ref.id} does not support {dtype_name} on {device}"
                else:
                    try:
                        count = len(_opinfo.cached_samples(ref, device, dtype))
                        reason = "" if count else f"{ref.id} has no samples for {dtype_name} on {device}"
                    except KeyboardInterrupt:  # Ctrl-C, in the collecting process
                        raise
                    except BaseException as e:  # the generator's, SystemExit too: a broken case
                        first = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
                        error = f"sample_inputs raised {type(e).__name__}: {first}"
                        cases.extend(
                            Case.of(ref, mode, dtype_name, device, None, error, broken=True, backend=backend)
                            for mode in settings.modes
                            for backend in settings.backends
                        )
                        continue
                if count:
                    derived = _derived(ref, device, dtype, settings.transforms, settings.select)
                    order = keys(ref.name, ref.variant, dtype_name, device, settings.modes, settings.backends, derived)
                    cases.extend(Case(ref, key) for key in order)
                else:
                    cases.extend(
                        Case.of(ref, mode, dtype_name, device, None, reason, backend=backend)
                        for mode in settings.modes
                        for backend in settings.backends
                    )
    if settings.ids is not None:  # the ids it lacks are counted at the end of the run
        listed, runs = settings.ids.ids, settings.ids.runs
        cases = [c for c in cases if c.id in listed or (c.key.sample is None and c.key.run in runs)]
    ids = Counter(c.id for c in cases)
    clashes = [i for i, n in ids.items() if n > 1]
    if clashes:
        raise SelectionError(
            f"--optests-dbs: ops from different databases share test ids, e.g. {clashes[0]}; select fewer databases"
        )
    return cases


def _derived(ref: OpRef, device: str, dtype: Any, transforms: Sequence[str], select: Selection) -> dict[int, list[str]]:
    """For each of the op's samples that ``select`` picks (by its index among all), the suffixes
    of the samples ``transforms`` derive."""
    from . import _opinfo

    op = _opinfo.opinfo(ref)
    chosen = transforms_for(op, transforms)
    samples = _opinfo.cached_samples(ref, device, dtype)
    picked = select.indices([(s.args, s.kwargs) for s in samples], [s.func for s in samples])
    return {
        i: suffixes(Base(samples[i].func, samples[i].args, samples[i].kwargs, samples[i].check_gradients, opinfo=op), chosen)
        for i in picked
    }


def split_of(refs: list[OpRef]) -> dict[str, tuple[str, str]]:
    """Op id -> (name, variant) for ``SampleKey.parse``."""
    return {r.id: (r.name, r.variant) for r in refs}
