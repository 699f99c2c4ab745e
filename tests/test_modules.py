"""module_db: torch.nn modules (ModuleInfos) as a database, through the one pipeline the OpInfos go
through: their ops and ids, their samples, decorations, transforms, the sweep, `optests check`,
`check_op` and repro scripts; and planted bugs flagged at the right stage."""

from __future__ import annotations

import json
import operator
import subprocess
import sys
import unittest
from pathlib import Path
from typing import Any

import pytest
import torch
from sweepdir import OptestsCli, run_inline
from torch.testing._internal.common_device_type import tol, toleranceOverride
from torch.testing._internal.common_modules import ModuleInfo
from torch.testing._internal.opinfo.core import DecorateInfo

import optests
from optests import _modules, _opinfo, _settings
from optests._case import split_of
from optests._key import Mode, SampleKey
from optests._pipeline import transforms_for

BIN = Path(sys.executable).parent
FIXTURES = Path(__file__).resolve().parent / "sweep_fixtures"
sys.path.insert(0, str(FIXTURES))  # the planted modules, importable as the sweep's subprocesses import them
import module_ops  # noqa: E402


@pytest.fixture(scope="module")
def refs() -> dict[str, _opinfo.OpRef]:
    return {r.id: r for r in _opinfo.all_ops(("module_db",))}


# -- ops, ids, names -----------------------------------------------------------------------------


def test_a_module_is_one_op_per_training_mode_as_in_tree(refs: dict[str, _opinfo.OpRef]) -> None:
    from torch.testing._internal.common_modules import module_db

    differ = [m.name for m in module_db if m.train_and_eval_differ]
    assert len(refs) == len(module_db) + len(differ)
    assert "nn.Linear.train" in refs and "nn.Linear.eval" not in refs  # train and eval do not differ
    assert {"nn.BatchNorm2d.train", "nn.BatchNorm2d.eval"} <= set(refs)
    assert (refs["nn.BatchNorm2d.eval"].name, refs["nn.BatchNorm2d.eval"].variant) == ("nn.BatchNorm2d", "eval")
    assert all(r.db == "module_db" for r in refs.values())


def test_module_ids_are_readable_and_parse_back(refs: dict[str, _opinfo.OpRef]) -> None:
    ref = refs["nn.BatchNorm2d.eval"]
    key = SampleKey(ref.name, ref.variant, Mode.DYNAMIC, "float32", "cpu", 3, transform="transposed-1")
    assert key.id == "dynamic-float32-cpu-nn.BatchNorm2d.eval-sample3-transposed-1"
    assert SampleKey.parse(key.id, split_of(list(refs.values())).get) == key


def test_module_db_is_chosen_by_name_and_not_swept_by_default() -> None:
    settings = _settings.parse(lambda name: "module_db" if name == "dbs" else None, lambda name: "")
    assert settings.dbs == ("module_db",) and settings.explicit
    by_ini = _settings.parse(lambda name: None, lambda name: "op_db, module_db" if name == "dbs" else "")
    assert by_ini.dbs == ("op_db", "module_db")
    default = _settings.parse(lambda name: None, lambda name: "")
    assert default.dbs == _settings.BUILTIN_DBS == ("op_db", "hop_db", "custom_op_db")
    with pytest.raises(_settings.SettingError, match="valid: op_db, hop_db, custom_op_db, module_db or MODULE:ATTRIBUTE"):
        _settings.parse(lambda name: "modul_db" if name == "dbs" else None, lambda name: "")


def test_a_list_of_module_infos_of_your_own_is_a_module_database() -> None:
    ids = [r.id for r in _opinfo.all_ops(("module_ops:modules",))]
    assert ids[:3] == ["RunningMean.train", "RunningMean.eval", "NumpyScale.train"]


def test_a_database_that_mixes_opinfos_and_module_infos_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    mixed = types.ModuleType("mixed_db")
    mixed.entries = [module_ops.TRACKED_MEAN, object()]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mixed_db", mixed)
    with pytest.raises(_opinfo.DatabaseError) as caught:
        _opinfo.all_ops(("mixed_db:entries",))
    message = str(caught.value)
    assert message.startswith("OpInfo database 'mixed_db:entries': <object object at ") and "\n" not in message
    assert message.endswith("> is not a ModuleInfo, as others in it are")


# -- samples -------------------------------------------------------------------------------------


def _values(call: tuple[Any, list[Any], dict[str, Any]]) -> list[torch.Tensor]:
    return [t for t in torch.utils._pytree.tree_leaves((call[1], call[2])) if isinstance(t, torch.Tensor)]


def test_a_sample_is_the_module_called_with_its_parameters_and_buffers_as_inputs(refs: dict[str, _opinfo.OpRef]) -> None:
    samples = _opinfo.cached_samples(refs["nn.BatchNorm1d.train"], "cpu", torch.float32)
    first = samples[0]
    assert isinstance(first.func, _modules.ModuleCall) and first.check_gradients == "auto"
    parameters, buffers = first.args[0], first.args[1]
    assert set(parameters) == {"weight", "bias"} and set(buffers) == {"running_mean", "running_var", "num_batches_tracked"}
    assert all(type(t) is torch.Tensor and t.is_leaf and t.requires_grad for t in parameters.values())
    assert not any(t.requires_grad for t in buffers.values())
    # the parameters and buffers given are the ones used: the module's own are not
    module = first.func.module
    out = first.func({k: torch.zeros_like(v) for k, v in parameters.items()}, buffers, *first.args[2:], **first.kwargs)
    assert torch.equal(out, torch.zeros_like(out)) and module.get_parameter("weight").abs().sum() > 0


def test_a_sample_is_the_same_made_alone_or_with_the_others(refs: dict[str, _opinfo.OpRef]) -> None:
    entry = _opinfo.opinfo(refs["nn.Linear.train"])
    together = _modules.module_samples(entry.info, "cpu", torch.float32, True, 0)
    alone = _modules.module_samples(entry.info, "cpu", torch.float32, True, 0, only=2)
    assert len(together) == 3
    assert all(torch.equal(a, b) for a, b in zip(_values(together[2]), _values(alone[0]), strict=True))
    again = _opinfo.randomized_samples(refs["nn.Linear.train"], "cpu", torch.float32)[2]
    assert not torch.equal(_values(together[2])[0], _values((again.func, again.args, again.kwargs))[0])


def test_a_module_s_dtypes_decide_where_it_applies(refs: dict[str, _opinfo.OpRef]) -> None:
    assert _opinfo.applicable(refs["nn.Linear.train"], "cpu", torch.float32)
    assert not _opinfo.applicable(refs["nn.Linear.train"], "cpu", torch.int64)
    assert not _opinfo.applicable(
        next(r for r in _opinfo.all_ops(("module_ops:modules",)) if r.name == "NumpyScale"), "cpu", torch.float64
    )


def test_module_samples_take_every_input_transform_but_resized() -> None:
    (entry,) = _modules.entries([module_ops.NUMPY_SCALE], lambda i: None)
    assert list(transforms_for(entry, ["noncontiguous", "grad-subset", "resized"])) == ["noncontiguous", "grad-subset"]
    assert list(transforms_for(object(), ["resized"])) == ["resized"]  # an OpInfo's: all


# -- decorations ---------------------------------------------------------------------------------


def _info(*decorators: Any) -> _modules.ModuleEntry:
    info = ModuleInfo(module_ops.TrackedMean, module_inputs_func=module_ops._inputs, train_and_eval_differ=True, skips=decorators)
    train, evaluate = _modules.entries([info], lambda i: None)
    return train if train.training else evaluate


def test_decorations_aimed_at_the_in_tree_module_test_apply_by_mode_and_training() -> None:
    entry = _info(
        DecorateInfo(
            unittest.skip("train, dynamic"),
            "TestEagerFusionModuleInfo",
            "test_aot_autograd_symbolic_module_exhaustive",
            active_if=operator.itemgetter("training"),
        ),
        DecorateInfo(toleranceOverride({torch.float32: tol(atol=1e-3, rtol=1e-4)}), "TestEagerFusionModuleInfo"),
        DecorateInfo(unittest.skip("another test's"), "TestEagerFusionOpInfo"),
    )
    (evaluate,) = [e for e in _modules.entries([entry.info], lambda i: None) if not e.training]
    dynamic = _opinfo.decorations(entry, True, "cpu", torch.float32)
    assert dynamic.skip_message == "the ModuleInfo's decorations skip TestEagerFusionModuleInfo here: train, dynamic"
    static = _opinfo.decorations(entry, False, "cpu", torch.float32)
    assert static.skip == "" and static.tolerance == "ModuleInfo tolerance override(atol=0.001, rtol=0.0001)"
    assert _opinfo.decorations(evaluate, True, "cpu", torch.float32).skip == ""


def test_a_decoration_skip_is_the_sample_s_record() -> None:
    info = ModuleInfo(
        module_ops.TrackedMean,
        module_inputs_func=module_ops._inputs,
        skips=(DecorateInfo(unittest.skip("not today"), "TestEagerFusionModuleInfo"),),
    )
    checks = optests.check_op(info, modes=["static"], transforms="none")
    assert [(c.id, c.result.outcome.value) for c in checks] == [
        ("static-float32-cpu-TrackedMean.train-sample0", "skipped"),
        ("static-float32-cpu-TrackedMean.train-sample1", "skipped"),
    ]


# -- planted bugs, through check_op --------------------------------------------------------------


@pytest.mark.parametrize(
    ("info", "stages"),
    [
        # the buffer is not updated under compile: a mutation of an input the compiled call misses
        (module_ops.RUNNING_MEAN, {"RunningMean.train": "mutation", "RunningMean.eval": None}),
        # the buffer is updated by another step: the values of an input mutation differ
        (module_ops.DOUBLED_UPDATE, {"DoubledUpdate.train": "mutation"}),
        # the gradient of a parameter goes through numpy: the compiled backward fails
        (module_ops.NUMPY_SCALE, {"NumpyScale.train": "backward"}),
        (module_ops.TRACKED_MEAN, {"TrackedMean.train": None, "TrackedMean.eval": None}),
    ],
    ids=["running_mean", "doubled_update", "numpy_scale", "tracked_mean"],
)
def test_a_planted_module_bug_is_flagged_at_its_stage_and_a_correct_module_passes(info: Any, stages: dict[str, Any]) -> None:
    checks = optests.check_op(info, modes=["static", "dynamic"], transforms=["noncontiguous", "grad-subset", "resized"])
    found = {(c.op, c.key.transform): (c.result.stage.value if c.result.stage else None) for c in checks}
    for op, stage in stages.items():
        assert found[(op, "")] == stage, (op, found)
    # the transforms derive more samples from a module's (resized excepted), and none is flagged
    # where its base sample is not
    derived = {t for _, t in found if t}
    assert "grad-subset-0" in derived and not any(t.startswith("resized") for t in derived)
    for (op, transform), stage in found.items():
        if stages[op] is None:
            assert stage is None, (op, transform, stage)
    assert {c.op for c in checks} == set(stages)


# -- optests check -------------------------------------------------------------------------------


def test_optests_check_names_a_module_of_module_db(tmp_path: Path, optests_cli: OptestsCli) -> None:
    done = optests_cli(["check", "nn.Linear", "--modes", "static", "--transforms", "none", "--json", "out.json"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "nn.Linear.train: 3 samples x 1 modes" in done.stdout
    assert "3 checks: 3 passed, 0 failed" in done.stdout
    assert '"db": "module_db"' in (tmp_path / "out.json").read_text()  # the database, as the sweep records it


@pytest.mark.parametrize(
    ("name", "error"),
    [
        (
            "nn.Lineer",
            "optests check: error: unknown op 'nn.Lineer': no OpInfo or ModuleInfo in op_db, hop_db, custom_op_db, "
            "module_db matches; did you mean nn.Linear, nn.Bilinear, nn.Linear.train?",
        ),
        (
            "nn.Linear.eval",  # its train and eval do not differ: it has no eval op
            "optests check: error: unknown op 'nn.Linear.eval': no OpInfo or ModuleInfo in op_db, hop_db, custom_op_db, "
            "module_db matches; did you mean nn.Linear, nn.Linear.train, nn.LSTM.eval?",
        ),
        (
            "nn.Linear\n$(rm -rf ~)\x1b[31m",
            "optests check: error: unknown op 'nn.Linear\\n$(rm -rf ~)\\x1b[31m': no OpInfo or ModuleInfo in op_db, "
            "hop_db, custom_op_db, module_db matches",
        ),
        ("nomod:x", "optests check: error: nomod:x: importing nomod failed: ModuleNotFoundError: No module named 'nomod'"),
        ("optests._modules:build_module", "optests check: error: optests._modules:build_module is a function, not a ModuleInfo"),
    ],
    ids=["typo", "no-eval-op", "hostile", "no-module", "not-a-module-info"],
)
def test_an_unknown_module_name_is_one_line_naming_close_matches(
    tmp_path: Path, optests_cli: OptestsCli, name: str, error: str
) -> None:
    done = optests_cli(["check", name], tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == error and "Traceback" not in done.stderr


def test_optests_check_takes_a_module_info_of_yours_and_its_repro_reproduces(tmp_path: Path, optests_cli: OptestsCli) -> None:
    done = optests_cli(
        ["check", "module_ops:RUNNING_MEAN", "-v", "--modes", "static", "--transforms", "none", "--repro-dir", str(tmp_path)],
        FIXTURES,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "RunningMean.train: 2 samples x 1 modes" in done.stdout and "RunningMean.eval: 2 samples x 1 modes" in done.stdout
    assert "4 checks: 2 passed, 2 failed, 2 not expected" in done.stdout
    script = tmp_path / "RunningMean_train-static-float32-sample0.py"
    assert f"repro: python {script}" in done.stdout
    shown = subprocess.run([sys.executable, str(script)], cwd=FIXTURES, capture_output=True, text=True, check=False, timeout=300)
    assert shown.returncode == 1 and shown.stdout.splitlines()[-1] == "REPRODUCED", shown.stdout + shown.stderr


def test_check_op_takes_a_module_s_name_and_refuses_samples_for_it() -> None:
    checks = optests.check_op("nn.BatchNorm1d", modes=["static"], transforms="none")
    assert {c.op for c in checks} == {"nn.BatchNorm1d.train", "nn.BatchNorm1d.eval"}
    with pytest.raises(optests.AuthorError, match=r"^nn.Linear.train is a module: its ModuleInfo makes its samples; give none$"):
        optests.check_op("nn.Linear", samples=[([torch.ones(2)], {})])


class _Tied(torch.nn.Module):
    """One Linear under two names: its weight and bias are tied."""

    def __init__(self) -> None:
        super().__init__()
        self.first = torch.nn.Linear(3, 3)
        self.second = self.first

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.second(torch.tanh(self.first(x)))
        return out


def test_a_module_instance_is_checked_with_its_parameters_and_buffers_as_inputs() -> None:
    torch.manual_seed(0)
    batch_norm = torch.nn.BatchNorm1d(3)
    assert batch_norm.running_mean is not None
    running = batch_norm.running_mean.clone()
    correct = [torch.nn.Linear(3, 2), batch_norm, torch.nn.BatchNorm1d(3).eval(), _Tied(), torch.nn.ReLU()]
    for module in correct:
        checks = optests.check_op(module, samples=[([torch.randn(4, 3)], {})], modes=["static"], transforms=["grad-subset"])
        assert {c.op for c in checks} == {type(module).__name__}
        assert checks and all(c.result.outcome is optests.Outcome.PASSED for c in checks), [c.result.message for c in checks]
        (args, _), func = checks[0].inputs, checks[0].func
        assert isinstance(func, _modules.ModuleCall) and func.module is module
        assert list(args[0]) == [name for name, _ in module.named_parameters()]  # tied: once
        assert list(args[1]) == [name for name, _ in module.named_buffers()]
    assert torch.equal(batch_norm.running_mean, running)  # each run updated its own copy
    # a planted bug in a buffer's update (its ModuleInfo's train op is a mutation finding): the
    # instance is checked as module_db checks it
    (checked,) = optests.check_op(
        module_ops.RunningMean(3), samples=[([torch.randn(4, 3)], {})], modes=["static"], transforms="none"
    )
    assert checked.result.stage is optests.Stage.MUTATION and "args[1]['mean']" in checked.result.message, checked.result.message
    with pytest.raises(optests.AuthorError, match=r"^Linear has no OpInfo: give its samples"):
        optests.check_op(torch.nn.Linear(3, 2), modes=["static"])


def test_op_test_and_optests_check_take_a_module_instance(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(
        my_model="import torch\n"
        "torch.manual_seed(0)\n"
        "model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Tanh())\n"
        "def samples():\n"
        "    return [([torch.randn(5, 3)], {}), ([torch.randn(2, 3, requires_grad=True)], {})]\n",
        test_mine="import my_model, optests\n"
        "test_model = optests.op_test(my_model.model, samples=my_model.samples, modes=['static'], transforms='none')\n",
    )
    monkeypatch.syspath_prepend(str(pytester.path))
    pytester.runpytest("-p", "no:cacheprovider", "-q").assert_outcomes(passed=2)
    from optests import cli

    capsys.readouterr()
    code = cli.main(["check", "my_model:model", "--samples", "my_model:samples", "--modes", "static", "--transforms", "none"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "Sequential: 2 samples x 1 modes" in out and "2 checks: 2 passed, 0 failed" in out


def test_op_test_takes_a_module(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))
    pytester.makepyfile(
        test_mine="import module_ops, optests\n"
        "test_tracked = optests.op_test(module_ops.TRACKED_MEAN, modes=['static'], transforms='none')\n"
        "test_running = optests.op_test(module_ops.RUNNING_MEAN, modes=['static'], transforms='none')\n"
    )
    result = run_inline(pytester, "-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=6, failed=2)
    result.stdout.fnmatch_lines(["FAILED *test_running*static-float32-cpu-RunningMean.train-sample0*"])


def test_the_dashboard_names_the_optests_check_command_of_a_module_db_record() -> None:
    from optests._dashboard import repro_command
    from optests._findings import Outcome
    from optests._results import SampleResult

    key = SampleKey("nn.BatchNorm2d", "eval", Mode.STATIC, "float32", "cpu", 3)
    command = repro_command(SampleResult(key, "module_db", Outcome.FAILED))
    assert command == "optests check nn.BatchNorm2d.eval --modes static --dtypes float32 --device cpu --transforms none"
    assert repro_command(SampleResult(key, "module_ops:modules", Outcome.FAILED)) is None


# -- repro scripts -------------------------------------------------------------------------------


def _script(checks: list[optests.SampleCheck], directory: Path) -> Path:
    from optests import _repro

    (c,) = [c for c in checks if c.result.error is not None]
    error = c.result.error
    assert error is not None and error.options is not None and c.func is not None
    return _repro.write_standalone(directory, "repro", c.func, c.inputs, error.options, summary=error.summary)


def test_a_module_finding_s_standalone_script_rebuilds_the_module_and_reproduces(tmp_path: Path) -> None:
    checks = optests.check_op(module_ops.RUNNING_MEAN, modes=["static"], transforms="none")
    script = _script([c for c in checks if c.sample == 0], tmp_path)
    text = script.read_text()
    assert "from module_ops import RUNNING_MEAN" in text and "import optests" not in text
    assert "module_samples(RUNNING_MEAN, 'cpu', torch.float32, True, 0, only=0)[0][0]" in text
    done = subprocess.run([sys.executable, str(script)], cwd=FIXTURES, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[0].startswith("[mutation] traced mutation of args[1]['mean']=none"), done.stdout
    assert done.stdout.splitlines()[-1] == "REPRODUCED"


def test_a_module_db_finding_s_few_line_repro_rebuilds_the_sample_by_name(refs: dict[str, _opinfo.OpRef]) -> None:
    setup = _opinfo.repro_setup(refs["nn.BatchNorm1d.train"], "cpu", torch.float32, 2, redraw=True)
    assert setup is not None and "list(module_db)[9]" in setup
    namespace: dict[str, Any] = {"torch": torch}
    exec(setup, namespace)
    sample = _opinfo.cached_samples(refs["nn.BatchNorm1d.train"], "cpu", torch.float32)[2]
    made = (namespace["func"], namespace["args"], namespace["kwargs"])
    assert all(torch.equal(a, b) for a, b in zip(_values(made), _values((sample.func, sample.args, sample.kwargs)), strict=True))
    assert len(namespace["randomized_sample"]) == 2


# -- the sweep -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_sweep_checks_modules_of_module_db(sweep: pytest.Pytester) -> None:
    args = ["--optests-dbs=module_db", "--optests-ops=nn.Linear,nn.ReLU", "--optests-modes=static", "-p", "no:cacheprovider"]
    result = run_inline(sweep, "-n", "2", *args, "--optests-results=r.json", "--optests-registry=")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    collected = run_inline(sweep, "--collect-only", "-q", *args).outlines
    ids = [line.split("[", 1)[1].rstrip("]") for line in collected if "::test_aot_autograd[" in line]
    assert ids[:2] == ["static-float32-cpu-nn.Linear.train-sample0", "static-float32-cpu-nn.Linear.train-sample1"]
    assert all(i.startswith(("static-float32-cpu-nn.Linear.train-", "static-float32-cpu-nn.ReLU.train-")) for i in ids)
    records = json.loads((sweep.path / "r.json").read_text())["samples"]
    assert sorted(r["id"] for r in records) == sorted(ids)  # from both workers, each once
    assert {(r["db"], r["op"], r["variant"], r["outcome"]) for r in records} == {
        ("module_db", "nn.Linear", "train", "passed"),
        ("module_db", "nn.ReLU", "train", "passed"),
    }


@pytest.mark.slow
def test_the_sweep_flags_planted_module_bugs_and_accepts_them(sweep: pytest.Pytester) -> None:
    args = ["--optests-dbs=module_ops:modules", "--optests-modes=static", "-p", "no:cacheprovider"]
    result = run_inline(sweep, *args, "--optests-transforms=grad-subset")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    failed = sorted(line.split("[", 1)[1].split("]")[0] for line in result.outlines if line.startswith("FAILED"))
    # the buffer's update is a mutation on every sample of the train op, and of each grad-subset
    # sample but the one where the buffer alone requires grad (-2: eager refuses its in-place update)
    mutations = [
        f"{m}.train-sample{i}{t}"
        for m in ("DoubledUpdate", "RunningMean")
        for i in (0, 1)
        for t in ("", "-grad-subset-0", "-grad-subset-1", "-grad-subset-3")
    ]
    # numpy in the backward, wherever a gradient is taken (grad-subset-0 takes none)
    backward = [f"NumpyScale.train-sample{i}{t}" for i in (0, 1) for t in ("", "-grad-subset-1", "-grad-subset-2")]
    assert failed == sorted(f"static-float32-cpu-{s}" for s in mutations + backward)
    result.stdout.fnmatch_lines(["*static: 48 samples: passed 26, mutation 16, backward 6*"])
    result.stdout.fnmatch_lines(["*--optests-ops='RunningMean.train'*--optests-dbs='module_ops:modules' --optests-accept"])
    accepted = run_inline(sweep, *args, "--optests-transforms=grad-subset", "--optests-accept")
    assert accepted.ret == pytest.ExitCode.OK, accepted.stdout.str()
    again = run_inline(sweep, *args, "--optests-transforms=grad-subset")
    assert again.ret == pytest.ExitCode.OK, again.stdout.str()
    registry = (sweep.path / "expected_failures.json").read_text()
    assert '"op": "RunningMean"' in registry and '"variant": "train"' in registry and '"stage": "mutation"' in registry
