"""The expected-failures registry: validation, verdicts, accept, merge; unit and property tests."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optests import Outcome, Stage
from optests._findings import Verdict
from optests._key import Mode, SampleKey, Scope
from optests._registry import (
    Entry,
    Registry,
    RegistryError,
    Status,
    accept,
    accept_into,
    dump,
    load,
    parse,
    parse_ranges,
    ranges,
    reason_from,
    stale,
)
from optests._results import ResultsError, SampleResult, merge

TORCH = "2.13.0+cpu"


def _entry(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "op": "sin", "variant": "", "mode": "static", "dtype": "float32", "device": "cpu",
        "status": "xfail", "stage": "trace", "reason": "because", "samples": [0, 2],
    }  # fmt: skip
    base.update(kw)
    return {k: v for k, v in base.items() if v is not None}


def _doc(*entries: dict[str, object], version: object = 1) -> str:
    return json.dumps({"schema_version": version, "entries": list(entries)}, indent=2)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{"schema_version": 1,\n "entries": [}', "reg.json:2:14: not valid JSON: Expecting value"),
        (_doc(version=5), "reg.json: schema_version 5 is not supported (this optests reads 1, 2, 3, 4)"),
        (json.dumps({"entries": []}), "reg.json: schema_version None is not supported (this optests reads 1, 2, 3, 4)"),
        ("[]", 'reg.json: the registry must be a JSON object with "schema_version" and "entries"'),
        (_doc(_entry(status="flakey")), "reg.json: entries[0] (sin static): unknown status 'flakey'; valid: xfail, skip, flaky"),
        (
            _doc(_entry(stage="forwrd")),
            "reg.json: entries[0] (sin static): unknown stage 'forwrd'; valid: eager, trace, forward, backward, metadata, mutation, randomized, sequence, crash, timeout",
        ),
        (
            _doc(_entry(mode="fast")),
            "reg.json: entries[0] (sin fast): unknown mode 'fast'; valid: static, dynamic, static-nofunc, dynamic-nofunc",
        ),
        (_doc(_entry(reason=None)), "reg.json: entries[0] (sin static): missing field 'reason'"),
        (_doc(_entry(reason=" ")), "reg.json: entries[0] (sin static): reason must not be empty"),
        (_doc(_entry(samples=None)), "reg.json: entries[0] (sin static): an xfail entry must list its samples"),
        (_doc(_entry(samples=[2, 0])), "reg.json: entries[0] (sin static): samples must be sorted and unique, got [2, 0]"),
        (
            _doc(_entry(samples="0-2, 2")),
            "reg.json: entries[0] (sin static): samples '0-2, 2': '2' comes after 2: indices must ascend without repeats",
        ),
        (_doc(_entry(samples="3-1")), "reg.json: entries[0] (sin static): samples '3-1': the range '3-1' runs backwards"),
        (
            _doc(_entry(samples="0, x")),
            "reg.json: entries[0] (sin static): samples '0, x': 'x' is not an index or a range such as 3-7",
        ),
        (
            _doc(_entry(samples=3)),
            "reg.json: entries[0] (sin static): field 'samples' must be a list or a string of ranges, got 3",
        ),
        (
            _doc(_entry(samples=[-1])),
            "reg.json: entries[0] (sin static): samples must be a non-empty list of sample indices (integers >= 0), got [-1]",
        ),
        (
            _doc(_entry(torch="2.13 or so")),
            "reg.json: entries[0] (sin static): torch '2.13 or so' is not a version range such as '>=2.13,<2.14'",
        ),
        (_doc(_entry(colour="red")), "reg.json: entries[0] (sin static): unknown field 'colour'; fields: *"),
        (_doc(_entry(), _entry(samples=[5])), "reg.json: entries[1] (sin static float32 cpu trace): duplicate of entries[0]"),
        (
            _doc(_entry(), _entry(stage="forward", samples=[2])),
            "reg.json: entries[1] (sin static float32 cpu forward): sample 2 is also listed by entries[0]",
        ),
        ('{"schema_version": 1, "schema_version": 1, "entries": []}', "reg.json: duplicate JSON key 'schema_version'"),
        (
            '{"schema_version": 4, "entries": [], "torch_versions": ["2.13.0"]}',
            """reg.json: "torch_versions" must be a list of release series such as "2.13", got ['2.13.0']""",
        ),
        (
            '{"schema_version": 4, "entries": [], "torch_versions": ["2.15", "2.13"]}',
            """reg.json: "torch_versions" must ascend without repeats, got ['2.15', '2.13']""",
        ),
        (
            _doc(_entry(), _entry(stage="forward", samples=[2], torch=">=2.15"), version=4)[:-1]
            + ', "torch_versions": ["2.13", "2.15"]}',
            "reg.json: entries[1] (sin static float32 cpu forward): sample 2 is also listed by entries[0] for torch 2.15",
        ),
        (
            _doc(_entry(torch=">=2.13.1,<2.14")),
            "reg.json: entries[0] (sin static): torch '>=2.13.1,<2.14' names a finer version than a release series; "
            "use bounds such as '>=2.13,<2.15' or '==2.13.*'",
        ),
        (
            _doc(_entry(torch="<=2.13")),
            "reg.json: entries[0] (sin static): torch '<=2.13' names a finer version than a release series; "
            "use bounds such as '>=2.13,<2.15' or '==2.13.*'",
        ),
    ],
)
def test_a_malformed_registry_is_one_clear_line(text: str, error: str) -> None:
    with pytest.raises(RegistryError) as info:
        parse(text, "reg.json")
    message = str(info.value)
    assert "\n" not in message
    assert message == error or (error.endswith("*") and message.startswith(error[:-1])), message


def test_load_of_a_missing_file_is_an_empty_registry(tmp_path: Path) -> None:
    assert load(tmp_path / "none.json") == []


def _record(
    op: str = "sin", mode: str = "static", sample: int = 0, stage: Stage | None = None, message: str = ""
) -> SampleResult:
    key = SampleKey(op, "", Mode(mode), "float32", "cpu", sample)
    return SampleResult(key, "op_db", Outcome.FAILED if stage else Outcome.PASSED, stage, message)


def test_verdicts() -> None:
    reg = Registry(parse(_doc(_entry()), "r"), TORCH)
    assert reg.judge(_record(sample=0, stage=Stage.TRACE))[0] is Verdict.XFAILED
    assert reg.judge(_record(sample=0, stage=Stage.FORWARD))[0] is Verdict.STAGE_CHANGED
    assert reg.judge(_record(sample=0))[0] is Verdict.UNEXPECTED_PASS
    assert reg.judge(_record(sample=1, stage=Stage.TRACE))[0] is Verdict.UNEXPECTED_FAILURE
    assert reg.judge(_record(sample=1))[0] is Verdict.PASSED


def test_a_sample_a_skip_entry_covers_is_skipped_whatever_an_older_record_says() -> None:
    """The sweep does not run it; a record from before the entry (``optests judge`` of an older
    file, a resumed journal) is judged as the sweep would judge the sample now, and so is a
    sample derived from it."""
    reg = Registry(parse(_doc(_entry(status="skip", stage="crash", samples=[0], reason="aborts")), "r"), TORCH)
    derived = SampleResult(
        SampleKey("sin", "", Mode("static"), "float32", "cpu", 0, transform="transposed-0"),
        "op_db",
        Outcome.FAILED,
        Stage.FORWARD,
    )
    for record in (_record(sample=0, stage=Stage.FORWARD), _record(sample=0), derived):
        assert reg.judge(record)[0] is Verdict.SKIPPED
    assert reg.judge(_record(sample=1, stage=Stage.FORWARD))[0] is Verdict.UNEXPECTED_FAILURE


def test_entries_for_other_torch_versions_do_not_apply() -> None:
    reg = Registry(parse(_doc(_entry(torch=">=2.14")), "r"), TORCH)
    assert reg.judge(_record(sample=0, stage=Stage.TRACE))[0] is Verdict.UNEXPECTED_FAILURE
    assert Registry(parse(_doc(_entry(torch="==2.13.*")), "r"), TORCH).lookup(Scope("sin", "", "static", "float32", "cpu"), 0)


def test_accept_keeps_reasons_and_links_drops_passes_and_leaves_other_scopes_alone() -> None:
    old = parse(
        _doc(
            _entry(samples=[0, 2], issue="https://github.com/pytorch/pytorch/issues/1", reason="known"),
            _entry(op="cos", samples=[1], reason="cos is not run this time"),
            _entry(op="tan", status="skip", stage="timeout", samples=None, reason="hangs"),
        ),
        "r",
    )
    records = [
        _record(sample=0, stage=Stage.TRACE, message="x=1, but expected 2 [sin static float32 cpu sample 0]"),
        _record(sample=2),
        _record(sample=3, stage=Stage.METADATA, message="out.dtype=float64, but expected float32 [ctx]"),
    ]
    new = accept(old, records, TORCH)
    by_op = {(e.op, e.stage): e for e in new}
    assert by_op[("sin", Stage.TRACE)].samples == (0,)
    assert by_op[("sin", Stage.TRACE)].issue == "https://github.com/pytorch/pytorch/issues/1"
    assert by_op[("sin", Stage.TRACE)].reason == "known"
    assert by_op[("sin", Stage.METADATA)].reason == "out.dtype=float64, but expected float32"
    assert by_op[("cos", Stage.TRACE)] == old[1]
    assert by_op[("tan", Stage.TIMEOUT)] == old[2]
    assert len(new) == 4


def test_accept_keeps_expectations_of_samples_that_did_not_run() -> None:
    old = parse(_doc(_entry(samples=[0, 5])), "r")
    new = accept(old, [_record(sample=0)], TORCH)
    assert [e.samples for e in new] == [(5,)]


def test_dump_is_sorted_indented_and_ends_with_a_newline(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    entries = parse(_doc(_entry(op="zeta"), _entry(op="alpha")), "r")
    dump(path, entries)
    text = path.read_text()
    assert text.endswith("}\n") and text.startswith('{\n  "entries": [\n')
    assert [e.op for e in load(path)] == ["alpha", "zeta"]
    dump(path, load(path))
    assert path.read_text() == text


def test_a_derived_sample_that_fails_as_its_sample_is_expected_to_needs_no_entry() -> None:
    def derived(stage: Stage | None, transform: str = "transposed-0") -> SampleResult:
        key = SampleKey("sin", "", Mode.STATIC, "float32", "cpu", 0, transform=transform)
        return SampleResult(key, "op_db", Outcome.FAILED if stage else Outcome.PASSED, stage, "x=1, but expected 2 [c]")

    entries = parse(_doc(_entry()), "r")  # sin static samples 0 and 2 fail at trace
    reg = Registry(entries, TORCH)
    assert reg.judge(derived(Stage.TRACE)) == (Verdict.XFAILED, entries[0])
    assert reg.judge(derived(None))[0] is Verdict.PASSED
    assert reg.judge(derived(Stage.FORWARD))[0] is Verdict.UNEXPECTED_FAILURE
    after = accept(
        entries, [_record(sample=0, stage=Stage.TRACE), derived(Stage.TRACE), derived(Stage.FORWARD, "dtypes-1")], TORCH
    )
    assert [(e.transform, e.stage, e.samples) for e in after] == [
        ("", Stage.TRACE, (0, 2)),
        ("dtypes-1", Stage.FORWARD, (0,)),
    ]


def test_a_derived_sample_that_now_fails_as_its_sample_does_loses_its_own_entry() -> None:
    """Its own entry expected forward; it now fails at trace, as its sample's entry expects:
    judged against its own entry that is a stage change, and accept drops that entry, so the
    next run is green."""
    key = SampleKey("sin", "", Mode.STATIC, "float32", "cpu", 0, transform="transposed-0")
    derived = SampleResult(key, "op_db", Outcome.FAILED, Stage.TRACE, "x=1 [c]")
    own = Entry("sin", "", "static", "float32", "cpu", Status.XFAIL, Stage.FORWARD, "own", (0,), transform="transposed-0")
    entries = [*parse(_doc(_entry()), "r"), own]  # sin static samples 0 and 2 fail at trace
    assert Registry(entries, TORCH).judge(derived)[0] is Verdict.STAGE_CHANGED
    after = accept(entries, [_record(sample=0, stage=Stage.TRACE), derived], TORCH)
    assert [(e.transform, e.samples) for e in after] == [("", (0, 2))]
    assert Registry(after, TORCH).judge(derived)[0] is Verdict.XFAILED


def test_a_derived_sample_inherited_on_one_release_keeps_its_own_entry_for_the_other() -> None:
    """On 2.15 it fails as its sample's entry expects; on 2.13 its own entry (forward) still holds."""
    key = SampleKey("sin", "", Mode.STATIC, "float32", "cpu", 0, transform="transposed-0")
    derived = SampleResult(key, "op_db", Outcome.FAILED, Stage.TRACE, "x=1 [c]")
    own = Entry("sin", "", "static", "float32", "cpu", Status.XFAIL, Stage.FORWARD, "own", (0,), transform="transposed-0")
    entries = [*parse(_doc(_entry()), "r"), own]
    after = accept(entries, [_record(sample=0, stage=Stage.TRACE), derived], T15, ["2.13"])
    assert [(e.transform, e.samples, e.torch) for e in after] == [("", (0, 2), ""), ("transposed-0", (0,), "<2.15")]


def test_samples_are_written_as_ranges_one_line_an_entry(tmp_path: Path) -> None:
    """A 324-sample entry is one line, and a file of version 1 (lists) loads to the same entries."""
    path = tmp_path / "r.json"
    old = _doc(_entry(samples=list(range(324))), _entry(op="cos", samples=[0, 1, 2, 5, 7, 8]), version=1)
    dump(path, parse(old, "old"))
    text = path.read_text()
    assert '"schema_version": 4' in text
    assert '"samples": "0-323"' in text and '"samples": "0-2, 5, 7-8"' in text
    assert len(text.splitlines()) == 2 * 11 + 5  # each entry: its braces and nine fields
    assert set(load(path)) == set(parse(old, "old"))


@given(st.sets(st.integers(0, 60), min_size=1))
def test_ranges_round_trip(samples: set[int]) -> None:
    text = ranges(samples)
    assert parse_ranges(text) == tuple(sorted(samples))
    assert ranges(parse_ranges(text)) == text


def test_reason_from_drops_the_context() -> None:
    assert (
        reason_from("out.shape=[3], but expected [4] [nn.functional.pad static float32 cpu sample 3]\nmore")
        == "out.shape=[3], but expected [4]"
    )


def test_merge_rejects_conflicting_records() -> None:
    with pytest.raises(ResultsError, match="recorded twice with different results"):
        merge([[_record(sample=0)], [_record(sample=0, stage=Stage.TRACE)]])


# -- properties -----------------------------------------------------------------------------------

_stages = st.sampled_from([None, Stage.TRACE, Stage.FORWARD, Stage.METADATA])
_records = st.lists(
    st.builds(
        _record,
        op=st.sampled_from(["sin", "cos", "nn.functional.pad"]),
        mode=st.sampled_from(["static", "dynamic"]),
        sample=st.integers(0, 6),
        stage=_stages,
        message=st.sampled_from(["", "a=1, but expected 2 [x]"]),
    ),
    max_size=40,
    unique_by=lambda r: r.id,
)


@settings(max_examples=150, deadline=None)
@given(records=_records, data=st.data())
def test_merging_shards_is_independent_of_order_and_grouping(records: list[SampleResult], data: st.DataObject) -> None:
    shuffled = data.draw(st.permutations(records))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(records)), max_size=4)))
    shards = [shuffled[a:b] for a, b in zip([0, *cuts], [*cuts, len(shuffled)], strict=True)]
    overlap = data.draw(st.lists(st.sampled_from(records), max_size=5)) if records else []
    assert merge([*shards, overlap]) == merge([records])
    old = parse(_doc(_entry(samples=[0, 5]), _entry(op="cos", mode="dynamic", stage="forward", samples=[1])), "r")
    assert accept(old, merge(shards).values(), TORCH) == accept(old, records, TORCH)


@settings(max_examples=150, deadline=None)
@given(records=_records)
def test_a_registry_accepted_from_results_judges_them_all_as_expected(records: list[SampleResult]) -> None:
    entries = accept([], records, TORCH)
    reg = Registry(entries, TORCH)
    assert all(reg.judge(r)[0].ok for r in records)
    assert accept(entries, records, TORCH) == entries  # and accepting again changes nothing


# -- optests judge --------------------------------------------------------------------------------


def _judge(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from optests import cli

    code = cli.main(["judge", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_judge_counts_each_files_verdicts_and_lists_what_the_registry_does_not_expect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each file under its own torch release: an entry narrowed to another release does not
    apply; the unexpected samples are shown one block per cause (the count, what it spans, one
    sample with its message's first line), ten causes a file unless ``--all`` (every cause, every
    sample); exit 1 while any is there."""
    from optests._results import write

    reg, night, later = tmp_path / "reg.json", tmp_path / "night.json", tmp_path / "2.15.json"
    reg.write_text(_doc(_entry(samples=[0, 1, 2]), _entry(op="cos", samples=[0], torch="<2.15")))
    write(
        night,
        [
            _record(sample=0, stage=Stage.TRACE),  # xfailed
            _record(sample=1, stage=Stage.FORWARD, message="out=1, but expected 2 [sin]\ndetail"),  # stage_changed
            _record(sample=2),  # unexpected_pass
            _record(op="cos", sample=0, stage=Stage.TRACE),  # xfailed by the <2.15 entry
            *(_record(op="tan", sample=i, stage=Stage.TRACE, message=f"t{i}") for i in range(10)),
        ],
        {"torch": TORCH},
    )
    write(later, [_record(op="cos", sample=0, stage=Stage.TRACE, message="c")], {"torch": "2.15.0"})
    code, out, err = _judge(capsys, str(night), str(later), "--registry", str(reg))
    assert (code, err) == (1, "")
    spans = "     ops {}; modes static; dtypes float32; transforms call; backends aot_eager\n"
    assert out == (
        f"{night}: 14 samples, torch 2.13.0+cpu: xfailed 2, unexpected_failure 10, stage_changed 1, unexpected_pass 1\n"
        "  1. 10 samples: trace/call/aot_eager: tN\n" + spans.format("tan") + "     static-float32-cpu-tan-sample0 [trace] t0\n"
        "     ... 9 more (--all lists them)\n"
        "  2. 1 sample: failed at another stage than expected: forward/call/aot_eager: out=N, but expected N [<op>] detail\n"
        + spans.format("sin")
        + "     static-float32-cpu-sin-sample1 [forward] out=1, but expected 2 [sin]\n"
        "  3. 1 sample: passed, but expected to fail\n" + spans.format("sin") + "     static-float32-cpu-sin-sample2\n"
        f"{later}: 1 samples, torch 2.15.0: unexpected_failure 1\n"
        "  1. 1 sample: trace/call/aot_eager: c\n" + spans.format("cos") + "     static-float32-cpu-cos-sample0 [trace] c\n"
        f"2 file(s), 15 samples: 13 not as {reg} expects\n"
    )
    code, out, _ = _judge(capsys, str(night), "--registry", str(reg), "--all")
    assert code == 1 and "more" not in out and out.count("\n     static-float32-cpu-") == 12
    # more causes than a file shows: the rest counted
    write(
        night,
        [_record(op=f"op{i:02}", sample=0, stage=Stage.TRACE, message=f"cause {'x' * i}") for i in range(12)],
        {"torch": TORCH},
    )
    code, out, _ = _judge(capsys, str(night), "--registry", str(reg))
    assert out.count("\n  ") == 10 * 3 + 1 and "  ... 2 more causes, 2 samples (--all lists them)\n" in out
    code, out, err = _judge(capsys, str(night), "--registry", str(tmp_path / "none.json"))
    assert (code, out, err) == (2, "", f"optests judge: error: {tmp_path / 'none.json'}: no registry there\n")


@pytest.mark.parametrize("env", [{}, {"torch": ""}, {"torch": "nightly"}, {"torch": "2.x"}], ids=repr)
def test_judge_and_accept_refuse_a_results_file_without_a_torch_version_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], env: dict[str, str]
) -> None:
    """A torch-ranged entry applies or not by the run's torch version: a file that records none,
    or one that is not a version, is refused by judge as by accept (exit 2, one line naming it),
    rather than judged under every entry of every range."""
    from optests import cli
    from optests._results import write

    reg, results = tmp_path / "reg.json", tmp_path / "r.json"
    reg.write_text(_doc(_entry(samples=[0], torch="<2.15"), _entry(samples=[0], torch=">=2.15", stage="forward")))
    write(results, [_record(sample=0)], env)
    said = f"{results}: torch version {env.get('torch', '')!r} is not a version such as 2.13.0\n"
    assert _judge(capsys, str(results), "--registry", str(reg)) == (2, "", f"optests judge: error: {said}")
    assert cli.main(["accept", str(results), "--registry", str(reg)]) == 2
    assert capsys.readouterr() == ("", f"optests accept: error: {said}")


def test_judge_shows_a_files_control_characters_as_escapes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Ids and messages come from the results file, the paths from the user: judge prints each
    control character (ESC, BEL, a bidirectional override, a line separator) as an escape, as
    diff and history do, so that a file cannot drive the terminal; an error line too."""
    from optests import cli
    from optests._results import write

    reg, results = tmp_path / "reg\x1b[2J.json", tmp_path / "r\u202e.json"
    reg.write_text(_doc())
    write(
        results, [_record(op="si\x1b]0;owned\x07n", stage=Stage.FORWARD, message="boom\x1b[31m\u202ered\nmore")], {"torch": TORCH}
    )
    code, out, err = _judge(capsys, str(results), "--registry", str(reg))
    assert (code, err) == (1, "")
    assert out == (
        f"{tmp_path}/r\\u202e.json: 1 samples, torch 2.13.0+cpu: unexpected_failure 1\n"
        "  1. 1 sample: forward/call/aot_eager: boom\\x1b[Nm\\u202ered more\n"
        "     ops si\\x1b]0;owned\\x07n; modes static; dtypes float32; transforms call; backends aot_eager\n"
        "     static-float32-cpu-si\\x1b]0;owned\\x07n-sample0 [forward] boom\\x1b[31m\\u202ered\n"
        f"1 file(s), 1 samples: 1 not as {tmp_path}/reg\\x1b[2J.json expects\n"
    )
    assert cli.main(["judge", str(tmp_path / "no\x07such.json"), "--registry", str(reg)]) == 2
    assert capsys.readouterr() == ("", f"optests judge: error: {tmp_path}/no\\x07such.json: no such file\n")


@settings(max_examples=60, deadline=None)
@given(records=_records)
def test_judge_finds_nothing_unexpected_in_the_results_a_registry_was_accepted_from(
    records: list[SampleResult], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``optests accept FILE`` then ``optests judge FILE``: exit 0 and nothing listed, as the
    sweep would judge; a failure the registry has not seen is then listed, exit 1."""
    import contextlib
    import io

    from optests import cli
    from optests._results import write

    folder = tmp_path_factory.mktemp("judge")
    results, reg = folder / "r.json", folder / "reg.json"
    write(results, records, {"torch": TORCH})
    reg.write_text(_doc())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["accept", str(results), "--registry", str(reg)]) == 0
        assert cli.main(["judge", str(results), "--registry", str(reg)]) == 0
    assert out.getvalue().endswith(f"1 file(s), {len(records)} samples: 0 not as {reg} expects\n")
    write(results, [*records, _record(op="never_seen", stage=Stage.FORWARD)], {"torch": TORCH})
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["judge", str(results), "--registry", str(reg)]) == 1


# -- torch releases side by side -------------------------------------------------------------------

T13, T15 = "2.13.0+cpu", "2.15.0+cu130"


def _ranges(entries: list[Entry]) -> list[tuple[int | None, str, str]]:
    """(sample, stage, torch range) of each sample of each entry."""
    return sorted((s, e.stage.value, e.torch) for e in entries for s in e.samples or (None,))


def test_an_accept_on_a_new_release_narrows_widens_and_adds_only_what_it_saw() -> None:
    on_13 = [_record(sample=0, stage=Stage.TRACE), _record(sample=1, stage=Stage.TRACE), _record(sample=2)]
    on_15 = [_record(sample=0), _record(sample=1, stage=Stage.TRACE), _record(sample=2, stage=Stage.METADATA)]
    after_13 = accept([], on_13, T13)
    assert _ranges(after_13) == [(0, "trace", ""), (1, "trace", "")]
    after_15 = accept(after_13, on_15, T15, ["2.13"])
    assert _ranges(after_15) == [
        (0, "trace", "<2.15"),  # fixed in 2.15: kept for 2.13, narrowed
        (1, "trace", ""),  # fails on both: one entry, every release
        (2, "metadata", ">=2.15"),  # new in 2.15: for 2.15 alone
    ]
    assert [(e.samples, e.torch) for e in after_15 if e.stage is Stage.TRACE] == [((1,), ""), ((0,), "<2.15")]
    for version, records in ((T13, on_13), (T15, on_15)):  # each release's run is still green
        reg = Registry(after_15, version)
        assert all(reg.judge(r)[0].ok for r in records)
        assert accept(after_15, records, version, ["2.13", "2.15"]) == after_15


def test_a_sample_not_run_on_the_new_release_keeps_its_expectation_there() -> None:
    after_13 = accept([], [_record(sample=0, stage=Stage.TRACE), _record(sample=1, stage=Stage.TRACE)], T13)
    after_15 = accept(after_13, [_record(sample=0)], T15, ["2.13"])
    assert _ranges(after_15) == [(0, "trace", "<2.15"), (1, "trace", "")]


def test_a_hand_written_range_stays_while_it_holds_and_reasons_come_from_the_lowest_release() -> None:
    old = parse(_doc(_entry(samples=[0, 2], torch="<2.14", reason="fixed in 2.14", issue="https://x/1")), "r")
    after_13 = accept(old, [_record(sample=0, stage=Stage.TRACE), _record(sample=2, stage=Stage.TRACE)], T13)
    assert after_13 == old
    after_15 = accept(
        after_13, [_record(sample=0, stage=Stage.TRACE, message="back in 2.15 [c]"), _record(sample=2)], T15, ["2.13"]
    )
    assert [(e.samples, e.torch, e.reason, e.issue) for e in after_15] == [
        ((0,), "", "fixed in 2.14", "https://x/1"),
        ((2,), "<2.14", "fixed in 2.14", "https://x/1"),
    ]


def test_an_entry_stale_on_a_new_release_is_narrowed_to_the_others(tmp_path: Path) -> None:
    """Sample 7 exists on 2.13 only (the OpInfo gives fewer samples on 2.15), and 2.15 does not
    run tan at all: what 2.13 still needs stays, for 2.13."""
    path = tmp_path / "r.json"
    accept_into(path, [_record(sample=0, stage=Stage.TRACE), _record(sample=7, stage=Stage.TRACE)], T13)
    skip = Entry("tan", "", "static", "float32", "cpu", Status.SKIP, Stage.TIMEOUT, "hangs")
    dump(path, [*load(path), skip], ["2.13"])
    entries, _ = accept_into(
        path,
        [_record(sample=0, stage=Stage.TRACE)],
        T15,
        lambda entries: [e for e in entries if e.op == "tan" or e.samples == (0, 7)],
    )
    assert [(e.op, e.samples, e.torch) for e in load(path)] == [("sin", (0,), ""), ("sin", (7,), "<2.15"), ("tan", None, "<2.15")]
    entries = load(path)  # and stale on 2.13 too, the one release it held for: gone
    assert [e.samples for e in accept(entries, [], T13, ["2.13", "2.15"], stale=[entries[1]])] == [(0,), None]


def test_a_stale_entry_narrowed_to_the_other_releases_joins_the_entry_of_that_range() -> None:
    """sin is not run on 2.15: its entry for every release holds for 2.13 alone now, as the
    one beside it already did; they become one entry, not two with the same key."""
    entries = [
        Entry("sin", "", "static", "float32", "cpu", Status.XFAIL, Stage.TRACE, "old", (0,), torch="<2.15"),
        Entry("sin", "", "static", "float32", "cpu", Status.XFAIL, Stage.TRACE, "both", (9,)),
    ]
    after = accept(entries, [], T15, ["2.13", "2.15"], stale=[entries[1]])
    assert [(e.samples, e.torch) for e in after] == [((0, 9), "<2.15")]


def test_entries_that_merge_keep_the_reason_written_for_their_range() -> None:
    entries = [
        Entry("sin", "", "static", "float32", "cpu", Status.XFAIL, Stage.TRACE, "A", (0,), "https://a", "<2.15"),
        Entry("sin", "", "static", "float32", "cpu", Status.XFAIL, Stage.TRACE, "B", (1,), "https://b"),
    ]
    after = accept(entries, [_record(sample=0, stage=Stage.TRACE), _record(sample=1, stage=Stage.TRACE)], T15, ["2.13", "2.15"])
    assert [(e.samples, e.torch, e.reason, e.issue) for e in after] == [((0, 1), "", "B", "https://b")]


def test_a_new_sample_failing_as_its_scope_does_on_another_release_takes_that_entrys_reason() -> None:
    """2.15's OpInfo gives sin a sample 2 that 2.13 never had: it fails at the stage the known
    entry expects, so its entry (for 2.15 alone) says what that one says; a failure at another
    stage is another cause and keeps its own message."""
    old = [Entry("sin", "", "static", "float32", "cpu", Status.XFAIL, Stage.TRACE, "tracing limit: X", (0, 1), "https://x/1")]
    run = [
        _record(sample=0, stage=Stage.TRACE, message="raw [c]"),
        _record(sample=1, stage=Stage.TRACE, message="raw [c]"),
        _record(sample=2, stage=Stage.TRACE, message="raw [c]"),
        _record(sample=3, stage=Stage.FORWARD, message="other [c]"),
    ]
    after = accept(old, run, T15, ["2.13"])
    assert sorted((e.samples, e.stage.value, e.torch, e.reason, e.issue) for e in after) == [
        ((0, 1), "trace", "", "tracing limit: X", "https://x/1"),
        ((2,), "trace", ">=2.15", "tracing limit: X", "https://x/1"),
        ((3,), "forward", ">=2.15", "other", ""),
    ]


def test_a_new_entry_does_not_take_the_reason_of_an_entry_fixed_on_its_release() -> None:
    """Sample 4's entry holds below 2.15 alone (fixed there): a new 2.15 failure at that stage is
    not what it describes, and keeps its own message."""
    old = [Entry("sin", "", "static", "float32", "cpu", Status.XFAIL, Stage.TRACE, "fixed in 2.15", (4,), "https://x/1", "<2.15")]
    after = accept(old, [_record(sample=4), _record(sample=5, stage=Stage.TRACE, message="new [c]")], T15, ["2.13"])
    assert sorted((e.samples, e.torch, e.reason, e.issue) for e in after) == [
        ((4,), "<2.15", "fixed in 2.15", "https://x/1"),
        ((5,), ">=2.15", "new", ""),
    ]


def test_accept_into_records_the_release_series(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    accept_into(path, [_record(sample=0, stage=Stage.TRACE)], T15)
    accept_into(path, [_record(sample=0)], T13)
    assert json.loads(path.read_text())["torch_versions"] == ["2.13", "2.15"]
    assert _ranges(load(path)) == [(0, "trace", ">=2.15")]


def test_accept_rejects_a_torch_version_that_is_not_one(tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match=r"^torch version 'nightly' is not a version such as 2\.13\.0$"):
        accept_into(tmp_path / "r.json", [_record(sample=0)], "nightly")


_release_records = st.lists(
    st.tuples(st.sampled_from(["sin", "cos"]), st.integers(0, 5), _stages, _stages),
    max_size=20,
    unique_by=lambda t: (t[0], t[1]),
)


def _accept_both(
    rows: list[tuple[str, int, Stage | None, Stage | None]],
    earlier: set[int],
    message: Callable[[Stage | None, str], str],
    directory: Callable[[], Path],
) -> list[bytes]:
    """The registry after 2.13's and 2.15's runs (``rows``: op, sample, stage on each) are
    accepted in both orders, into a registry where ``earlier`` samples fail on 2.13; and check
    that each release's run is then green against it."""
    runs = {
        T13: [_record(op, sample=s, stage=a, message=message(a, T13)) for op, s, a, _ in rows],
        T15: [_record(op, sample=s, stage=b, message=message(b, T15)) for op, s, _, b in rows],
    }
    files = []
    for order in ((T13, T15), (T15, T13)):
        path = directory() / "r.json"
        if earlier:
            accept_into(path, [_record(sample=s, stage=Stage.FORWARD, message=message(Stage.FORWARD, T13)) for s in earlier], T13)
        for version in order:
            accept_into(path, runs[version], version)
        files.append(path.read_bytes())
        entries = load(path)
        for version, records in runs.items():
            assert all(Registry(entries, version).judge(r)[0].ok for r in records)
    return files


@settings(max_examples=200, deadline=None)
@given(rows=_release_records, earlier=st.sets(st.integers(0, 5), max_size=3))
def test_accepting_two_releases_gives_one_file_in_either_order(
    rows: list[tuple[str, int, Stage | None, Stage | None]], earlier: set[int], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Whatever fails where, accepting 2.13 then 2.15 writes the same bytes as 2.15 then 2.13,
    into no registry or one that an earlier 2.13 run was accepted into."""
    first, second = _accept_both(rows, earlier, lambda stage, _: f"fails at {stage} [x]", lambda: tmp_path_factory.mktemp("r"))
    assert first == second


@settings(max_examples=100, deadline=None)
@given(rows=_release_records, earlier=st.sets(st.integers(0, 5), max_size=3))
def test_where_releases_word_a_failure_differently_only_the_reasons_depend_on_the_order(
    rows: list[tuple[str, int, Stage | None, Stage | None]], earlier: set[int], tmp_path_factory: pytest.TempPathFactory
) -> None:
    files = _accept_both(rows, earlier, lambda stage, version: f"{stage} on {version} [x]", lambda: tmp_path_factory.mktemp("r"))
    first, second = (re.sub(rb'"reason": "[^"]*"', b"", f) for f in files)
    assert first == second


def test_entry_to_json_round_trips() -> None:
    e = Entry("sin", "", "static", "float32", "cpu", Status.SKIP, Stage.TIMEOUT, "hangs", None, "https://x", ">=2.13")
    assert parse(_doc(e.to_json()), "r") == [e]


def test_a_skip_entry_and_an_xfail_entry_may_share_a_scope_and_stage(tmp_path: Path) -> None:
    """Sample 3 hangs and is skipped; sample 0 now times out in the run: accept writes an xfail
    entry beside the skip entry, and the file it wrote loads."""
    path = tmp_path / "r.json"
    skip = Entry("sin", "", "static", "float32", "cpu", Status.SKIP, Stage.TIMEOUT, "hangs", (3,))
    dump(path, [skip])
    accept_into(path, [_record(sample=0, stage=Stage.TIMEOUT, message="timed out [c]")], TORCH)
    assert [(e.status, e.samples) for e in load(path)] == [(Status.SKIP, (3,)), (Status.XFAIL, (0,))]


def test_accept_keeps_the_expectation_of_a_skipped_sample() -> None:
    """A skipped sample was not run (the OpInfo's own skips differ between torch releases, and
    an entry may serve several): accept leaves it listed."""
    entries = [Entry("sin", "", "static", "float32", "cpu", Status.XFAIL, Stage.TRACE, "because", (0, 2))]
    skipped = dataclasses.replace(_record(sample=0), outcome=Outcome.SKIPPED)
    records = [skipped, _record(sample=2, stage=Stage.TRACE)]
    assert accept(entries, records, TORCH) == entries


def test_accept_ignores_a_sample_that_a_skip_entry_covers() -> None:
    """A results file from before a ``skip`` entry was written ran the sample (here it failed at
    random, as a sample is skipped for): accepting it writes no xfail entry beside the skip."""
    skip = Entry("sin", "", "static", "float32", "cpu", Status.SKIP, Stage.CRASH, "reads past its data", (1,))
    records = [
        _record(sample=1, stage=Stage.FORWARD, message="out=... [c]"),
        _record(sample=2, stage=Stage.TRACE, message="x [c]"),
    ]
    new = accept([skip], records, TORCH)
    assert [(e.status, e.stage, e.samples) for e in new] == [(Status.SKIP, Stage.CRASH, (1,)), (Status.XFAIL, Stage.TRACE, (2,))]
    derived = SampleResult(
        SampleKey("sin", "", Mode("static"), "float32", "cpu", 1, transform="transposed-0"),
        "op_db",
        Outcome.FAILED,
        Stage.FORWARD,
    )
    assert accept([skip], [derived], TORCH) == [skip]  # its sample is skipped, and it with it
    other_release = dataclasses.replace(skip, torch=">=2.15")
    assert [(e.status, e.samples) for e in accept([other_release], records, TORCH)] == [
        (Status.SKIP, (1,)),
        (Status.XFAIL, (1,)),
        (Status.XFAIL, (2,)),
    ]


def test_accept_drops_the_entry_of_a_sample_that_is_now_not_applicable() -> None:
    """A derived sample that failed at trace became a call eager rejects (map's aliased inputs,
    once Dynamo no longer kept a compiled body across checks): there is nothing left to expect."""
    entry = Entry(
        "map", "simple", "static", "float32", "cpu", Status.XFAIL, Stage.TRACE, "rejects aliases", (0,), transform="aliased-1"
    )
    key = SampleKey("map", "simple", Mode("static"), "float32", "cpu", 0, transform="aliased-1")
    record = SampleResult(key, "hop_db", Outcome.NOT_APPLICABLE, message="eager rejects it [c]")
    assert accept([entry], [record], TORCH) == []


def test_a_skip_entry_keeps_its_samples_and_those_derived_from_them_from_running() -> None:
    skip = Entry("sin", "", "static", "float32", "cpu", Status.SKIP, Stage.CRASH, "aborts", (1,))
    xfail = Entry("sin", "", "static", "float32", "cpu", Status.XFAIL, Stage.TRACE, "fails", (2,), transform="transposed-0")
    registry = Registry([xfail, skip], TORCH)
    scope = Scope("sin", "", "static", "float32", "cpu")
    assert registry.skip_entry(scope, 1) == skip
    assert registry.skip_entry(scope._replace(transform="transposed-0"), 1) == skip
    assert registry.skip_entry(scope._replace(transform="transposed-0"), 2) is None  # an xfail entry runs its samples
    assert registry.skip_entry(scope, 2) is None


# -- entries that can never match ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"torch": "<2.0"}, "torch '<2.0' holds only for releases before 2.13, the oldest optests supports"),
        ({"torch": "<2.13"}, "torch '<2.13' holds only for releases before 2.13, the oldest optests supports"),
        ({"torch": "==1.9.*"}, "torch '==1.9.*' holds only for releases before 2.13, the oldest optests supports"),
        ({"torch": ">=2.15,<2.13"}, "torch '>=2.15,<2.13' holds for no torch release"),
        ({"torch": ">=2.14,<2.14"}, "torch '>=2.14,<2.14' holds for no torch release"),
        ({"torch": "==2.13.*,==2.14.*"}, "torch '==2.13.*,==2.14.*' holds for no torch release"),
        ({"torch": ">=2.13,<2.15,!=2.13.*,!=2.14.*"}, "torch '>=2.13,<2.15,!=2.13.*,!=2.14.*' holds for no torch release"),
        ({"backend": "dynamo:"}, "backend 'dynamo:' names no Dynamo backend (dynamo:NAME)"),
        ({"backend": "mymod:"}, "backend 'mymod:' is neither a known backend, dynamo:NAME nor MODULE:ATTRIBUTE"),
        ({"backend": "a..b:c"}, "backend 'a..b:c' is neither a known backend, dynamo:NAME nor MODULE:ATTRIBUTE"),
        ({"backend": "mod:a.b"}, "backend 'mod:a.b' is neither a known backend, dynamo:NAME nor MODULE:ATTRIBUTE"),
        (
            {"backend": "inductor", "mode": "static-nofunc"},
            "backend 'inductor' cannot compile without functionalization, as mode 'static-nofunc' asks",
        ),
        (
            {"backend": "dynamo:eager", "mode": "dynamic-nofunc"},
            "backend 'dynamo:eager' cannot compile without functionalization, as mode 'dynamic-nofunc' asks",
        ),
        (
            {"backend": "mymod:backend", "mode": "static-nofunc"},
            "backend 'mymod:backend' cannot compile without functionalization, as mode 'static-nofunc' asks",
        ),
    ],
)
def test_an_entry_that_can_never_match_is_refused_at_load(fields: dict[str, str], problem: str) -> None:
    """A range that holds for no release optests supports, and a backend that no run can have in
    the entry's mode, are known for sure when the file is read: the malformed-registry error."""
    with pytest.raises(RegistryError) as info:
        parse(_doc(_entry(**fields), version=4), "reg.json")
    mode = fields.get("mode", "static")
    assert str(info.value) == f"reg.json: entries[0] (sin {mode}): {problem}, so the entry can never match"


@pytest.mark.parametrize(
    "fields",
    [
        {"torch": "<2.14"},
        {"torch": ">=2.13"},
        {"torch": "!=2.13.*"},
        {"torch": ">=2.99,<3.0"},
        {"torch": ">=2.13,<3.1,!=2.13.*,!=2.14.*"},
        {"torch": ">=3.0"},
        {"backend": "dynamo:eager"},
        {"backend": "mymod.sub:backend"},
        {"backend": "mine"},  # not built in, but a module may register it: the run judges it
        {"backend": "aot_eager_decomp_partition", "mode": "dynamic-nofunc"},
        {"backend": "inductor", "mode": "dynamic"},
    ],
)
def test_an_entry_that_may_match_loads(fields: dict[str, str]) -> None:
    assert len(parse(_doc(_entry(**fields), version=4), "reg.json")) == 1


def test_the_committed_registry_loads_and_the_oldest_torch_is_the_one_pyproject_requires() -> None:
    root = Path(__file__).resolve().parents[1]
    assert load(root / "expected_failures.json")
    from optests import _registry

    assert f'"torch>={_registry.OLDEST_TORCH}"' in (root / "pyproject.toml").read_text()


_CLAUSE = st.builds(
    lambda op, major, minor: f"{op}{major}.{minor}" + (".*" if op in ("==", "!=") else ""),
    st.sampled_from(["<", ">=", "==", "!="]),
    st.integers(0, 4),
    st.integers(0, 20),
)


@given(clauses=st.lists(_CLAUSE, min_size=1, max_size=5))
def test_a_range_is_refused_exactly_when_no_supported_release_is_in_it(clauses: list[str]) -> None:
    """Against every release series up to 6.30: the range is accepted if and only if one of them
    at or after 2.13 is in it (the ranges drawn name majors up to 4)."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    torch = ",".join(clauses)
    specifier = SpecifierSet(torch, prereleases=True)
    some = any(Version(f"{major}.{minor}") in specifier for major in range(7) for minor in range(31) if (major, minor) >= (2, 13))
    try:
        parse(_doc(_entry(torch=torch), version=4), "reg.json")
    except RegistryError as e:
        assert not some, e
        assert str(e).endswith("so the entry can never match")
    else:
        assert some


def test_an_entry_of_a_backend_no_process_knows_is_stale_whatever_the_run_selected() -> None:
    from optests import _backends

    entries = parse(
        _doc(_entry(backend="inductr"), _entry(backend="inductor"), _entry(backend="mymod:backend"), version=4), "reg.json"
    )
    assert [e.backend for e in stale(entries, {}, lambda e: False, TORCH)] == ["inductr"]
    _backends.register("inductr", _backends.BACKENDS["aot_eager"])
    try:
        assert stale(entries, {}, lambda e: False, TORCH) == []
    finally:
        del _backends.BACKENDS["inductr"]
