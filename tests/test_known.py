"""The catalog of known PyTorch bugs (``optests._known``), one declaration checked against what it
declares: ``findings/`` (every repro has an entry, every entry its repro and outputs, and the
README's table agrees on releases and upstream issues), the registry's reasons (a reason that
names ``findings/X.py`` names an entry X), and the committed sweep records (a failure the
registry puts down to finding X has cause X, and a failure of cause X is put down to X, or to
nothing: an entry's conditions are neither too narrow nor too broad).

Then the point of it: a user's correct custom op that hits a known bug is told so by every entry
point, in static and dynamic mode, and its run fails all the same.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sweepdir import OptestsCli

from optests._causes import release
from optests._findings import Outcome, Stage, Verdict
from optests._key import transform_name
from optests._known import KNOWN
from optests._registry import Registry, load
from optests._results import SampleResult, read_with_status

ROOT = Path(__file__).resolve().parents[1]
FINDINGS = ROOT / "findings"
RESULTS = ROOT / "sweep-results"
REGISTRY = ROOT / "expected_failures.json"
NAMED = re.compile(r"findings/(\w+)\.py")
NAMES = {bug.name for bug in KNOWN}


def test_every_finding_has_an_entry_and_every_entry_its_repro_and_outputs() -> None:
    scripts = {p.stem for p in FINDINGS.glob("*.py")}
    assert sorted(scripts - NAMES) == [], "a repro in findings/ without an entry in optests/_known.py"
    assert sorted(NAMES - scripts) == [], "an entry in optests/_known.py without its repro in findings/"
    for bug in KNOWN:
        ran = {".".join(map(str, release(p.name.split(".torch-", 1)[1]))) for p in FINDINGS.glob(f"{bug.name}.torch-*.txt")}
        assert set(bug.releases) <= ran, f"{bug.name}: releases {bug.releases}, but outputs only of {sorted(ran)}"
        assert not bug.fixed_in or bug.fixed_in in ran, f"{bug.name}: fixed in {bug.fixed_in}, but no output of it there"
        assert bug.fixed_in not in bug.releases


def _readme_rows() -> dict[str, list[str]]:
    rows = {}
    for line in (FINDINGS / "README.md").read_text().splitlines():
        if m := re.match(r"\| `(\w+)\.py` \|", line):
            rows[m[1]] = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
    return rows


def test_the_findings_readme_table_agrees_with_the_catalog() -> None:
    rows = _readme_rows()
    assert set(rows) == NAMES
    for bug in KNOWN:
        *_, on_13, on_15, upstream = rows[bug.name]
        assert on_13.startswith("yes") == ("2.13" in bug.releases), bug.name
        # "yes", or "`sgn` only" (one of its ops): it reproduces there
        assert (not on_15.startswith("no")) == ("2.15" in bug.releases), bug.name
        assert on_15.startswith("no") == (bug.fixed_in == "2.15"), bug.name
        issue = re.match(r"\[#(\d+)\]", upstream)
        assert bug.upstream == (f"pytorch/pytorch#{issue[1]}" if issue else ""), bug.name


def test_every_reason_that_names_a_finding_names_an_entry() -> None:
    unknown = {(e.op_id, name) for e in load(REGISTRY) for name in NAMED.findall(e.reason) if name not in NAMES}
    assert sorted(unknown) == []


def test_the_catalog_is_ordered_narrow_first() -> None:
    """An entry for some ops comes before every entry for any op (a bug of the compile path): a
    failure of both is the op's."""
    anyop = [i for i, bug in enumerate(KNOWN) if bug.ops is None]
    assert all(KNOWN[i].ops is None for i in range(anyop[0], len(KNOWN)))
    assert {bug.name for bug in KNOWN if bug.ops is None} >= {"aot_double_backward_silently_dropped", "aot_out_resize"}


# -- the committed sweep records ------------------------------------------------------------------


@dataclass(frozen=True)
class Excused:
    """A record where the registry's reason and the cause may differ, and why."""

    op: str
    family: str
    stage: Stage
    #: the finding the registry's reason names ("" none)
    named: str
    #: the record's cause (a known bug's name; "" a signature)
    cause: str
    why: str

    def covers(self, r: SampleResult, named: str) -> bool:
        known = r.cause if r.cause in NAMES else ""
        return (r.key.op_id, transform_name(r.key.transform), r.stage, named, known) == (
            self.op,
            self.family,
            self.stage,
            self.named,
            self.cause,
        )


EXCUSED = (
    Excused(
        "lu",
        "out",
        Stage.TRACE,
        "aot_lu_out_dynamic_internal_assert",
        "aot_out_resize",
        "2.15 fixed lu's assert, and the entry written for it covers out-1 (the out= to resize), which now fails as every "
        "op's out= to resize does",
    ),
    Excused(
        "nn.FractionalMaxPool2d.train",
        "subclass",
        Stage.BACKWARD,
        "aot_subclass_dynamic_invalid_output_node",
        "",
        "the module's entry covers a range of samples; two of them fail to rebuild a subclass output "
        "('could not match output layout', '_make_wrapper_subclass(): argument 'size''), not at the joint trace",
    ),
    Excused(
        "linalg.eig",
        "backward",
        Stage.BACKWARD,
        "",
        "aot_double_backward_silently_dropped",
        "the entry's reason is the eigenvector-phase refusal its first samples show; others of its range lose the "
        "second-order gradient (eig's backward saves its outputs, not its input)",
    ),
)

#: Entries that no committed record shows, and why.
UNSEEN = {
    "aot_lstm_autocast_onednn_dtype": "the harness makes nn.LSTM under autocast not applicable on every CPU",
    "inductor_fork_after_compile_hangs": "optests resets inductor's compile thread pool in its forked children",
}


def _named(reason: str) -> str:
    names = NAMED.findall(reason)
    assert len(set(names)) <= 1, reason
    return names[0] if names else ""


def _mismatches(paths: Iterable[Path], seen: Counter[str]) -> Iterator[str]:
    """Each failed record of ``paths`` whose cause and registry's reason disagree, as a line."""
    entries = load(REGISTRY)
    for path in paths:
        env, records, _ = read_with_status(path)
        registry = Registry(entries, env.get("torch", ""))
        for r in records:
            if r.outcome is not Outcome.FAILED:
                continue
            verdict, entry = registry.judge(r)
            named = _named(entry.reason) if entry is not None else ""
            known = r.cause if r.cause in NAMES else ""
            seen[known] += 1
            if verdict is Verdict.XFAILED and named and known != named:
                wrong = f"the registry names {named}, but its cause is {r.cause!r}"
            elif known and known != named and verdict is not Verdict.UNEXPECTED_FAILURE:
                wrong = f"cause {known}, but judged {verdict.value} by: {entry.reason if entry else None}"
            else:
                continue
            if not any(e.covers(r, named) for e in EXCUSED):
                yield f"{path.name}: {r.id} [{r.stage}]: {wrong}"


def _sweep_files() -> list[Path]:
    return sorted(p for p in RESULTS.rglob("*.json*") if not p.name.endswith(".ids.txt.gz") and "expectations" not in p.name)


#: A few small files that between them show a dozen entries (module_db, a transform, the 2.15 runs).
FEW = (
    "modules/2026-11-25-torch-2.13.0-cpu-float32-static-module_db.json.gz",
    "modules/2026-11-28-torch-2.13.0-cpu-float32-static-dynamic-module_db-nn.LSTM-autocast-same-on-every-cpu.json.gz",
    "transforms/2026-11-23-torch-2.13.0-cpu-float32-static-dynamic-duplicated-only.json.gz",
    "transforms/2026-11-25-torch-2.15.0-cu132-cpu-float32-static-dynamic-all-transforms-entry-ops.json.gz",
    "patterns/2026-11-28-torch-2.15.0-cu132-cpu-float32-pattern-entries-narrowed-on-2.13-tail.json.gz",
)


def test_causes_agree_with_the_registry_on_a_few_sweep_files() -> None:
    seen: Counter[str] = Counter()
    assert list(_mismatches([RESULTS / f for f in FEW], seen)) == []
    assert len(set(seen) - {""}) >= 6, seen


@pytest.mark.slow
def test_causes_agree_with_the_registry_on_every_committed_sweep_file() -> None:
    seen: Counter[str] = Counter()
    wrong = list(_mismatches(_sweep_files(), seen))
    assert wrong[:20] == [], f"{len(wrong)} records"
    assert sorted(NAMES - set(seen) - set(UNSEEN)) == [], "entries no record shows: a regex too narrow?"


def test_the_excused_records_say_why() -> None:
    assert all(e.why and (e.named or e.cause) for e in EXCUSED)
    assert set(UNSEEN) <= NAMES


# -- a user's op is told -----------------------------------------------------------------------

DOUBLE = "aot_double_backward_silently_dropped"
TOLD = f"known PyTorch bug: {DOUBLE} (findings/{DOUBLE}.py, pytorch/pytorch#181606)"


@pytest.mark.parametrize(
    "message",
    [
        "grad of args[1] (second order)=None, but expected tensor([[0., 0.]]) [my::op static float32 cpu sample 0 backward-3]",
        "grad of args[0]['in_proj_weight'] (second order)=None, but expected tensor([[1.]])",
        "grad of args[0] (second order)=None, but expected tensor(0.)",  # where eager's is zeros
        "compiled backward=no error, but expected raised RuntimeError: derivative for aten::multi_margin_loss_backward "
        "is not implemented (as eager)",  # where eager refuses
        "compiled backward=no error, but expected raised RuntimeError: Trying to backward through my.grad.default but no "
        "autograd formula was registered. Please use register_autograd to add one. (as eager)",  # a custom op's backward
    ],
)
def test_every_form_of_the_double_backward_bug_is_it(message: str) -> None:
    from optests._key import Mode, SampleKey

    for op in ("my::op", "nn.functional.max_pool1d"):
        key = SampleKey(op, "", Mode.DYNAMIC, "float32", "cpu", 0, False, "backward-3")
        assert SampleResult(key, "", Outcome.FAILED, Stage.BACKWARD, message).cause == DOUBLE
    # another family, another stage: another cause
    other = SampleKey("my::op", "", Mode.STATIC, "float32", "cpu", 0, False, "tangents-0")
    assert SampleResult(other, "", Outcome.FAILED, Stage.BACKWARD, message).cause != DOUBLE


@pytest.mark.parametrize(
    "name", ["function_exp", *(pytest.param(name, marks=pytest.mark.slow) for name in ("composite", "exp_of_unregistered"))]
)
def test_check_op_tells_an_op_its_failure_is_a_known_pytorch_bug(name: str) -> None:
    import known_corpus

    import optests

    checks = optests.check_op(getattr(known_corpus, name), samples=known_corpus.samples(), transforms="backward")
    failed = [c for c in checks if c.result.outcome is Outcome.FAILED]
    assert [(c.mode.value, c.key.transform) for c in failed] == [("static", "backward-3"), ("dynamic", "backward-3")]
    for c in failed:
        assert c.verdict is Verdict.UNEXPECTED_FAILURE  # a failure all the same
        assert c.record().cause == DOUBLE
        assert TOLD in c.judgement.splitlines()


def test_op_test_tells_an_op_its_failure_is_a_known_pytorch_bug() -> None:
    import known_corpus

    import optests

    test = optests.op_test(known_corpus.exp_and_sigmoid, samples=known_corpus.pair_samples(), transforms="backward")
    (ids,) = [m.args[1] for m in test.pytestmark if m.name == "parametrize"]  # type: ignore[attr-defined]
    doubles = [i for i in ids if i.endswith("backward-3")]
    assert [i.split("-")[0] for i in doubles] == ["static", "dynamic"]
    for sample_id in doubles:
        with pytest.raises(AssertionError) as failed:
            test(sample_id)
        assert str(failed.value).startswith("unexpected_failure: ")
        assert TOLD in str(failed.value).splitlines()


def test_optests_check_tells_a_custom_op_its_failure_is_a_known_pytorch_bug(optests_cli: OptestsCli, tmp_path: Path) -> None:
    from optests._results import read

    args = ["check", "--import", "known_corpus", "--samples", "known_corpus:samples", "optests_known::exp"]
    args += ["--transforms", "backward", "--json", "out.json"]
    grouped = optests_cli(args, tmp_path)  # one block for the cause, named as the known bug
    assert grouped.returncode == 1, grouped.stdout + grouped.stderr  # exit codes do not change
    assert f"1. 2 samples: {TOLD}\n   ops optests_known::exp; modes static, dynamic;" in grouped.stdout, grouped.stdout
    done = optests_cli([*args, "-v"], tmp_path)  # every finding
    assert done.returncode == 1, done.stdout + done.stderr
    findings = done.stdout.split("\n[backward] grad of args[0] (second order)=None")[1:]
    assert len(findings) == 2  # static and dynamic: each says so, before its repro
    assert all(f"\n    {TOLD}\n" in finding.split("\n    repro: ")[0] for finding in findings)
    _, records = read(tmp_path / "out.json")
    assert sorted((r.mode.value, r.cause) for r in records if r.cause) == [("dynamic", DOUBLE), ("static", DOUBLE)]


def test_a_known_bug_entry_matches_only_where_its_conditions_hold() -> None:
    from optests._causes import matches
    from optests._key import Mode, SampleKey

    bug = next(b for b in KNOWN if b.name == "max_unpool2d_channels_last_strides")
    key = SampleKey("nn.functional.max_unpool2d", "", Mode.STATIC, "float32", "cpu", 0, False, "transposed-1")
    message = "traced out.stride()=(36, 18, 6, 1), but expected (36, 1, 12, 2)"
    assert matches(bug, key, Stage.METADATA, message)
    assert matches(bug, key, Stage.METADATA, message, "2.13.0+cpu")
    assert not matches(bug, key, Stage.METADATA, message, "2.15.0")  # fixed there
    assert not matches(bug, dataclasses.replace(key, op="nn.functional.pad"), Stage.METADATA, message)
    assert not matches(bug, key, Stage.FORWARD, message)


@pytest.mark.parametrize("backend", ["aot_eager_decomp_partition", "inductor", "aot_eager", "dynamo:eager"])
def test_a_fake_kernels_strides_met_in_a_sequence_are_its_only_where_the_decomposition_runs(backend: str) -> None:
    """Under a backend that runs the decomposition, a later call's compiled output has the strides
    the fake kernel finding names; under one that does not, the same message is a stale graph's,
    for the sequence to report as its own."""
    from optests._causes import known_bug
    from optests._key import Mode, SampleKey

    key = SampleKey("nn.functional.batch_norm", "", Mode.STATIC, "float32", "cpu", 0, False, "sequence-1", backend)
    message = (
        "call 2 (args[0] with the last two dims swapped in memory after every tensor input non-dense (strides doubled, "
        "storage offset 1)): compiled out.stride()=(25, 1, 5), but expected (25, 5, 1)"
    )
    bug = known_bug(key, Stage.SEQUENCE, message)
    decomposes = backend in ("aot_eager_decomp_partition", "inductor")
    assert (bug.name if bug else None) == ("batch_norm_transposed_strides" if decomposes else None)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager", "aot_eager_decomp_partition"])
@pytest.mark.parametrize("op", ["mm", "my_matmul"])
@pytest.mark.parametrize(
    "refusal",
    [
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        "[torch.FloatTensor [4, 5]] is at version 2; expected version 1 instead.",
        "Output 0 of SplitWithSizes is a view and its base or another view of its base has been modified inplace.",
    ],
)
def test_an_input_changed_between_forward_and_backward_under_inductor_is_its_known_bug_for_any_op(
    op: str, backend: str, refusal: str
) -> None:
    """The lost version counter is inductor's, whatever calls the view it saves or returns: a
    user's function (``my_matmul``) meets it as ``mm`` does, and is told so; under another backend
    the same message would be the op's own (there the check holds)."""
    from optests._causes import known_bug
    from optests._key import Mode, SampleKey

    key = SampleKey(op, "", Mode.STATIC, "float32", "cpu", 0, False, "inplace-between", backend)
    message = (
        "compiled backward=no error, and gradients other than those of the values before the change, but expected "
        f"raised RuntimeError: {refusal} (as eager)"
    )
    bug = known_bug(key, Stage.BACKWARD, message)
    assert (bug.name if bug else None) == ("inductor_saved_input_view_version_counter" if backend == "inductor" else None)
