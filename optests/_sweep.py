"""The sweep inside pytest: cases (one per sample x mode x dtype x device), their execution in an
isolated child, per-sample results carried on reports (so they survive xdist), the results file
and the end-of-run summary. Torch is imported only when the sweep is collected or run."""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import json
import math
import re
import statistics
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import _registry, _results
from ._files import WriteError
from ._findings import Outcome, Stage
from ._results import SampleResult
from ._runner import Died, IsolatedRunner
from ._settings import BUILTIN_DBS, DEVICES, DTYPES, MODES, Settings

if TYPE_CHECKING:
    from ._opinfo import OpRef

#: The fixture name a sweep test takes its case from.
CASE_FIXTURE = "optests_case"
#: The sweep test's node id (relative to the repository root), as durations files key it.
SWEEP_TEST = "opinfo_sweeps/test_aot_autograd.py::test_aot_autograd"
#: pytest-split's default durations file, in the current directory.
DURATIONS_PATH = ".test_durations"
_PROPERTY = "optests"
#: The key under which an xdist worker sends the controller the case ids it deselected.
_DESELECTED = "optests_deselected"


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

    @property
    def context(self) -> str:
        """The bracket that ends its messages: ``sin static float32 cpu sample 3``."""
        return f"{self.ref.id} {self.mode} {self.dtype} {self.device} sample {self.sample}"

    @property
    def scope(self) -> tuple[str, str, str, str, str]:
        return (self.ref.name, self.ref.variant, self.mode, self.dtype, self.device)

    def result(
        self,
        outcome: Outcome,
        stage: Stage | None = None,
        message: str = "",
        duration: float = 0.0,
        verdict: str = "",
        tolerance: str = "",
    ) -> SampleResult:
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
            verdict=str(verdict.value if hasattr(verdict, "value") else verdict),
            tolerance=tolerance,
        )


_CASE_ID = re.compile(
    rf"^(?P<mode>{'|'.join(sorted(MODES, key=len, reverse=True))})-(?P<dtype>{'|'.join(DTYPES)})-(?P<device>{'|'.join(DEVICES)})-(?P<op>.+)-(?P<tail>sample\d+|samples|not_applicable)$"
)


class DurationsError(ValueError):
    """A durations file that cannot be read; the message names the file (callers add the option)."""


def load_durations(path: Path) -> dict[str, float]:
    """pytest-split's durations file (test node id -> seconds); empty if there is none."""
    try:
        data = _results.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as e:
        raise DurationsError(f"{path}: {_results.describe_os_error(path, e)}") from None
    except ValueError as e:  # not JSON, or NaN / Infinity
        raise DurationsError(f"{path}: not a durations file ({e})") from None
    if not isinstance(data, dict):
        raise DurationsError(f"{path}: not a durations file (expected an object of test id -> seconds)")
    for key, value in data.items():
        if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
            raise DurationsError(f"{path}: not a durations file ({key!r}: {value!r} is not a number of seconds >= 0)")
    return data


def durations_of(records: Iterable[SampleResult]) -> dict[str, float]:
    """The sweep tests' durations as pytest-split records them, from results records (a
    duration that is not a finite number, which no check measures, is left out)."""
    return {
        f"{SWEEP_TEST}[{r.id}]": round(r.duration, 3)
        for r in records
        if r.sample is not None and math.isfinite(r.duration) and r.duration >= 0
    }


def parse_case_id(case_id: str) -> dict[str, str] | None:
    m = _CASE_ID.match(case_id)
    return m.groupdict() if m else None


def _torch_version() -> str:
    import torch

    return str(torch.__version__)


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
    dynamic = case.mode.startswith("dynamic")
    sample = _opinfo.cached_samples(case.ref, case.device, dtype)[case.sample]
    deco = _opinfo.decorations(_opinfo.opinfo(case.ref), dynamic, case.device, dtype)
    randomized = _randomized_sample(case, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ops warn about deprecated arguments etc.; not findings
        checked = run_check(
            sample.func,
            sample.args,
            sample.kwargs,
            dynamic,
            assert_equals_fn=deco.assert_equals(dtype),
            check_gradients=sample.check_gradients,
            try_check_data_specialization=True,
            skip_correctness_check=sample.skip_correctness_check,
            disable_functionalization=case.mode.endswith("-nofunc"),
            randomized_sample=randomized,
            context=case.context,
            repro=_opinfo.repro_setup(case.ref, case.device, dtype, case.sample, redraw=randomized is not None),
        )
    tolerance = "; ".join(t for t in (deco.tolerance, *checked.notes) if t)
    record = case.result(checked.outcome, checked.stage, checked.message, checked.duration, tolerance=tolerance)
    report = str(checked.error) if checked.error is not None else ""
    return record, report


def _randomized_sample(case: Case, dtype: Any) -> tuple[list[Any], dict[str, Any]] | None:
    """The case's sample drawn again under the randomized rerun's seed (None if it cannot be)."""
    from . import _opinfo

    again = _opinfo.randomized_samples(case.ref, case.device, dtype)
    if case.sample is None or case.sample >= len(again):
        return None
    return again[case.sample].args, again[case.sample].kwargs


def _execute_in_child(case: Case) -> tuple[SampleResult, str]:
    from ._check import one_intra_op_thread

    one_intra_op_thread()
    return execute(case)


def _prepare_child(dbs: tuple[str, ...]) -> None:
    """What a runner child started as a fresh interpreter (not forked) loads before its first task."""
    from . import _check, _opinfo  # noqa: F401  (torch, and AOTAutograd through the check)

    _opinfo.all_ops(dbs)


def _decoration_skip(case: Case) -> str:
    """Why the OpInfo's own decorations skip this case's test (PyTorch skips it too); "" if not."""
    import torch

    from . import _opinfo

    deco = _opinfo.decorations(_opinfo.opinfo(case.ref), case.mode.startswith("dynamic"), case.device, getattr(torch, case.dtype))
    return deco.skip_message


def _case_of(item: pytest.Item) -> Case | None:
    """The sweep case a collected test runs, if it is a sweep test."""
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get(CASE_FIXTURE) if callspec is not None else None
    return case if isinstance(case, Case) else None


class Sweep:
    """The stateful side of the plugin, registered for every run; idle unless sweep tests run."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.results: dict[str, SampleResult] = {}
        self._runner: IsolatedRunner | None = None
        self._is_worker = hasattr(config, "workerinput")
        self._entries = _registry.load(settings.registry) if settings.registry is not None else []
        self._registry: _registry.Registry | None = None  # needs the torch version: built on first use
        self._collected: dict[tuple[str, str, str, str], set[int]] = defaultdict(set)
        self._collected_ids: set[str] = set()
        self._stale: list[_registry.Entry] = []
        self._accepted: tuple[int, int] | None = None
        self._accept_error = ""
        self._started = _results.now()
        self._journal: _results.Journal | None = None

    @property
    def registry(self) -> _registry.Registry:
        if self._registry is None:
            self._registry = _registry.Registry(self._entries, _torch_version())
        return self._registry

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

    @pytest.hookimpl(tryfirst=True)  # before pytest-split picks its group, which keeps this order
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Long ops first, from the durations file (pytest-split's): xdist hands out tests in
        order, so the last ones to run are short and the workers finish together. An op's
        samples stay together, in every mode."""
        cases = [_case_of(item) for item in items]
        if not any(cases):  # not a sweep run: leave the (large) durations file unread
            return
        try:
            durations = load_durations(Path(getattr(config.option, "durations_path", None) or DURATIONS_PATH))
        except DurationsError as e:
            raise pytest.UsageError(f"--durations-path: {e}") from None
        if not durations:
            return
        fallback = statistics.median(durations.values())
        groups: dict[str, list[pytest.Item]] = defaultdict(list)
        total: Counter[str] = Counter()
        for item, case in zip(items, cases):
            key = case.ref.id if case is not None else item.nodeid
            groups[key].append(item)
            total[key] += durations.get(item.nodeid, fallback)  # type: ignore[assignment]
        items[:] = [item for key in sorted(groups, key=lambda k: -total[k]) for item in groups[key]]

    # -- running ------------------------------------------------------------------------------

    def check(self, item: pytest.Item, case: Case) -> None:
        """Run one case for a sweep test; fails or skips the test accordingly."""
        if case.broken:
            self._attach(
                item, case.result(Outcome.FAILED, Stage.EAGER, f"{case.reason} [{case.ref.id} {case.dtype} {case.device}]")
            )
            pytest.fail(f"[eager] the OpInfo's samples cannot be made: {case.reason}", pytrace=False)
        if case.sample is None:
            self._attach(item, case.result(Outcome.NOT_APPLICABLE, message=case.reason, verdict=_registry.Verdict.NOT_APPLICABLE))
            pytest.skip(f"not applicable: {case.reason}")
        skip = _decoration_skip(case)
        if skip:
            self._attach(item, case.result(Outcome.SKIPPED, message=skip, verdict=_registry.Verdict.SKIPPED))
            pytest.skip(skip)
        entry = self.registry.lookup(case.scope, case.sample)
        if entry is not None and entry.status is _registry.Status.SKIP:
            self._attach(item, case.result(Outcome.SKIPPED, entry.stage, entry.reason, verdict=_registry.Verdict.SKIPPED))
            pytest.skip(f"expected-failures registry: skip ({entry.stage}): {entry.reason}")
        if self._runner is None:
            self._runner = IsolatedRunner(_execute_in_child, prepare=functools.partial(_prepare_child, self.settings.dbs))
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
            first = answer.message.splitlines()[0]
            record = case.result(
                Outcome.FAILED,
                answer.stage,
                f"{first} [{case.context}]",
                time.perf_counter() - start,
            )
            report = f"[{answer.stage}] {answer.message}"
        else:
            record, report = answer
        verdict, entry = self.registry.judge(record)
        self._attach(item, dataclasses.replace(record, verdict=verdict.value))
        if verdict is _registry.Verdict.XFAILED:
            assert entry is not None
            pytest.xfail(f"expected ({entry.stage}): {entry.reason}")
        if verdict.ok:
            return
        context = f"[{case.context}]"
        if verdict is _registry.Verdict.UNEXPECTED_PASS:
            assert entry is not None
            head = f"outcome=passed, but expected a failure at stage {entry.stage} {context}\nThe registry says: {entry.reason}"
            what = "It passes now: remove it from the registry"
        elif verdict is _registry.Verdict.STAGE_CHANGED:
            assert entry is not None
            head = f"stage={record.stage}, but expected {entry.stage} {context}\nThe registry says: {entry.reason}\n{report}"
            what = "If the new stage is expected, record it"
        else:
            head = report
            what = f"Not in the expected-failures registry ({self._registry_name()}). If this failure is expected, record it"
        if self.settings.accept:
            pytest.xfail(f"{verdict.value}; --optests-accept records it")
        pytest.fail(f"{head}\n{what}:\n  {self._accept_command(item, case)}", pytrace=False)

    def _registry_name(self) -> str:
        path = self.settings.registry
        if path is None:
            return "none given"
        try:
            return str(path.relative_to(self.config.rootpath))
        except ValueError:
            return str(path)

    def _accept_command(self, item: pytest.Item, case: Case) -> str:
        try:
            where = item.path.relative_to(self.config.rootpath)
        except ValueError:
            where = item.path
        extra = ""
        if case.ref.db not in BUILTIN_DBS:
            extra += f" --optests-dbs='{case.ref.db}'"
        if self.settings.registry is not None and self._registry_name() != _registry.DEFAULT_PATH:
            extra += f" --optests-registry={self._registry_name()}"
        return (
            f"pytest {where} --optests-ops='{case.ref.id}' --optests-modes={case.mode} "
            f"--optests-dtypes={case.dtype} --optests-devices={case.device}{extra} --optests-accept"
        )

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
                self._record(SampleResult.from_json(json.loads(str(value))))

    def _record(self, record: SampleResult) -> None:
        self.results[record.id] = record
        if self.settings.results is not None and not self._is_worker:  # the controller writes
            if self._journal is None:
                self._journal = _results.Journal(self.settings.results, _results.environment(self._started))
            self._journal.add(record)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """An xdist worker died while running ``crashitem`` (on the controller): record that
        sample as a ``crash``, so the results hold every sample that was collected."""
        case = self._case_from_nodeid(crashitem)
        if case is None or case.sample is None:
            return
        record = case.result(
            Outcome.FAILED,
            Stage.CRASH,
            f"the pytest-xdist worker running the sample died ({report.longrepr}) [{case.context}]",
        )
        verdict, entry = self.registry.judge(record)
        self._record(dataclasses.replace(record, verdict=verdict.value))
        if verdict is _registry.Verdict.XFAILED or (self.settings.accept and not verdict.ok):
            # as for a crash inside the runner: expected, or recorded by this accept
            report.outcome = "skipped"
            report.wasxfail = f"expected ({entry.stage}): {entry.reason}" if entry else "--optests-accept records it"  # type: ignore[attr-defined]

    def _case_from_nodeid(self, nodeid: str) -> Case | None:
        """The sweep case a node id names, rebuilt from its id (the controller has no items)."""
        from . import _opinfo

        parts = parse_case_id(nodeid.rsplit("[", 1)[-1].rstrip("]")) if nodeid.endswith("]") else None
        if parts is None or not parts["tail"].removeprefix("sample").isdigit():
            return None
        refs = [r for r in _opinfo.all_ops(self.settings.dbs) if r.id == parts["op"]]
        if len(refs) != 1:
            return None
        return Case(refs[0], parts["mode"], parts["dtype"], parts["device"], int(parts["tail"].removeprefix("sample")))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            case = _case_of(item)
            if case is not None:
                self._note_collected(case.id)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        for nodeid in ids:
            if "[" in nodeid:
                self._note_collected(nodeid.rsplit("[", 1)[1].rstrip("]"))

    def _note_collected(self, case_id: str, deselected: bool = False) -> None:
        """A case the run collected, or collected and then deselected (``-k``, ``-m``,
        ``--deselect``, ``--lf``, ``--sw``, a pytest-split group: all report it through
        ``pytest_deselected``). Either way its registry entries are not stale."""
        parts = parse_case_id(case_id)
        if parts is not None:
            if not deselected:
                self._collected_ids.add(case_id)
            samples = self._collected[(parts["op"], parts["mode"], parts["dtype"], parts["device"])]
            if parts["tail"].startswith("sample") and parts["tail"] != "samples":
                samples.add(int(parts["tail"].removeprefix("sample")))

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        ids = [case.id for case in map(_case_of, items) if case is not None]
        if self._is_worker:  # the controller hears of it when the worker finishes
            self.config.workeroutput.setdefault(_DESELECTED, []).extend(ids)  # type: ignore[attr-defined]
        for case_id in ids:
            self._note_collected(case_id, deselected=True)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        for case_id in getattr(node, "workeroutput", {}).get(_DESELECTED, ()):
            self._note_collected(case_id, deselected=True)

    def _whole_selection(self) -> bool:
        """Stale entries are judged against what was collected or deselected, which is everything
        the options select, unless pytest never collected the rest at all: node ids on the
        command line, or ``--lf`` (which leaves a module's passing tests uncollected)."""
        return not self.config.getoption("lf", False) and not any("::" in str(a) for a in self.config.args)

    def _in_selection(self, e: _registry.Entry) -> bool:
        s = self.settings
        return (
            e.mode in s.modes
            and e.dtype in s.dtypes
            and e.device in s.devices
            and any(fnmatch.fnmatchcase(e.op_id, p) or fnmatch.fnmatchcase(e.op, p) for p in s.ops)
        )

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None
        if self._is_worker:
            return
        if self.settings.results is not None and not self.config.option.collectonly:
            # also when nothing was recorded: an older file must not pass for this run's
            complete = self._collected_ids <= set(self.results)
            env = _results.environment(self._started)
            _results.write(self.settings.results, self.results.values(), env, complete=complete)
            if self._journal is not None:
                self._journal.finish()
        if not self.results:
            return
        torch_version = _torch_version()
        if self._whole_selection():
            self._stale = _registry.stale(self._entries, self._collected, self._in_selection, torch_version)
            if self._stale and self.settings.strict_registry and not self.settings.accept:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.settings.accept and self.settings.registry is not None:
            whole = self._whole_selection()

            def stale_of(entries: Sequence[_registry.Entry]) -> list[_registry.Entry]:
                return _registry.stale(entries, self._collected, self._in_selection, torch_version) if whole else []

            try:
                before, after = _registry.accept_into(self.settings.registry, self.results.values(), torch_version, stale_of)
            except (_registry.RegistryError, WriteError) as e:  # e.g. the file changed under the run
                self._accept_error = str(e)
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            else:
                self._accepted = (len(before), len(after))

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
        verdicts = Counter(r.verdict for r in self.results.values() if r.verdict)
        if verdicts:
            tr.write_line("registry: " + ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items())))
        for e in self._stale:
            tr.write_line(
                f"stale registry entry (matches no collected sample): {e.label} samples={list(e.samples) if e.samples else 'all'}"
            )
        if self._accept_error:
            tr.write_line(f"accept failed, the registry is unchanged: {self._accept_error}", red=True)
        if self._accepted is not None:
            tr.write_line(
                f"accepted: {self._registry_name()} rewritten ({self._accepted[0]} entries before, {self._accepted[1]} after)"
            )
        if self.settings.results is not None:
            tr.write_line(f"results: {self.settings.results}")
