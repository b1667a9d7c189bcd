"""Tokens: numbering, identity, kinds, the allowlist."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracetool.transform.tokens import TOKEN, Tokenizer, classify, read_allow_file


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("42", "int"),
        ("-7", "int"),
        ("4111111111111111", "int"),
        ("3.14", "float"),
        ("-1e10", "float"),
        ("123e4567-e89b-12d3-a456-426614174000", "uuid"),
        ("{123E4567-E89B-12D3-A456-426614174000}", "uuid"),
        ("2024-01-31", "iso8601"),
        ("2024-01-31T12:30:00Z", "iso8601"),
        ("2024-01-31 12:30:00.123+02:00", "iso8601"),
        ("12:30:05", "iso8601"),
        ("deadbeef42", "hex"),
        ("0x1F2E3D4C5B", "hex"),
        ("0x12345678", "hex"),
        ("6236d15f65129f002e80286c78fdd1f1", "hex"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", "jwt"),
        ("jane.doe+x@mail.example.org", "email"),
        ("https://user:pw@example.com/a?b=1", "url"),
        ("postgres://db:5432/x", "url"),
        ("10.0.0.1", "ip"),
        ("192.168.1.20:8080", "ip"),
        ("2001:db8::1", "ip"),
        ("[::1]:443", "ip"),
    ],
)
def test_recognized_shapes(text: str, kind: str) -> None:
    assert classify(text) == kind


@pytest.mark.parametrize(
    "text",
    [
        "",
        "hello",
        "deadbeef",
        "12345678901234567890abcxyz",
        "a@b",
        "Bearer abc",
        "1.2.3",
        "x" * 5000,
    ],
)
def test_unrecognized_shapes_get_no_kind(text: str) -> None:
    assert classify(text) is None


def test_numbering_in_first_appearance_order_and_identity() -> None:
    tok = Tokenizer()
    assert [tok.mask(v) for v in ("a", "42", "a", "b", "'a'", 42)] == [
        "<v1>",
        "<int:v2>",
        "<v1>",
        "<v3>",
        "<v1>",  # a Python repr of the same string is the same value
        "<int:v2>",  # the number 42 is the value "42"
    ]
    assert tok.new == 3 and tok.count == 3


def test_builtin_allowlist_and_empty_values_are_kept() -> None:
    tok = Tokenizer()
    for value in ("true", "false", "null", "nil", "None", "True", "False", "", "''", None, True):
        assert tok.mask(value) == value
    assert tok.new == 0
    assert tok.mask("TRUE") == "<v1>"  # exact match only
    assert tok.mask("none") == "<v2>"


def test_user_allowlist_is_exact_and_whole_value() -> None:
    tok = Tokenizer(["admin", "GET"])
    assert tok.mask("admin") == "admin"
    assert tok.mask("'admin'") == "'admin'"  # the same value in repr quotes
    assert tok.mask("admin2") == "<v1>"
    assert tok.mask("the admin") == "<v2>"
    assert tok.mask("get") == "<v3>"


def test_existing_tokens_are_kept_only_when_reapplying() -> None:
    fresh = Tokenizer()
    assert fresh.mask("<uuid:v9>") == "<v1>"
    again = Tokenizer(start=9, keep_tokens=True)
    assert again.mask("<uuid:v9>") == "<uuid:v9>"
    assert again.mask("new") == "<v10>"


def test_structured_non_string_values_masked_leaf_by_leaf() -> None:
    tok = Tokenizer()
    assert tok.mask({"sk_live_1": ["x", 5, None, {"k": "x"}]}) == {
        "<v1>": ["<v2>", "<int:v3>", None, {"<v4>": "<v2>"}]
    }


def test_allow_file_lines() -> None:
    text = "# comment\n\nadmin\n  spaced  \n#another\nGET\n"
    assert read_allow_file(text.splitlines()) == ["admin", "spaced", "GET"]


@settings(max_examples=200, derandomize=True)
@given(st.lists(st.one_of(st.text(max_size=12), st.integers()), max_size=40))
def test_property_tokens_are_a_consistent_injection(values: list) -> None:
    tok = Tokenizer()
    seen: dict[str, str] = {}
    for value in values:
        out = tok.mask(value)
        if out == value and not isinstance(value, int):
            continue  # kept (allowlist, empty)
        match = TOKEN.fullmatch(out)
        assert match, out
        key = str(value)
        key = key[1:-1] if len(key) >= 2 and key[0] == key[-1] and key[0] in "'\"" else key
        assert seen.setdefault(key, out) == out  # same value, same token
    numbers = [int(TOKEN.fullmatch(t).group(1)) for t in dict.fromkeys(seen.values())]
    assert numbers == list(range(1, len(numbers) + 1))  # 1..N in order of first appearance
