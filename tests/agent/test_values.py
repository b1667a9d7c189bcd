"""values.describe / compact: AppMap parameter objects with capped, failure-proof reprs."""

from __future__ import annotations

from tracetool.agent import values
from tracetool.agent.values import MAX_VALUE, describe


class BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


class HugeRepr:
    def __repr__(self) -> str:
        return "h" * 1_000_000


class NotAString:
    def __repr__(self):  # type: ignore[no-untyped-def]
        return 42


def test_scalar_shape() -> None:
    d = describe(5, "n")
    assert d == {"name": "n", "class": "builtins.int", "value": "5", "object_id": id(5)}
    assert describe("x")["value"] == "'x'"
    assert describe(None)["class"] == "builtins.NoneType"
    assert describe(1.5)["value"] == "1.5"
    assert "name" not in describe(True)


def test_class_of_user_objects_is_dotted() -> None:
    assert describe(BadRepr())["class"] == f"{__name__}.BadRepr"


def test_repr_that_raises_gives_placeholder() -> None:
    d = describe(BadRepr())
    assert d["value"] == f"<{__name__}.BadRepr object: repr failed (RuntimeError)>"


def test_repr_returning_non_string_gives_placeholder() -> None:
    assert "repr failed (TypeError)" in describe(NotAString())["value"]


def test_huge_repr_is_capped_with_marker() -> None:
    value = describe(HugeRepr())["value"]
    assert value == "h" * MAX_VALUE + f"… (+{1_000_000 - MAX_VALUE} chars)"


def test_long_string_is_cut_before_repr() -> None:
    value = describe("a" * 10_000_000)["value"]
    assert value.startswith("'aaaa") and value.endswith(f"… (+{10_000_000 - MAX_VALUE} chars)")
    assert len(value) < MAX_VALUE + 30
    assert describe(b"\x00" * 500)["value"].endswith("… (+400 bytes)")


def test_big_list_shows_first_items_and_count() -> None:
    d = describe(list(range(1_000_000)))
    assert d["value"] == "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, … +999990 items]"
    assert d["size"] == 1_000_000


def test_containers() -> None:
    assert describe((1,))["value"] == "(1,)"
    assert describe(())["value"] == "()"
    assert describe(set())["value"] == "set()"
    assert describe({3})["value"] == "{3}"
    assert describe(frozenset())["value"] == "frozenset()"
    assert describe({"a": [1, 2]})["value"] == "{'a': [1, 2]}"
    assert describe([[[[[1]]]]])["value"] == "[[[list(… 1 items)]]]"


def test_container_with_bad_item_is_placeholder_not_error() -> None:
    assert "repr failed" in describe([BadRepr()])["value"]


def test_dict_properties() -> None:
    d = describe({"user": "ann", "age": 3, 7: "x"})
    assert d["size"] == 3
    assert d["properties"] == [
        {"name": "user", "class": "builtins.str"},
        {"name": "age", "class": "builtins.int"},
    ]


def test_huge_int_does_not_raise() -> None:
    assert "repr failed (ValueError)" in describe(10**10000)["value"]


def test_compact_round_trips_to_describe() -> None:
    obj = [1, 2]
    assert values.expand(values.compact(obj), "p") == {
        "name": "p",
        "class": "builtins.list",
        "value": "[1, 2]",
        "object_id": id(obj),
        "size": 2,
    }
