"""OpenAPI schemas from recorded values, and merging them across examples.

A recorded value is a parameter object `{class, value?, properties?, items?}` (reference/appmap.md
§1.4). Its schema comes from the class name — Ruby, Python, Java and JavaScript names are mapped
to OpenAPI types (matched case-insensitively, Java generics and `[]` arrays understood); an
unknown class is an `object`. `properties` make an object schema, `items` an array schema;
nested as deep as recorded.

`merge(a, b)` is commutative and associative, so examples can be merged in any order (worker
processes finish in any order) and the result is the same: objects take the union of their
properties, arrays merge their items, an empty schema (nothing known) yields to the other side, `integer` and `number` make `number`, a null makes the
other schema `nullable`, and different types become `anyOf` (alternatives kept in a canonical
order). `finalize(schema)` sorts property names and drops the internal null marker.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Optional

Schema = dict[str, Any]

_NULL: Schema = {"nullable": True}  # a value recorded as nil/None/null, before merging
_MAX_DEPTH = 24  # agents cap nesting well below this; a hostile file cannot recurse deeper

_STRING = {
    "string", "str", "builtins.str", "unicode", "symbol", "char", "character", "charsequence",
    "java.lang.string", "java.lang.charsequence", "java.lang.character",
    "activesupport::safebuffer", "pathname", "pathlib.path", "pathlib.posixpath",
    "pathlib.purepath", "kotlin.string",
}  # fmt: skip
_INTEGER = {
    "integer", "int", "builtins.int", "fixnum", "bignum", "long", "short", "byte", "bigint",
    "java.lang.integer", "java.lang.long", "java.lang.short", "java.lang.byte",
    "java.math.biginteger", "java.util.concurrent.atomic.atomicinteger",
    "java.util.concurrent.atomic.atomiclong", "kotlin.int", "kotlin.long",
}  # fmt: skip
_NUMBER = {
    "float", "numeric", "bigdecimal", "rational", "builtins.float", "decimal.decimal",
    "fractions.fraction", "double", "number", "java.lang.double", "java.lang.float",
    "java.lang.number", "java.math.bigdecimal", "kotlin.double", "kotlin.float",
}  # fmt: skip
_BOOLEAN = {
    "trueclass", "falseclass", "bool", "builtins.bool", "boolean", "java.lang.boolean",
    "kotlin.boolean",
}  # fmt: skip
_ARRAY = {
    "array", "list", "tuple", "set", "frozenset", "builtins.list", "builtins.tuple",
    "builtins.set", "builtins.frozenset", "collections.deque", "java.util.list",
    "java.util.arraylist", "java.util.linkedlist", "java.util.set", "java.util.hashset",
    "java.util.linkedhashset", "java.util.treeset", "java.util.collection", "java.util.vector",
    "activerecord::relation", "activerecord::associations::collectionproxy",
    "django.db.models.query.queryset", "kotlin.collections.list",
}  # fmt: skip
_OBJECT = {
    "hash", "object", "dict", "builtins.dict", "collections.ordereddict",
    "collections.defaultdict", "activesupport::hashwithindifferentaccess",
    "actioncontroller::parameters", "java.util.map", "java.util.hashmap",
    "java.util.linkedhashmap", "java.util.treemap", "django.http.request.querydict",
    "werkzeug.datastructures.immutablemultidict", "werkzeug.datastructures.multidict",
    "starlette.datastructures.queryparams", "starlette.datastructures.formdata",
}  # fmt: skip
_NULLS = {
    "nilclass", "nonetype", "builtins.nonetype", "null", "undefined", "void", "java.lang.void",
}  # fmt: skip
_FORMATS = {
    "time": "date-time", "datetime": "date-time", "activesupport::timewithzone": "date-time",
    "datetime.datetime": "date-time", "java.time.instant": "date-time",
    "java.time.localdatetime": "date-time", "java.time.zoneddatetime": "date-time",
    "java.time.offsetdatetime": "date-time", "java.util.date": "date-time",
    "java.sql.timestamp": "date-time", "datetime.date": "date", "java.time.localdate": "date",
    "uuid.uuid": "uuid", "java.util.uuid": "uuid",
    "actiondispatch::http::uploadedfile": "binary", "rack::test::uploadedfile": "binary",
    "werkzeug.datastructures.filestorage": "binary",
    "django.core.files.uploadedfile.inmemoryuploadedfile": "binary",
    "django.core.files.uploadedfile.temporaryuploadedfile": "binary",
    "starlette.datastructures.uploadfile": "binary", "fastapi.datastructures.uploadfile": "binary",
}  # fmt: skip

_TYPE_OF: dict[str, Optional[str]] = {}
for _names, _type in (
    (_STRING, "string"),
    (_INTEGER, "integer"),
    (_NUMBER, "number"),
    (_BOOLEAN, "boolean"),
    (_ARRAY, "array"),
    (_OBJECT, "object"),
):
    for _name in _names:
        _TYPE_OF[_name] = _type
for _name in _NULLS:
    _TYPE_OF[_name] = None

_GENERIC = re.compile(r"<.*>$")
_TYPE_ORDER = {"boolean": 0, "integer": 1, "number": 2, "string": 3, "array": 4, "object": 5}


def class_schema(class_name: Any) -> Schema:
    """The schema of a bare value of this class (no properties/items known)."""
    return dict(_class_schema(str(class_name or "")))


@lru_cache(maxsize=4096)
def _class_schema(class_name: str) -> Schema:
    # cached: callers get a shallow copy, and schemas are never changed in place
    name = class_name.strip()
    key = name.lower()
    if key.endswith("[]"):  # Java arrays: java.lang.String[]
        return {"type": "array", "items": _class_schema(name[:-2])}
    key = _GENERIC.sub("", key)
    fmt = _FORMATS.get(key)
    if fmt is not None:
        return {"type": "string", "format": fmt}
    if key in _TYPE_OF:
        kind = _TYPE_OF[key]
        if kind is None:
            return dict(_NULL)
        return {"type": "array", "items": {}} if kind == "array" else {"type": kind}
    if key.startswith("java.util.") and key.endswith(("list", "set", "collection")):
        return {"type": "array", "items": {}}
    if key.startswith("java.util.") and key.endswith("map"):
        return {"type": "object"}
    return {"type": "object"}


def schema_for(value: Any, depth: int = 0) -> Schema:
    """Schema of a recorded parameter object (or return value)."""
    if not isinstance(value, dict):
        return {}
    properties = value.get("properties")
    items = value.get("items")
    if depth >= _MAX_DEPTH:
        return {"type": "object"}
    if isinstance(properties, list) and properties:
        props: dict[str, Schema] = {}
        for prop in properties:
            if isinstance(prop, dict) and prop.get("name") is not None:
                name = str(prop["name"])
                schema = schema_for(prop, depth + 1)
                props[name] = merge(props[name], schema) if name in props else schema
        return {"type": "object", "properties": props}
    if isinstance(items, list):
        merged: Optional[Schema] = None
        for item in items:
            schema = schema_for(item, depth + 1)
            merged = schema if merged is None else merge(merged, schema)
        return {"type": "array", "items": merged if merged is not None else {}}
    return class_schema(value.get("class"))


def is_null(schema: Schema) -> bool:
    return schema == _NULL


def merge(a: Schema, b: Schema) -> Schema:
    """Merge two schemas (see module doc); neither input is changed."""
    if a == b:
        return a
    if not a or not b:  # {} is "nothing known": the other side says more
        return b if not a else a
    if is_null(a) or is_null(b):
        other = b if is_null(a) else a
        return {**other, "nullable": True}
    nullable = bool(a.get("nullable") or b.get("nullable"))
    alternatives = _alternatives(a) + _alternatives(b)
    merged = _merge_alternatives(alternatives)
    if len(merged) == 1:
        out = dict(merged[0])
    else:
        out = {"anyOf": merged}
    if nullable:
        out["nullable"] = True
    return out


def _alternatives(schema: Schema) -> list[Schema]:
    base = {k: v for k, v in schema.items() if k != "nullable"}
    if "anyOf" in base and len(base) == 1:
        return list(base["anyOf"])
    return [base]


def _merge_alternatives(alternatives: list[Schema]) -> list[Schema]:
    by_type: dict[str, Schema] = {}
    for alt in alternatives:
        kind = str(alt.get("type", ""))
        if kind == "integer" and "number" in by_type:
            kind = "number"
            alt = {**alt, "type": "number"}
        elif kind == "number" and "integer" in by_type:
            previous = by_type.pop("integer")
            by_type["number"] = _same_type({**previous, "type": "number"}, alt)
            continue
        by_type[kind] = _same_type(by_type[kind], alt) if kind in by_type else alt
    return [by_type[k] for k in sorted(by_type, key=lambda k: (_TYPE_ORDER.get(k, 9), k))]


def _same_type(a: Schema, b: Schema) -> Schema:
    out = dict(a)
    if a.get("format") != b.get("format"):
        out.pop("format", None)
    if "properties" in a or "properties" in b:
        props = dict(a.get("properties") or {})
        for name, schema in (b.get("properties") or {}).items():
            props[name] = merge(props[name], schema) if name in props else schema
        out["properties"] = props
    if "items" in a or "items" in b:
        if "items" in a and "items" in b:
            out["items"] = merge(a["items"], b["items"])
        else:
            out["items"] = a.get("items", b.get("items"))
    return out


def finalize(schema: Schema, *, oas31: bool = False) -> Schema:
    """Render-ready copy: properties sorted by name, null markers resolved."""
    if not schema or is_null(schema):
        return {}
    out: Schema = {}
    nullable = bool(schema.get("nullable"))
    for key in ("type", "format"):
        if key in schema:
            out[key] = schema[key]
    if "anyOf" in schema:
        out["anyOf"] = [finalize(alt, oas31=oas31) for alt in schema["anyOf"]]
    if "properties" in schema:
        props = schema["properties"]
        out["properties"] = {name: finalize(props[name], oas31=oas31) for name in sorted(props)}
    if "items" in schema:
        out["items"] = finalize(schema["items"], oas31=oas31)
    if nullable:
        if oas31 and "type" in out:
            out["type"] = [out["type"], "null"]
        elif not oas31:
            out["nullable"] = True
    return out
