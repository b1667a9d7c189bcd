"""Schemas from recorded values and their merging (tracetool.openapi.schema)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml

from tracetool.openapi.schema import class_schema, finalize, merge, schema_for


def test_appmap_deep_merge_golden(corpus: Path) -> None:
    data = corpus / "packages" / "openapi" / "test" / "data" / "examples"
    examples = yaml.safe_load((data / "deep-merge.yml").read_text())
    expected = yaml.safe_load((data / "expected" / "deep-merge.yml").read_text())
    schemas = [schema_for(example) for example in examples]
    assert [finalize(s) for s in schemas] == expected["examples"]
    assert finalize(merge(schemas[0], schemas[1])) == expected["mergeResult"]
    assert finalize(merge(schemas[1], schemas[0])) == expected["mergeResult"]


@pytest.mark.parametrize(
    ("cls", "expected"),
    [
        ("String", {"type": "string"}),
        ("builtins.str", {"type": "string"}),
        ("java.lang.String", {"type": "string"}),
        ("java.lang.string", {"type": "string"}),  # appmap-js #321: wrong case seen in the wild
        ("Integer", {"type": "integer"}),
        ("builtins.int", {"type": "integer"}),
        ("java.lang.Long", {"type": "integer"}),
        ("Float", {"type": "number"}),
        ("decimal.Decimal", {"type": "number"}),
        ("Number", {"type": "number"}),
        ("TrueClass", {"type": "boolean"}),
        ("builtins.bool", {"type": "boolean"}),
        ("boolean", {"type": "boolean"}),
        ("Array", {"type": "array", "items": {}}),
        ("builtins.list", {"type": "array", "items": {}}),
        ("java.util.List<java.lang.String>", {"type": "array", "items": {}}),
        ("java.lang.String[]", {"type": "array", "items": {"type": "string"}}),
        ("Hash", {"type": "object"}),
        ("ActiveSupport::HashWithIndifferentAccess", {"type": "object"}),
        ("builtins.dict", {"type": "object"}),
        ("java.util.HashMap", {"type": "object"}),
        ("datetime.datetime", {"type": "string", "format": "date-time"}),
        ("uuid.UUID", {"type": "string", "format": "uuid"}),
        ("ActionDispatch::Http::UploadedFile", {"type": "string", "format": "binary"}),
        ("MyApp::Widget", {"type": "object"}),
    ],
)
def test_class_names_map_to_openapi_types(cls: str, expected: dict[str, object]) -> None:
    assert class_schema(cls) == expected


@pytest.mark.parametrize("cls", ["NilClass", "builtins.NoneType", "null", "undefined"])
def test_null_makes_the_other_side_nullable(cls: str) -> None:
    null = class_schema(cls)
    assert finalize(null) == {}
    assert finalize(merge(null, class_schema("String"))) == {"type": "string", "nullable": True}
    assert finalize(merge(class_schema("String"), null), oas31=True) == {"type": ["string", "null"]}


def test_nested_properties_and_items() -> None:
    value = {
        "class": "Hash",
        "properties": [
            {"name": "id", "class": "Integer"},
            {"name": "tags", "class": "Array", "items": [{"class": "String"}]},
            {"name": "owner", "class": "Hash", "properties": [{"name": "name", "class": "str"}]},
        ],
    }
    assert finalize(schema_for(value)) == {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "owner": {"type": "object", "properties": {"name": {"type": "string"}}},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    }


def test_mixed_types_become_anyof_in_a_fixed_order() -> None:
    a, b, c = class_schema("String"), class_schema("Integer"), class_schema("Hash")
    expected = {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "object"}]}
    for x, y, z in itertools.permutations([a, b, c]):
        assert finalize(merge(merge(x, y), z)) == expected
        assert finalize(merge(x, merge(y, z))) == expected


def test_integer_and_number_make_number() -> None:
    assert merge(class_schema("Integer"), class_schema("Float")) == {"type": "number"}
    assert merge(class_schema("Float"), class_schema("Integer")) == {"type": "number"}


def test_array_items_of_mixed_types() -> None:
    value = {"class": "Array", "items": [{"class": "String"}, {"class": "Integer"}]}
    assert finalize(schema_for(value)) == {
        "type": "array",
        "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
    }


def test_unknown_schema_yields_to_a_known_one() -> None:
    known = {"type": "array", "items": {"type": "string"}}
    assert merge({"type": "array", "items": {}}, known) == known
    assert merge(known, {"type": "array", "items": {}}) == known


def test_deep_nesting_is_capped() -> None:
    value: dict[str, object] = {"class": "String"}
    for _ in range(200):
        value = {"class": "Hash", "properties": [{"name": "x", **value}]}
    schema = schema_for(value)
    depth = 0
    while "properties" in schema:
        schema = schema["properties"]["x"]
        depth += 1
    assert depth < 200 and schema == {"type": "object"}
