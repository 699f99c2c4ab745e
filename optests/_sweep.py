"""The sweep inside pytest: cases (one per sample x mode x dtype x device), their execution in an
isolated child, per-sample results carried on reports (so they survive xdist), the results file
and the end-of-run summary. Torch is imported only when the sweep is collected or run."""

from __future__ import annotations

import json
import re
import time
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from . import _results
from ._findings import Outcome, Stage
from ._results import SampleResult
from ._runner import Died, IsolatedRunner
from ._settings import DEVICES, DTYPES, MODES, Settings

if TYPE_CHECKING:
    from ._opinfo import OpRef

#: The fixture name a sweep test takes its case from.
CASE_FIXTURE = "optests_case"
_PROPERTY = "optests"


@dataclass(frozen=True)
class Case:
    """One sample of one op in one mode, dtype and device (``sample=None``: no samples at all)."""

    ref: OpRef
    mode: str
    dtype: str
    device: str
    sample: int | None
    reason: str = ""  # why there are no samples
    broken: bool = False  # the OpInfo's sample generator raised (reason says how)

    @property
    def id(self) -> str:
        tail = f"sample{self.sample}" if self.sample is not None else ("samples" if self.broken else "not_applicable")
        return f"{self.mode}-{self.dtype}-{self.device}-{self.ref.id}-{tail}"

    def result(self, outcome: Outcome, stage: Stage | None = None, message: str = "", duration: float = 0.0) -> SampleResult:
        return SampleResult(
            id=self.id,
            op=self.ref.name,
            variant=self.ref.variant,
            db=self.ref.db,
            mode=self.mode,
            dtype=self.dtype,
            device=self.device,
            sample=self.sample,
            outcome=outcome,
            stage=stage,
            message=message,
            duration=duration,
        )


_CASE_ID = re.compile(
    rf"^(?P<mode>{'|'.join(sorted(MODES, key=len, reverse=True))})-(?P<dtype>{'|'.join(DTYPES)})-(?P<device>{'|'.join(DEVICES)})-(?P<op>.+)-(?P<tail>sample\d+|samples|not_applicable)$"
)


def parse_case_id(case_id: str) -> dict[str, str] | None:
    m = _CASE_ID.match(case_id)
    return m.groupdict() if m else None


def select_ops(settings: Settings) -> list[OpRef]:
    """The ops the settings select; ``pytest.UsageError`` for a bad database or no match."""
    from . import _opinfo

    try:
        refs = _opinfo.select(_opinfo.all_ops(settings.dbs), settings.ops)
    except _opinfo.DatabaseError as e:
        raise pytest.UsageError(f"--optests-dbs: {e}") from None
    if not refs:
        raise pytest.UsageError(f"--optests-ops: no op matches {', '.join(settings.ops)} in {', '.join(settings.dbs)}")
    return refs


def collect(settings: Settings) -> list[Case]:
    """Every case of the sweep, op-major (an op's modes run back to back and share samples)."""
    import torch

    from . import _opinfo

    refs = select_ops(settings)
    cases: list[Case] = []
    for ref in refs:
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
                    except Exception as e:
                        error = f"sample_inputs raised {type(e).__name__}: {str(e).strip().splitlines()[0][:200] if str(e).strip() else ''}"
                        cases.extend(Case(ref, mode, dtype_name, device, None, error, broken=True) for mode in settings.modes)
                        continue
                for mode in settings.modes:
                    if count:
                        cases.extend(Case(ref, mode, dtype_name, device, i) for i in range(count))
                    else:
                        cases.append(Case(ref, mode, dtype_name, device, None, reason))
    ids = Counter(c.id for c in cases)
    clashes = [i for i, n in ids.items() if n > 1]
    if clashes:
        raise pytest.UsageError(
            f"--optests-dbs: ops from different databases share test ids, e.g. {clashes[0]}; select fewer databases"
        )
    return cases


def execute(case: Case) -> tuple[SampleResult, str]:
    """Check one case (runs in the isolated child). Returns the record and the full report."""
    import torch

    from . import _opinfo
    from ._check import run_check

    assert case.sample is not None
    dtype = getattr(torch, case.dtype)
    sample = _opinfo.cached_samples(case.ref, case.device, dtype)[case.sample]
    context = f"{case.ref.id} {case.mode} {case.dtype} {case.device} sample {case.sample}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ops warn about deprecated arguments etc.; not findings
        checked = run_check(
            sample.func,
            sample.args,
            sample.kwargs,
            case.mode.startswith("dynamic"),
            check_gradients=sample.check_gradients,
            try_check_data_specialization=sample.randomize,
            skip_correctness_check=sample.skip_correctness_check,
            disable_functionalization=case.mode.endswith("-nofunc"),
            context=context,
            repro=_opinfo.repro_setup(case.ref, case.device, dtype, case.sample),
        )
    record = case.result(checked.outcome, checked.stage, checked.message, checked.duration)
    report = str(checked.error) if checked.error is not None else ""
    return record, report


def _execute_in_child(case: Case) -> tuple[SampleResult, str]:
    import torch

    # One intra-op thread: workers already use every core, and GNU OpenMP is not fork-safe.
    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)
    return execute(case)


class Sweep:
    """The stateful side of the plugin, registered for every run; idle unless sweep tests run."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.results: dict[str, SampleResult] = {}
        self._runner: IsolatedRunner | None = None
        self._is_worker = hasattr(config, "workerinput")

    # -- collection ---------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> None:
        """Explicitly chosen ops or databases are checked before any module is collected, so a
        bad value stops the run with a one-line usage error (also on the xdist controller)."""
        if self.settings.explicit:
            select_ops(self.settings)

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if CASE_FIXTURE not in metafunc.fixturenames:
            return
        cases = collect(self.settings)
        metafunc.parametrize(CASE_FIXTURE, cases, ids=[c.id for c in cases])

    # -- running ------------------------------------------------------------------------------

    def check(self, item: pytest.Item, case: Case) -> None:
        """Run one case for a sweep test; fails or skips the test accordingly."""
        if case.broken:
            self._attach(
                item, case.result(Outcome.FAILED, Stage.EAGER, f"{case.reason} [{case.ref.id} {case.dtype} {case.device}]")
            )
            pytest.fail(f"[eager] the OpInfo's samples cannot be made: {case.reason}", pytrace=False)
        if case.sample is None:
            self._attach(item, case.result(Outcome.NOT_APPLICABLE, message=case.reason))
            pytest.skip(f"not applicable: {case.reason}")
        if self._runner is None:
            self._runner = IsolatedRunner(_execute_in_child)
        start = time.perf_counter()
        try:
            answer = self._runner.run(case, self.settings.timeout)
        except RuntimeError as e:  # a bug in optests itself: record it, then let it show
            self._attach(
                item,
                case.result(
                    Outcome.FAILED, None, f"optests internal error: {str(e).splitlines()[-1]}", time.perf_counter() - start
                ),
            )
            raise
        if isinstance(answer, Died):
            stage = Stage.CRASH if answer.kind == "crash" else Stage.TIMEOUT
            first = answer.message.splitlines()[0]
            record = case.result(
                Outcome.FAILED,
                stage,
                f"{first} [{case.ref.id} {case.mode} {case.dtype} {case.device} sample {case.sample}]",
                time.perf_counter() - start,
            )
            report = f"[{stage}] {answer.message}"
        else:
            record, report = answer
        self._attach(item, record)
        if record.outcome is Outcome.FAILED:
            pytest.fail(report, pytrace=False)

    @staticmethod
    def _attach(item: pytest.Item, record: SampleResult) -> None:
        # Per-sample data rides on the report (user_properties survive xdist's serialization).
        item.user_properties.append((_PROPERTY, json.dumps(record.to_json())))

    # -- gathering (on the controller, or the only process) ---------------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for key, value in report.user_properties:
            if key == _PROPERTY:
                record = SampleResult.from_json(json.loads(str(value)))
                self.results[record.id] = record

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None
        if self._is_worker or not self.results or self.settings.results is None:
            return
        _results.write(self.settings.results, self.results.values(), _results.environment())

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self._is_worker or not self.results:
            return
        tr = terminalreporter
        tr.section("optests sweep")
        by_mode: dict[str, Counter[str]] = defaultdict(Counter)
        op_time: dict[str, Counter[str]] = defaultdict(Counter)
        for r in self.results.values():
            by_mode[r.mode][r.stage.value if r.stage else r.outcome.value] += 1
            op_time[r.mode][r.op_id] += r.duration  # type: ignore[assignment]
        for mode in sorted(by_mode, key=MODES.index):
            counts = by_mode[mode]
            parts = ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
            slow = ", ".join(f"{op} {secs:.1f}s" for op, secs in op_time[mode].most_common(5))
            tr.write_line(f"{mode}: {sum(counts.values())} samples: {parts}")
            tr.write_line(f"  slowest ops: {slow}")
        if self.settings.results is not None:
            tr.write_line(f"results: {self.settings.results}")
