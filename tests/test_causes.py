"""A failure's cause (``optests._causes``): one string for one cause across samples, ops, modes,
dtypes and backends' messages, a known PyTorch bug's name where the catalog knows it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from optests._causes import cause, normalized, said, signature, strip_context
from optests._findings import Outcome, Stage
from optests._key import Mode, SampleKey
from optests._known import KNOWN, KnownBug
from optests._results import SampleResult


def key(
    op: str = "sin",
    mode: str = "static",
    dtype: str = "float32",
    sample: int = 0,
    transform: str = "",
    backend: str = "aot_eager",
) -> SampleKey:
    return SampleKey(op, "", Mode(mode), dtype, "cpu", sample, False, transform, backend)


def test_the_context_is_taken_off_with_the_brackets_it_holds() -> None:
    text = "args[0] mutated=no, but expected yes (eager mutates it)"
    assert strip_context(f"{text} [nanmean dynamic float32 cpu sample 0 out-3: out= args[0]]") == text
    assert strip_context("out=1, but expected 2 [sin static float32 cpu sample 0]") == "out=1, but expected 2"


def test_values_numbers_dtypes_and_the_op_name_are_taken_out() -> None:
    assert normalized("grad of args[1] (second order)=None, but expected tensor([[0., 1.],\n [2., 3.]]) [x]") == (
        "grad of args[N] (second order)=None, but expected tensor(...)"
    )
    assert normalized("traced out.stride()=(36, 18, 6, 1), but expected (36, 1, 12, 2)") == (
        "traced out.stride()=(N...), but expected (N...)"
    )
    assert normalized("traced out.dtype=torch.bfloat16, but expected float32") == "traced out.dtype=<dtype>, but expected <dtype>"
    assert normalized("linalg.solve raised at 0x7f3a: aten._unique2.default", ("linalg.solve",)) == (
        "<op> raised at <address>: aten._uniqueN.default"
    )


def test_one_cause_groups_samples_ops_modes_and_dtypes() -> None:
    a = signature(
        key("max_unpool2d", "static", "float32", 3, "transposed-1"),
        Stage.METADATA,
        "traced out.stride()=(8, 1), but expected (1, 2) [a]",
    )
    b = signature(
        key("pad", "dynamic", "float64", 17, "transposed-0"),
        Stage.METADATA,
        "traced out.stride()=(6, 3, 1), but expected (3, 1, 3) [b]",
    )
    assert a == b == "metadata/transposed/aot_eager: traced out.stride()=(N...), but expected (N...)"
    other = {
        signature(key(transform="noncontiguous"), Stage.METADATA, "traced out.stride()=(1,), but expected (2,)"),
        signature(key(backend="inductor"), Stage.METADATA, "traced out.stride()=(1,), but expected (2,)"),
        signature(key(), Stage.FORWARD, "traced out.stride()=(1,), but expected (2,)"),
    }
    assert len(other | {a}) == 4  # the family, the backend and the stage each make another cause


def test_a_record_that_did_not_fail_has_no_cause() -> None:
    assert cause(key(), Outcome.PASSED, None, "") == ""
    assert SampleResult(key(), "op_db", Outcome.NOT_APPLICABLE, message="no samples").cause == ""


def test_a_known_bug_is_the_cause_and_is_said_so() -> None:
    failed = SampleResult(
        key("my::op", transform="backward-3"),
        "",
        Outcome.FAILED,
        Stage.BACKWARD,
        "grad of args[0] (second order)=None, but expected tensor([1.]) [c]",
    )
    assert failed.cause == "aot_double_backward_silently_dropped"
    assert said(failed.cause) == (
        "known PyTorch bug: aot_double_backward_silently_dropped (findings/aot_double_backward_silently_dropped.py, pytorch/pytorch#181606)"
    )
    assert said("forward/call/aot_eager: x") == "forward/call/aot_eager: x"


def test_a_cause_read_from_a_file_is_kept() -> None:
    record = SampleResult(
        key(), "op_db", Outcome.FAILED, Stage.FORWARD, "out=1, but expected 2", cause="written by another optests"
    )
    assert SampleResult.from_json(record.to_json()).cause == "written by another optests"


def test_a_signature_read_from_a_file_becomes_the_known_bug_the_catalog_now_has() -> None:
    """A record written before the catalog had an entry for its bug carries a signature; read
    with this catalog, it is the bug's."""
    message = "compiled call=no error, but expected raised IndexError: index out of range in self (as eager) [index_select]"
    k = key("index_select", transform="special-7", backend="inductor")
    old = signature(k, Stage.FORWARD, message)
    record = SampleResult(k, "op_db", Outcome.FAILED, Stage.FORWARD, message, cause=old)
    assert record.cause == "inductor_negative_index_no_error"
    assert SampleResult.from_json({**record.to_json(), "cause": old}).cause == "inductor_negative_index_no_error"


def test_the_catalog_names_are_unique_and_its_patterns_compile() -> None:
    """One entry a name, but for a fake kernel's stride finding and its twin for sequences, one bug
    in two forms (``_and_in_sequences``): ``by_name`` gives the first."""
    from optests._causes import by_name
    from optests._known import _and_in_sequences

    first: dict[str, KnownBug] = {}
    for bug in KNOWN:
        if first.setdefault(bug.name, bug) is not bug:
            assert bug == _and_in_sequences(first[bug.name])[1], bug.name
        assert by_name(bug.name) is first[bug.name]
    assert all(bug.pattern and bug.stages for bug in KNOWN)


@given(st.integers(-(10**9), 10**9), st.floats(allow_nan=True, allow_infinity=True), st.lists(st.integers(0, 99), max_size=6))
def test_numbers_never_split_a_cause(i: int, x: float, sizes: list[int]) -> None:
    template = "out[{i}]={x}, but expected {s} and {t}"
    one = normalized(template.format(i=i, x=x, s=sizes, t=tuple(sizes)))
    assert one == normalized(template.format(i=0, x=1.5, s=[1, 2], t=(3, 4))) or not sizes
