"""The sweep's pytest hooks: collection of its cases, their checks in an isolated child, the
per-sample results carried on reports (so they survive xdist), stale registry entries, accept, the
results file and the end-of-run summary. Registered by the plugin only for runs that ask for the
sweep; torch is imported only when the sweep is collected or run."""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import functools
import json
import os
import shlex
import shutil
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from . import _durations, _registry, _results
from ._case import Case, SelectionError, collect, select_ops, split_of
from ._env import CompileCache, environment, now
from ._execute import child_fit, execute_in_child, prepare_child
from ._files import WriteError
from ._findings import Outcome, Stage, Verdict
from ._key import _ID, DEFAULT_BACKEND, MODES, SampleKey, Scope, op_id, transform_name
from ._pipeline import DeadBases, Reruns, died, flaky_line, judge, settle, stale_line
from ._results import SampleResult
from ._runner import Died, IsolatedRunner, WorkFailed
from ._sanitize import printable, shell_join, shell_word
from ._settings import BUILTIN_DBS, KNOWN_DBS, Settings

#: The fixture name a sweep test takes its case from.
CASE_FIXTURE = "optests_case"
_PROPERTY = "optests"
#: Beside a record that fails the run: its base sample's input elements, ``[id, count]`` (the
#: summary's block of a cause shows its smallest sample).
_ELEMENTS = "optests_elements"
#: How many causes the summary shows a block of; the rest are counted.
_CAUSES_SHOWN = 10
#: Beside a record: the record is the resumed run's, replayed (``--optests-resume``), not checked.
_REPLAYED = "optests_replayed"
#: The key under which an xdist worker sends the controller the case ids it deselected.
_DESELECTED = "optests_deselected"
#: The key under which the controller tells each xdist worker the folder where the base samples
#: whose checks died are noted (:class:`optests._pipeline.DeadBases`).
_DEAD_BASES = "optests_dead_bases"


def _torch_version() -> str:
    import torch

    return str(torch.__version__)


#: Short-summary letters (``-r``) of outcomes the sweep's own summary counts: listed only on request.
_COUNTED = "sxp"


def _report_chars_given(config: pytest.Config) -> bool:
    """Whether the user chose ``-r``/``--report-chars`` for this run (on the command line or in
    ``PYTEST_ADDOPTS``), rather than inheriting it from a project's ``addopts``."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("-r", "--report-chars")
    args = [*shlex.split(os.environ.get("PYTEST_ADDOPTS", "")), *config.invocation_params.args]
    try:
        return parser.parse_known_args(args)[0].report_chars is not None
    except (SystemExit, ValueError):  # not parseable as ours: assume the user chose
        return True


#: How many flaky samples the sweep's summary names.
_FLAKY_SHOWN = 10


def _samples(n: int) -> str:
    return f"{n} sample" if n == 1 else f"{n} samples"


def _case_of(item: pytest.Item) -> Case | None:
    """The sweep case a collected test runs, if it is a sweep test."""
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get(CASE_FIXTURE) if callspec is not None else None
    return case if isinstance(case, Case) else None


def base_nodeid(nodeid: str) -> str:
    """The node id of the base sample a derived sample's node id names (its transform left out
    of the id); any other node id as it is."""
    head, bracket, param = nodeid.partition("[")
    m = _ID.match(param[:-1]) if bracket and param.endswith("]") else None
    if m is None or not m["transform"]:
        return nodeid
    start, end = m.span("transform")
    return f"{head}[{param[: start - 1]}{param[end:]}"


def _base_group_scheduling(config: pytest.Config, log: Any, crashed_in: Callable[[str], None]) -> Any:
    """xdist's ``loadscope`` scheduling with a base sample and its derived samples as one unit
    (every other test a unit of its own), units handed out in the order collected (long ops
    first, :meth:`Sweep.pytest_collection_modifyitems`), not by size. ``crashed_in`` is told the
    node id a dying worker was running, before the rest of its unit goes to another worker."""
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class BaseGroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return base_nodeid(nodeid)

        def schedule(self) -> None:
            option = self.config.option
            reorder, option.loadscopereorder = getattr(option, "loadscopereorder", False), False
            try:
                super().schedule()
            finally:
                option.loadscopereorder = reorder

        def remove_node(self, node: Any) -> str | None:
            """As xdist's ``load`` does, the test a dying worker was running is not given to
            another: ``loadscope`` would queue it again with its unit, and a sample that kills its
            worker would kill one worker after another. It is marked done first, and returned as
            the item that crashed."""
            crashed = next((i for unit in self.assigned_work[node].values() for i, done in unit.items() if not done), None)
            for unit in self.assigned_work[node].values():
                if crashed in unit:
                    unit[crashed] = True
            if crashed is not None:
                crashed_in(crashed)  # known before its derived samples reach another worker
            super().remove_node(node)
            return crashed

    return BaseGroupScheduling(config, log)


class Sweep:
    """The stateful side of the plugin, registered when a run asks for the sweep."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.results: dict[str, SampleResult] = {}
        #: the input elements of the samples that failed the run, by id (on the controller)
        self._elements: dict[str, int] = {}
        self._runner: IsolatedRunner | None = None
        self._is_worker = hasattr(config, "workerinput")
        self._entries = _registry.load(settings.registry) if settings.registry is not None else []
        self._registry: _registry.Registry | None = None  # needs the torch version: built on first use
        self._collected: dict[Scope, set[int]] = defaultdict(set)
        self._collected_ids: set[str] = set()
        #: under ``--optests-ids``: ids of the cases collected and then deselected (``-k``, a
        #: pytest-split group), on the controller
        self._deselected_ids: set[str] = set()
        self._stale: list[_registry.Entry] = []
        self._accepted: tuple[int, int] | None = None
        self._accept_error = ""
        self._started = now()
        self._journal: _results.Journal | None = None
        self._journal_error = False
        #: ids of the resumed records this run's tests replayed (on the controller)
        self._replayed: set[str] = set()
        self._results_error = ""
        #: the compile cache the run uses, chosen (and entered) by the controller or the only
        #: process, before xdist starts its workers: they and the runner's children inherit it
        self._compile_cache = None if self._is_worker else CompileCache(settings.compile_cache).__enter__()
        shared = getattr(config, "workerinput", {}).get(_DEAD_BASES)
        self._reruns = Reruns(settings.reruns)  # this worker's: a settled cause is not checked again
        self._dead = DeadBases("--optests-derived-after-death", Path(shared) if shared else None)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._compile_cache is not None:
            self._compile_cache.__exit__(None, None, None)
            self._compile_cache = None

    def _environment(self) -> dict[str, str]:
        return environment(self._started, self._compile_cache.label if self._compile_cache is not None else "")

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """(On the xdist controller.) Every worker notes the base samples whose checks died in one
        folder, so that a derived sample is not run on one worker after its base died on another."""
        if self._dead.directory is None:
            self._dead.directory = Path(tempfile.mkdtemp(prefix="optests-dead-bases-"))
        node.workerinput[_DEAD_BASES] = str(self._dead.directory)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """Under ``-n`` (xdist's ``--dist load``), with transforms and without
        ``--optests-derived-after-death``: a base sample and the samples derived from it go to one
        worker, in order, so that the base's check has ended (and a death is known) before any of
        them starts. Other dist modes are xdist's, as asked."""
        if config.getvalue("dist") != "load" or not self.settings.transforms or self.settings.derived_after_death:
            return None
        return _base_group_scheduling(config, log, self._worker_died_in)

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
            try:
                select_ops(self.settings)
            except SelectionError as e:  # it may quote a user's module or op names
                raise pytest.UsageError(printable(str(e))) from None

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if CASE_FIXTURE not in metafunc.fixturenames:
            return
        try:
            cases = collect(self.settings)
        except SelectionError as e:
            raise pytest.UsageError(printable(str(e))) from None
        metafunc.parametrize(CASE_FIXTURE, cases, ids=[c.id for c in cases])

    @pytest.hookimpl(tryfirst=True)  # before pytest-split picks its group, which keeps this order
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Long ops first, from the durations file (pytest-split's): xdist hands out tests in
        order, so the last ones to run are short and the workers finish together. An op's
        samples stay together, in every mode. Under ``--optests-ids`` a file that names none of
        the samples the options select leaves pytest's placeholder of an empty parameter set,
        which is removed: the run collects nothing (exit 5), it does not skip a test."""
        if self.settings.ids is not None:
            items[:] = [i for i in items if _case_of(i) is not None or CASE_FIXTURE not in getattr(i, "fixturenames", ())]
        cases = [_case_of(item) for item in items]
        if not any(cases):  # not a sweep run: leave the (large) durations file unread
            return
        try:
            durations = _durations.load(Path(getattr(config.option, "durations_path", None) or _durations.DEFAULT_PATH))
        except _durations.DurationsError as e:
            raise pytest.UsageError(printable(f"--durations-path: {e}")) from None
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

    @pytest.fixture
    def optests_check(self, request: pytest.FixtureRequest) -> Callable[[Case], None]:
        """Checks a sweep test's case and fails, skips or xfails the test by its verdict."""
        return functools.partial(self.check, request.node)

    def check(self, item: pytest.Item, case: Case) -> None:
        """Run one case for a sweep test; fails or skips the test accordingly."""
        key = case.key
        settled = settle(key, case.reason, self.registry)  # broken, not applicable, a skip entry
        if settled is not None:
            r = settled.result
            self._attach(item, case.result(r.outcome, r.stage, r.message, verdict=settled.verdict))
            if key.broken:
                pytest.fail(settled.said, pytrace=False)
            pytest.skip(settled.said)
        resumed = self._resumed.get(case.id)
        if resumed is not None:  # the dead run this one goes on from checked it: its record stands
            if resumed.outcome is Outcome.FAILED:
                self._dead.note(key, resumed.stage)
            said = f"[{resumed.stage}] {resumed.message}" if resumed.stage else resumed.message
            item.user_properties.append((_REPLAYED, case.id))
            self._judge(
                item,
                case,
                resumed,
                f"{said}\n(recorded by the run this one resumed; run it without --optests-resume for the detail and a repro)",
            )
            return
        not_run = None if self.settings.derived_after_death else self._dead.not_run(key)
        if not_run is not None:  # its base sample timed out or crashed
            self._attach(item, case.result(not_run.outcome, message=not_run.message, verdict=Verdict.SKIPPED))
            pytest.skip(not_run.message)
        if self._runner is None:
            self._runner = IsolatedRunner(
                execute_in_child, prepare=functools.partial(prepare_child, self.settings.dbs), fit=child_fit
            )
        start = time.perf_counter()
        try:
            answer = self._runner.run(case, self.settings.timeout)
        except WorkFailed as e:  # a bug in optests itself: record it, then let it show
            self._attach(
                item,
                case.result(Outcome.FAILED, None, f"optests internal error: {e.summary}", time.perf_counter() - start),
            )
            raise
        if isinstance(answer, Died):
            dead = died(key, answer, time.perf_counter() - start)
            record = case.result(dead.outcome, dead.stage, dead.message, dead.duration)
            self._dead.note(key, dead.stage)
            report = f"[{dead.stage}] {dead.detail}"
        else:
            record, report = answer
        self._judge(item, case, record, report, again=functools.partial(self._again, case))

    def _again(self, case: Case) -> SampleResult:
        """The record of one more check of ``case``, in a fresh child (``--optests-reruns``)."""
        assert self._runner is not None
        start = time.perf_counter()
        try:
            answer = self._runner.run(case, self.settings.timeout, fresh=True)
        except WorkFailed as e:  # a bug in optests itself: what this check found
            return case.result(Outcome.FAILED, None, f"optests internal error: {e.summary}", time.perf_counter() - start)
        if isinstance(answer, Died):
            dead = died(case.key, answer, time.perf_counter() - start)
            return case.result(dead.outcome, dead.stage, dead.message, dead.duration)
        record: SampleResult = answer[0]
        return record

    def _judge(
        self, item: pytest.Item, case: Case, record: SampleResult, report: str, again: Callable[[], SampleResult] | None = None
    ) -> None:
        """Attach ``record`` with the registry's verdict (``again``: a check of it in a fresh child,
        for a verdict that would fail the run: :class:`optests._pipeline.Reruns`), and pass,
        xfail or fail the test by it."""
        if again is None:  # a record made without a check (a death's): never checked again
            judged = judge(record, report, self.registry, self._registry_name())
        else:
            judged = self._reruns.judge(record, report, self.registry, self._registry_name(), again)
        self._attach(item, judged.record)
        if judged.verdict is Verdict.XFAILED:
            assert judged.entry is not None
            pytest.xfail(f"expected ({judged.entry.stage}): {judged.entry.reason}")
        if judged.verdict is Verdict.SKIPPED:  # the OpInfo's own decorations skip it, as PyTorch does
            pytest.skip(judged.record.message)
        if judged.verdict.ok:
            return
        self._attach_elements(item, case)
        if self.settings.accept:
            pytest.xfail(f"{judged.verdict.value}; --optests-accept records it")
        pytest.fail(f"{judged.message}\n{judged.how}:\n  {self._accept_command(item, case)}", pytrace=False)

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
        # names from a user's database, paths and backends quoted: the command is pasted into a shell
        extra = ""
        if case.ref.db not in BUILTIN_DBS:
            extra += f" --optests-dbs={shell_word(case.ref.db)}"
        if self.settings.registry is not None and self._registry_name() != _registry.DEFAULT_PATH:
            extra += f" {shell_join([f'--optests-registry={self._registry_name()}'])}"
        if case.key.transform:
            extra += f" --optests-transforms={transform_name(case.key.transform)}"
        if case.key.backend != DEFAULT_BACKEND:
            extra += f" --optests-backends={shell_word(case.key.backend)}"
        return (
            f"pytest {shell_join([str(where)])} --optests-ops={shell_word(case.key.op_id)} --optests-modes={case.key.mode} "
            f"--optests-dtypes={case.key.dtype} --optests-devices={case.key.device}{extra} --optests-accept"
        )

    @staticmethod
    def _attach_elements(item: pytest.Item, case: Case) -> None:
        """How big the sample a failure derives from is (its input elements), for the summary:
        the samples this process collected are at hand (:func:`optests._opinfo.cached_samples`)."""
        import torch

        from . import _opinfo
        from ._pipeline import input_elements

        key = case.key
        try:
            sample = _opinfo.cached_samples(case.ref, key.device, getattr(torch, key.dtype))[key.sample or 0]
            count = input_elements((sample.args, sample.kwargs))
        except Exception:  # a sample that cannot be made again: the summary goes by id
            return
        item.user_properties.append((_ELEMENTS, json.dumps([case.id, count])))

    @staticmethod
    def _attach(item: pytest.Item, record: SampleResult) -> None:
        # Per-sample data rides on the report (user_properties survive xdist's serialization).
        item.user_properties.append((_PROPERTY, json.dumps(record.to_json())))

    # -- gathering (on the controller, or the only process) ---------------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" or self._is_worker:  # a worker's records are the controller's to gather
            return
        replayed = {value for key, value in report.user_properties if key == _REPLAYED}
        for key, value in report.user_properties:
            if key == _ELEMENTS:
                case_id, count = json.loads(str(value))
                self._elements[str(case_id)] = int(count)
            if key == _PROPERTY:
                record = SampleResult.from_json(json.loads(str(value)))
                self._record(record, replayed=record.id in replayed)

    @pytest.hookimpl(tryfirst=True)  # before xdist starts its workers
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """The controller preflights the run's backends (:func:`optests._backends.preflight`):
        one that cannot run on this machine stops the run here, in one line, before any test
        (and so before ``--optests-accept`` could record its failures). Then it claims the
        results path: a second run on it stops here, with one line."""
        if not self._is_worker and not self.config.option.collectonly:
            from ._backends import BackendUnavailable, preflight

            try:
                preflight(self.settings.backends, self.settings.timeout)
            except BackendUnavailable as e:
                raise pytest.UsageError(printable(f"--optests-backends: {e}")) from None  # what the backend raised
        self._open_journal()

    def _open_journal(self) -> None:
        if self.settings.results is None or self._is_worker or self._journal is not None or self.config.option.collectonly:
            return
        try:
            self._journal = _results.Journal(self.settings.results, self._environment(), resume=self.settings.resume)
        except WriteError as e:
            raise pytest.UsageError(printable(f"--optests-results: {e}")) from None
        except _results.ResultsError as e:
            raise pytest.UsageError(printable(f"--optests-resume: {e}")) from None

    @functools.cached_property
    def _resumed(self) -> Mapping[str, SampleResult]:
        """The records of the dead run this one goes on from (``--optests-resume``), by id. The
        controller read them when it opened the journal, before it started any worker; a worker
        reads the journal itself (what this run appended since are samples it will not run)."""
        if not self.settings.resume or self.settings.results is None:
            return {}
        if not self._is_worker:
            self._open_journal()
            return self._journal.resumed if self._journal is not None else {}
        try:
            _, records = _results.read(_results.journal_path(self.settings.results))
        except _results.ResultsError as e:  # the controller read it: only a journal gone since (a remote worker)
            raise pytest.UsageError(printable(f"--optests-resume: {e}")) from None
        return _results.replayable(records)

    def _record(self, record: SampleResult, *, replayed: bool = False) -> None:
        self.results[record.id] = record
        if self.settings.results is not None and not self._is_worker:  # the controller writes
            self._open_journal()
            assert self._journal is not None
            if replayed:
                self._replayed.add(record.id)
            if record.id in self._journal.resumed:  # replayed, or now skipped: the journal keeps its record
                return
            try:
                self._journal.add(record)
            except WriteError as e:  # a full disk: stop now, in one line; the journal keeps the rest
                self._journal_error = True
                raise pytest.UsageError(
                    f"--optests-results: {e}; the sweep stopped, and the samples checked before are in "
                    f"{self._journal.path} (optests merge reads it)"
                ) from None

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """An xdist worker died while running ``crashitem`` (on the controller): record that
        sample as a ``crash``, so the results hold every sample that was collected."""
        case = self._case_from_nodeid(crashitem)
        if case is None or case.key.sample is None:
            return
        record = case.result(
            Outcome.FAILED,
            Stage.CRASH,
            f"the pytest-xdist worker running the sample died ({report.longrepr}) [{case.key.context}]",
        )
        self._dead.note(case.key, Stage.CRASH)  # for the workers that check its derived samples
        verdict, entry = self.registry.judge(record)
        self._record(dataclasses.replace(record, verdict=verdict))
        if verdict is Verdict.XFAILED or (self.settings.accept and not verdict.ok):
            # as for a crash inside the runner: expected, or recorded by this accept
            report.outcome = "skipped"
            report.wasxfail = f"expected ({entry.stage}): {entry.reason}" if entry else "--optests-accept records it"

    def _worker_died_in(self, nodeid: str) -> None:
        """(On the xdist controller.) A worker died checking ``nodeid``: its derived samples,
        wherever they are checked, are not run (:class:`optests._pipeline.DeadBases`)."""
        case = self._case_from_nodeid(nodeid)
        if case is not None and case.key.sample is not None:
            self._dead.note(case.key, Stage.CRASH)

    def _case_from_nodeid(self, nodeid: str) -> Case | None:
        """The sweep case a node id names, rebuilt from its id (the controller has no items)."""
        from . import _opinfo

        refs = _opinfo.all_ops(self.settings.dbs)
        key = SampleKey.parse(SampleKey.id_in_nodeid(nodeid), split_of(refs).get)
        if key is None or key.sample is None:
            return None
        return Case(next(r for r in refs if r.id == key.op_id and r.variant == key.variant), key)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            case = _case_of(item)
            if case is not None:
                self._collected_ids.add(case.id)
                self._note_collected(case.key)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        for nodeid in ids:
            case_id = SampleKey.id_in_nodeid(nodeid)
            if case_id:
                self._collected_ids.add(case_id)
                self._note_collected(self._parse(case_id))

    def _parse(self, case_id: str) -> SampleKey | None:
        """The key of a case id, as far as stale detection needs it: ops that no registry entry
        names need no key (the controller does not load the OpInfo databases for them)."""
        return SampleKey.parse(case_id, self._split.get)

    @functools.cached_property
    def _split(self) -> dict[str, tuple[str, str]]:
        return {e.op_id: (e.op, e.variant) for e in self._entries}

    def _note_collected(self, key: SampleKey | None) -> None:
        """A case the run collected, or collected and then deselected (``-k``, ``-m``,
        ``--deselect``, ``--lf``, ``--sw``, a pytest-split group: all report it through
        ``pytest_deselected``). Either way its registry entries are not stale."""
        if key is None:
            return
        samples = self._collected[key.scope]
        if key.sample is not None:
            samples.add(key.sample)

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        keys = [case.key for case in map(_case_of, items) if case is not None]
        if self._is_worker:  # the controller hears of it when the worker finishes
            self.config.workeroutput.setdefault(_DESELECTED, []).extend(k.id for k in keys)  # type: ignore[attr-defined]
        for key in keys:
            self._note_deselected(key.id, key)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        for case_id in getattr(node, "workeroutput", {}).get(_DESELECTED, ()):
            self._note_deselected(case_id, self._parse(case_id))

    def _note_deselected(self, case_id: str, key: SampleKey | None) -> None:
        """A case collected and then deselected: noted as collected, and under ``--optests-ids``
        remembered by id, so that the summary does not count it among the ids not collected."""
        if self.settings.ids is not None:
            self._deselected_ids.add(case_id)
        self._note_collected(key)

    def _whole_selection(self) -> bool:
        """Stale entries are judged against what was collected or deselected, which is everything
        the options select, unless pytest never collected the rest at all: node ids on the
        command line, ``--lf`` (which leaves a module's passing tests uncollected), a
        ``--optests-select`` that checks some of each op's samples, or ``--optests-ids``."""
        if self.settings.select.kind != "all" or self.settings.ids is not None:  # it knows no other samples
            return False
        return not self.config.getoption("lf", False) and not any("::" in str(a) for a in self.config.args)

    def _in_selection(self, e: _registry.Entry) -> bool:
        """Whether the run selects ``e``'s samples, so that matching none of them makes it stale.
        An entry of a derived sample no transform makes (``noncontiguous-0``, ``tangents-3``) is
        in every run's selection: it can never match, and that is known only here, where the
        transforms' rows (which import torch) may be read."""
        s = self.settings
        if e.transform:
            from ._transforms import makes

            if not makes(e.transform):
                return True
        return (
            e.mode in s.modes
            and e.dtype in s.dtypes
            and e.device in s.devices
            and (not e.transform or transform_name(e.transform) in s.transforms)
            and e.backend in s.backends
            and any(fnmatch.fnmatchcase(e.op_id, p) or fnmatch.fnmatchcase(e.op, p) for p in s.ops)
            and not self._of_unselected_database(e.op_id)
        )

    def _of_unselected_database(self, ident: str) -> bool:
        """Whether the op ``ident`` (``NAME.VARIANT``) belongs to a database the run left out
        (``module_db``'s in a sweep of the default databases, or theirs in a sweep of
        ``module_db``): its entries are then outside the selection, not stale. An op that no
        database has stays inside, to be reported stale; so does one that the run collected (a
        database of the user's may reuse a name). Asked only at the session's end, of entries
        that match no collected sample, so a run whose entries all match loads no other database.
        Only the databases optests knows are asked: a database of the user's that the run leaves
        out is not known to it."""
        return ident not in self._collected_op_ids and ident in self._unselected_op_ids

    @functools.cached_property
    def _collected_op_ids(self) -> frozenset[str]:
        return frozenset(op_id(scope.op, scope.variant) for scope in self._collected)

    @functools.cached_property
    def _unselected_op_ids(self) -> frozenset[str]:
        from . import _opinfo

        ids: set[str] = set()
        for db in KNOWN_DBS:
            if db not in self.settings.dbs:
                try:
                    ids.update(r.id for r in _opinfo.all_ops([db]))
                except _opinfo.DatabaseError:  # it cannot load here (a missing dependency): unknown
                    pass
        return frozenset(ids)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None
        if self._is_worker:
            return
        if self._dead.directory is not None:  # the controller made it for its workers
            shutil.rmtree(self._dead.directory, ignore_errors=True)
        if self._journal_error:  # already told, in one line; the journal holds what was checked
            assert self._journal is not None
            self._journal.close()
            return
        if self.settings.results is not None and not self.config.option.collectonly:
            # also when nothing was recorded: an older file must not pass for this run's
            complete = self._collected_ids <= set(self.results)
            env = self._environment()
            try:
                _results.write(self.settings.results, self.results.values(), env, complete=complete)
            except _results.ResultsError as e:  # e.g. a full disk: said in the summary, exit 4
                self._results_error = f"{e}" + (f"; the samples checked are in {self._journal.path}" if self._journal else "")
                session.exitstatus = pytest.ExitCode.USAGE_ERROR
                if self._journal is not None:
                    self._journal.close()
            else:
                if self._journal is not None and complete and self._journal.resumed.keys() <= self.results.keys():
                    self._journal.finish()
                elif self._journal is not None:  # stopped early (-x, Ctrl-C), or a resumed journal's records left out
                    self._journal.close()
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
        if self._is_worker:
            return
        tr = terminalreporter
        if not _report_chars_given(self.config):
            # The sweep's summary counts expected failures and skips, thousands of them: listed
            # one a line after it (``-ra`` in a project's addopts), they would bury it.
            tr.reportchars = "".join(c for c in tr.reportchars if c not in _COUNTED)
        if self.settings.ids is not None and (missing := self.settings.ids.ids - self._collected_ids - self._deselected_ids):
            tr.write_line(
                printable(  # the ids are the file's text
                    f"--optests-ids: {len(missing)} of the {len(self.settings.ids.ids)} ids in {self.settings.ids.path} were not "
                    f"collected (this run's options select no such sample, or there is none), e.g. {min(missing)}"
                ),
                yellow=True,
            )
        if not self.results:
            if self._results_error:
                tr.write_line(printable(f"results not written: {self._results_error}"), red=True)
            self._write_journal_kept(tr)
            return
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
        self._write_causes(tr)
        flaky = sorted((r for r in self.results.values() if r.verdict is Verdict.FLAKY), key=lambda r: r.id)
        for r in flaky[:_FLAKY_SHOWN]:
            tr.write_line(printable(flaky_line(r)), yellow=True)
        if len(flaky) > _FLAKY_SHOWN:
            tr.write_line(f"... {len(flaky) - _FLAKY_SHOWN} more flaky samples (the results list them: verdict flaky)")
        for e in self._stale:
            tr.write_line(printable(stale_line(e)))
        if self._accept_error:
            tr.write_line(printable(f"accept failed, the registry is unchanged: {self._accept_error}"), red=True)
        if self._accepted is not None:
            tr.write_line(
                f"accepted: {self._registry_name()} rewritten ({self._accepted[0]} entries before, {self._accepted[1]} after)"
            )
        if self._journal is not None and self._journal.resumed:
            left = len(self._journal.resumed.keys() - self.results.keys())
            tr.write_line(
                f"resumed: {_samples(len(self._replayed))} checked by the run this one went on from ({self._journal.path.name})"
                + (f"; {left} of its records are not among this run's results (the journal keeps them)" if left else "")
            )
        if self._results_error:
            tr.write_line(printable(f"results not written: {self._results_error}"), red=True)
        elif self.settings.results is not None and not self._journal_error:  # that error comes last, as the run's
            tr.write_line(f"results: {self.settings.results}")
        self._write_journal_kept(tr)

    def _write_causes(self, tr: Any) -> None:
        """The samples that fail the run, one block per cause (:mod:`optests._grouped`): the count,
        what it spans, the smallest sample and the first line of its message; the largest causes
        first, :data:`_CAUSES_SHOWN` of them."""
        from . import _grouped

        failing = [r for r in self.results.values() if r.verdict is not None and not r.verdict.ok]
        if not failing:
            return
        groups = _grouped.group(failing, self._elements)
        tr.write_line(_grouped.headline(groups, "recorded by --optests-accept" if self.settings.accept else "failing the run"))
        for i, g in enumerate(groups[:_CAUSES_SHOWN], 1):
            for line in _grouped.block_head(i, g, self._elements):
                tr.write_line(printable(line))
            message = g.representative.message.strip().splitlines()
            if message:
                tr.write_line(printable(f"   {message[0][:300]}"))
        more = len(groups) - _CAUSES_SHOWN
        where = shell_join([str(self.settings.results)]) if self.settings.results is not None else "RESULTS"
        if more > 0:
            tr.write_line(f"... and {more} more causes ({sum(g.count for g in groups[_CAUSES_SHOWN:])} samples)")
        tr.write_line(
            f"each sample's failure and repro is in its test's report above; optests report {where} --out DIR "
            "writes an issue-ready file per cause"
        )

    def _write_journal_kept(self, tr: Any) -> None:
        """After results written whole or in part: the journal, if kept, holds what they lack."""
        if self._journal is not None and self._journal.kept and not (self._results_error or self._journal_error):
            tr.write_line(
                f"journal kept: {self._journal.path} holds samples the results lack; go on from it with --optests-resume"
            )
