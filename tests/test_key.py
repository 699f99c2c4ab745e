"""SampleKey: one identity for a sample, its id parsed back, and the modes."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optests import Mode, SampleKey
from optests._key import DEVICES, DTYPES, TRANSFORMS

_names = st.sampled_from(["sin", "nn.functional.dropout", "linalg.pinv", "mylib::op", "a-b", "x.sample3"])
_keys = st.builds(
    SampleKey,
    op=_names,
    variant=st.sampled_from(["", "hermitian", "number_mean", "sample1"]),
    mode=st.sampled_from(list(Mode)),
    dtype=st.sampled_from(DTYPES),
    device=st.sampled_from(DEVICES),
    sample=st.one_of(st.none(), st.integers(0, 10_000)),
    backend=st.sampled_from(["aot_eager", "inductor", "dynamo:eager", "mylib.backends:mine"]),
).flatmap(
    lambda k: (
        st.sampled_from([k, dataclasses.replace(k, broken=True)])
        if k.sample is None
        else st.builds(
            lambda t, i: dataclasses.replace(k, transform=t if i is None or not t else f"{t}-{i}"),
            st.sampled_from(("", *TRANSFORMS)),
            st.one_of(st.none(), st.integers(0, 12)),
        )
    )
)


@given(_keys)
def test_an_id_parses_back_to_its_key(key: SampleKey) -> None:
    parsed = SampleKey.parse(key.id, {key.op_id: (key.op, key.variant)}.get)
    assert parsed == key
    assert SampleKey.is_id(key.id)


def test_dotted_names_are_never_split() -> None:
    dropout = SampleKey("nn.functional.dropout", "", Mode.STATIC, "float32", "cpu", 3)
    pinv = SampleKey("linalg.pinv", "hermitian", Mode.DYNAMIC, "float32", "cpu", 0)
    assert dropout.id == "static-float32-cpu-nn.functional.dropout-sample3"
    assert pinv.id == "dynamic-float32-cpu-linalg.pinv.hermitian-sample0"
    assert pinv.context == "linalg.pinv.hermitian dynamic float32 cpu sample 0"
    assert tuple(pinv.scope) == ("linalg.pinv", "hermitian", "dynamic", "float32", "cpu", "", "aot_eager")
    split = {"nn.functional.dropout": ("nn.functional.dropout", ""), "linalg.pinv.hermitian": ("linalg.pinv", "hermitian")}
    assert SampleKey.parse(dropout.id, split.get) == dropout
    assert SampleKey.parse(pinv.id, split.get) == pinv
    assert SampleKey.parse(pinv.id, lambda op_id: None) is None  # an op the caller does not know
    assert SampleKey.parse("test_something[3]", split.get) is None


def test_a_backend_other_than_aot_eager_ends_the_id_after_an_at_sign() -> None:
    """aot_eager's ids are as they always were; another backend's name follows ``@`` and parses back."""
    split = {"linalg.pinv.hermitian": ("linalg.pinv", "hermitian")}
    for tail, transform, backend in [
        ("", "", "aot_eager"),
        ("@inductor", "", "inductor"),
        ("-transposed-1@dynamo:eager", "transposed-1", "dynamo:eager"),
    ]:
        key = SampleKey("linalg.pinv", "hermitian", Mode.STATIC, "float32", "cpu", 3, transform=transform, backend=backend)
        assert key.id == "static-float32-cpu-linalg.pinv.hermitian-sample3" + tail
        assert SampleKey.parse(key.id, split.get) == key and key.scope.backend == backend
    broken = SampleKey("linalg.pinv", "hermitian", Mode.STATIC, "float32", "cpu", None, broken=True, backend="inductor")
    assert broken.id == "static-float32-cpu-linalg.pinv.hermitian-samples@inductor"
    assert SampleKey.of_record(broken.id, "linalg.pinv", "hermitian", "static", "float32", "cpu", None, "", "inductor") == broken
    assert SampleKey("sin", "", Mode.STATIC, "float32", "cpu", 0, backend="inductor").context.endswith("sample 0 @inductor")


def test_a_derived_sample_is_named_by_its_transform() -> None:
    key = SampleKey("linalg.pinv", "hermitian", Mode.STATIC, "float32", "cpu", 3, transform="duplicated-1")
    assert key.id == "static-float32-cpu-linalg.pinv.hermitian-sample3-duplicated-1"
    assert key.context == "linalg.pinv.hermitian static float32 cpu sample 3 duplicated-1"
    assert key.scope.transform == "duplicated-1"
    with pytest.raises(ValueError, match="expected a transform's name"):
        SampleKey("sin", "", Mode.STATIC, "float32", "cpu", 3, transform="upside-down")


def test_modes_know_what_they_compile() -> None:
    assert [(m.value, m.dynamic, m.functionalized) for m in Mode] == [
        ("static", False, True),
        ("dynamic", True, True),
        ("static-nofunc", False, False),
        ("dynamic-nofunc", True, False),
    ]
    assert SampleKey("sin", "", "dynamic-nofunc", "float32", "cpu", 0).mode is Mode.DYNAMIC_NOFUNC  # type: ignore[arg-type]
