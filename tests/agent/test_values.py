"""values.describe / compact: AppMap parameter objects with capped, failure-proof reprs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tracetool.agent import values
from tracetool.agent.values import MAX_VALUE, describe


@pytest.fixture
def opted_in() -> Iterator[None]:
    """The test module's classes opted in to `repr()` (trace.yml `safe_repr:`)."""
    values.configure([f"{__name__}.{n}" for n in ("BadRepr", "HugeRepr", "NotAString")])
    yield
    values.configure(None)


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


@pytest.mark.usefixtures("opted_in")
def test_repr_that_raises_gives_placeholder() -> None:
    d = describe(BadRepr())
    assert d["value"] == f"<{__name__}.BadRepr object: repr failed (RuntimeError)>"


@pytest.mark.usefixtures("opted_in")
def test_repr_returning_non_string_gives_placeholder() -> None:
    assert "repr failed (TypeError)" in describe(NotAString())["value"]


@pytest.mark.usefixtures("opted_in")
def test_huge_repr_is_capped_with_marker() -> None:
    value = describe(HugeRepr())["value"]
    shown = value.index("…")
    assert value == "h" * shown + f"… (+{1_000_000 - shown} chars)"
    assert len(value) == MAX_VALUE  # the marker counts (AppMap's schema: value ≤ 100 chars)


def test_long_string_is_cut_before_repr() -> None:
    value = describe("a" * 10_000_000)["value"]
    shown = value.index("'", 1) - 1
    assert value == "'" + "a" * shown + "'" + f"… (+{10_000_000 - shown} chars)"
    assert MAX_VALUE - 3 <= len(value) <= MAX_VALUE
    escaped = describe(b"\x00" * 500)["value"]
    assert escaped.startswith("b'\\x00") and escaped.endswith(" bytes)")
    assert len(escaped) <= MAX_VALUE
    # a short str whose repr grows past the limit with escapes is cut as well
    assert len(describe("\x01" * 90)["value"]) <= MAX_VALUE


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


@pytest.mark.usefixtures("opted_in")
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


# -- safe rendering: capturing a value runs no app code (issue 12 item 1) -------------------------


class Tripwire:
    """Every dunder the old renderer called counts here."""

    touched: list[str] = []

    def __repr__(self) -> str:
        Tripwire.touched.append("repr")
        return "T"

    def __str__(self) -> str:
        Tripwire.touched.append("str")
        return "T"

    def __len__(self) -> int:
        Tripwire.touched.append("len")
        return 1

    def __iter__(self) -> Iterator[int]:
        Tripwire.touched.append("iter")
        return iter([1])


class LazyList(list):  # type: ignore[type-arg]
    def __iter__(self) -> Iterator[object]:
        Tripwire.touched.append("list-iter")
        return super().__iter__()

    def __len__(self) -> int:
        Tripwire.touched.append("list-len")
        return super().__len__()

    def __repr__(self) -> str:
        Tripwire.touched.append("list-repr")
        return "L"


def test_unknown_objects_are_class_and_id_only() -> None:
    Tripwire.touched.clear()
    obj = Tripwire()
    for d in (describe(obj), values.expand(values.compact(obj))):
        assert d["value"] == f"<{__name__}.Tripwire object at {id(obj):#x}>"
        assert "size" not in d
    encoded = values.encode(obj)
    assert f"object at {id(obj):#x}>".encode() in encoded
    assert "Tripwire object at" in describe([obj])["value"]
    assert "Tripwire object at" in describe({"k": obj})["value"]
    assert Tripwire.touched == []


def test_builtin_container_subclasses_are_read_through_builtin_methods() -> None:
    Tripwire.touched.clear()
    d = describe(LazyList([1, 2]))
    assert (d["value"], d["size"]) == ("[1, 2]", 2)
    assert Tripwire.touched == []


def test_generators_and_files_are_not_consumed(tmp_path: object) -> None:
    gen = (i for i in range(3))
    assert "generator object at" in describe(gen)["value"]
    assert next(gen) == 0
    path = f"{tmp_path}/f.txt"
    with open(path, "w") as fh:
        fh.write("one\ntwo\n")
    with open(path) as fh:
        assert "TextIOWrapper object at" in describe(fh)["value"]
        assert fh.tell() == 0 and fh.readline() == "one\n"


def test_known_pure_values_are_rendered() -> None:
    import dataclasses
    import datetime
    import decimal
    import enum
    import uuid
    from pathlib import Path
    from typing import NamedTuple

    class Color(enum.Enum):
        RED = 1

    @dataclasses.dataclass
    class Point:
        x: int
        y: str
        when: datetime.date

    class Pair(NamedTuple):
        a: int
        b: object

    u = uuid.UUID(int=5)
    assert describe(u)["value"] == repr(u)
    assert describe(datetime.date(2024, 1, 2))["value"] == "datetime.date(2024, 1, 2)"
    assert describe(datetime.timedelta(seconds=3))["value"] == "datetime.timedelta(seconds=3)"
    assert describe(decimal.Decimal("1.50"))["value"] == "Decimal('1.50')"
    assert describe(Path("/a/b"))["value"] == repr(Path("/a/b"))
    assert describe(Color.RED)["value"] == "<Color.RED: 1>"
    assert describe(Point(1, "p", datetime.date(2024, 1, 2)))["value"] == (
        "Point(x=1, y='p', when=datetime.date(2024, 1, 2))"
    )
    Tripwire.touched.clear()
    t = Tripwire()
    assert (
        describe(Pair(1, t))["value"] == f"Pair(a=1, b=<{__name__}.Tripwire object at {id(t):#x}>)"
    )
    assert Tripwire.touched == []

    class Name(str):
        def __repr__(self) -> str:
            raise AssertionError("not called")

    assert describe(Name("ann"))["value"] == "'ann'"


def test_opted_in_classes_use_their_repr() -> None:
    values.configure([f"{__name__}.Tripwire"])
    try:
        Tripwire.touched.clear()
        assert describe(Tripwire())["value"] == "T"
        assert Tripwire.touched == ["repr"]
    finally:
        values.configure(None)


def test_exception_messages_run_no_app_code() -> None:
    Tripwire.touched.clear()
    assert values.exception_message(ValueError("bad value")) == "bad value"
    assert values.exception_message(KeyError("k")) == "'k'"
    assert values.exception_message(OSError(2, "gone")) == "[Errno 2] gone"
    t = Tripwire()
    assert values.exception_message(ValueError(t)) == f"<{__name__}.Tripwire object at {id(t):#x}>"

    class Custom(Exception):
        def __str__(self) -> str:
            Tripwire.touched.append("exc-str")
            return "custom"

    assert values.exception_message(Custom("plain words")) == "plain words"
    assert Tripwire.touched == []


def test_every_value_fits_appmaps_limit() -> None:
    for value in ("x" * 99, "x" * 100, "\n" * 60, list(range(200)), {"k" * 300: 1}, b"\xff" * 99):
        assert len(describe(value)["value"]) <= MAX_VALUE, value
