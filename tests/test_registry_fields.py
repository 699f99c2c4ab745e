"""A registry entry's fields are declared once (``Entry``'s fields, ``optests._registry.FIELDS``):
reading, checking and writing a file, and an entry's scope, derive from them."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from optests._findings import Stage
from optests._key import Scope
from optests._registry import FIELDS, Entry, RegistryError, Status, parse

#: A value of every field, none of them its default.
EVERY_FIELD: dict[str, Any] = {
    "op": "sin", "variant": "v", "mode": "static", "dtype": "float32", "device": "cpu", "status": "xfail",
    "stage": "trace", "reason": "because", "samples": "0-2, 5", "issue": "https://x/1", "torch": ">=2.13",
    "transform": "transposed-0", "backend": "inductor",
}  # fmt: skip


def _parse(raw: dict[str, Any]) -> list[Entry]:
    return parse(json.dumps({"schema_version": 4, "entries": [raw]}), "reg.json")


def _refusal(raw: dict[str, Any]) -> str:
    with pytest.raises(RegistryError) as e:
        _parse(raw)
    return str(e.value)


def test_fields_are_entrys_fields_in_order() -> None:
    assert [f.name for f in FIELDS] == [f.name for f in dataclasses.fields(Entry)] == list(EVERY_FIELD)
    assert [f.name for f in FIELDS if f.required] == ["op", "variant", "mode", "dtype", "device", "status", "stage", "reason"]


def test_a_scope_is_made_of_entry_fields_with_their_defaults() -> None:
    defaults = {f.name: f.default for f in FIELDS if not f.required}
    assert set(Scope._fields) <= {f.name for f in FIELDS}
    assert Scope._field_defaults == {name: defaults[name] for name in Scope._fields if name in defaults}
    (entry,) = _parse(EVERY_FIELD)
    assert entry.scope == Scope("sin", "v", "static", "float32", "cpu", "transposed-0", "inductor")


def test_every_field_is_read_and_written_back() -> None:
    (entry,) = _parse(EVERY_FIELD)
    assert (entry.status, entry.stage, entry.samples) == (Status.XFAIL, Stage.TRACE, (0, 1, 2, 5))
    assert entry.to_json() == EVERY_FIELD
    assert _parse(entry.to_json()) == [entry]


def test_a_field_holding_its_default_is_not_written() -> None:
    required = {f.name: EVERY_FIELD[f.name] for f in FIELDS if f.required} | {"status": "skip"}
    (entry,) = _parse(required)
    assert [getattr(entry, f.name) for f in FIELDS if not f.required] == [f.default for f in FIELDS if not f.required]
    assert entry.to_json() == required


@pytest.mark.parametrize("field", [f for f in FIELDS if f.required], ids=lambda f: f.name)
def test_a_required_field_is_required(field: Any) -> None:
    raw = {k: v for k, v in EVERY_FIELD.items() if k != field.name}
    assert _refusal(raw).endswith(f": missing field {field.name!r}")


@pytest.mark.parametrize("field", FIELDS, ids=lambda f: f.name)
def test_a_field_of_another_type_is_refused_saying_what_it_must_be(field: Any) -> None:
    assert _refusal({**EVERY_FIELD, field.name: 3}).endswith(f": field {field.name!r} must be a {field.kind}, got 3")


@pytest.mark.parametrize("field", [f for f in FIELDS if f.valid], ids=lambda f: f.name)
def test_a_field_takes_only_its_valid_values(field: Any) -> None:
    expected = f": unknown {field.name} 'nope'; valid: {', '.join(field.valid)}"
    assert _refusal({**EVERY_FIELD, field.name: "nope"}).endswith(expected)


@pytest.mark.parametrize("field", [f for f in FIELDS if f.not_empty], ids=lambda f: f.name)
def test_a_field_that_must_not_be_empty(field: Any) -> None:
    assert _refusal({**EVERY_FIELD, field.name: ""}).endswith(f": {field.name} must not be empty")
    if field.not_empty == "blank":
        assert _refusal({**EVERY_FIELD, field.name: "  "}).endswith(f": {field.name} must not be empty")
    else:
        assert _parse({**EVERY_FIELD, field.name: "  "})[0].to_json()[field.name] == "  "


def test_an_unknown_field_is_refused_naming_the_declared_ones() -> None:
    expected = f": unknown field 'colour'; fields: {', '.join(f.name for f in FIELDS)}"
    assert _refusal({**EVERY_FIELD, "colour": "red"}).endswith(expected)
