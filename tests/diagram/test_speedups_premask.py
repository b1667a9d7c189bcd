"""The SQL digest's literal masking in C (`sql_premask` in tracetool/_speedups_diagram.c) gives
the regex's text (`digests._PRE.sub`) for every ASCII text: statements of the shared corpus,
random texts over the characters the regex reacts to (quotes of each kind, doubled and
unterminated, brackets, digits, `.`, the characters a number may not follow), and texts the
C function declines (not ASCII, not a str), for which `_premask` runs the regex."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.diagram.test_speedups_diagram import needs_c
from tracetool import accel
from tracetool.diagram import digests

_C = accel.function("sql_premask")


def _regex(sql: str) -> str:
    return digests._PRE.sub(lambda m: "?" if m.group(1) or m.group(2) else m.group(0), sql)


_ALPHABET = "\"\"\"'''``[]]..0123456789 $?:@_aZ,()=\n\t-+e"
_KNOWN = [
    "",
    "1",
    "a1",
    "1a",
    "1.",
    "1.5",
    "1.5.3",
    "1..2",
    ".5",
    "$1",
    "?1",
    ":1",
    "@1",
    "x = 10 AND y = 2.75",
    "'it''s'",
    "''",
    "'",
    "'''",
    "''''",
    "'a''",
    "'a''b",
    '"a""b" 1',
    '"a""',
    '"unterminated 1',
    '"a"1',
    "`t1` 2",
    "`unterminated 3",
    "[t 1] 4",
    "[unterminated 5",
    "]6[",
    "LIMIT 4 OFFSET 12",
    "WHERE a IN (1, 2, 3) AND b = 'x' AND c = -4.5e3",
    'SELECT "t"."c1" FROM "t" WHERE "t"."id" = $1 LIMIT 2',
]


@needs_c
@pytest.mark.parametrize("text", _KNOWN)
def test_known_texts(text: str) -> None:
    assert _C(text) == _regex(text)


@needs_c
def test_random_texts() -> None:
    rng = random.Random(18)
    for _ in range(20000):
        text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 24)))
        assert _C(text) == _regex(text), text


@needs_c
def test_declined() -> None:
    # \w and \d are Unicode's in the regex: such texts are left to it
    for text in ("caf\u00e9 = 1", "x = \u0661\u0662", "\U0001f600 '1'"):
        assert _C(text) is None
        assert digests._premask(text) == _regex(text)

    class Sub(str):
        pass

    assert _C(Sub("a = 1")) is None
    assert _C(b"a = 1") is None
    assert _C(None) is None


def test_premask_is_the_regex() -> None:
    # (with or without the accelerator: TRACETOOL_NO_SPEEDUPS)
    rng = random.Random(3)
    for text in _KNOWN + ["".join(rng.choice(_ALPHABET) for _ in range(30)) for _ in range(500)]:
        if "\\" in text or "$$" in text:
            continue
        assert digests._premask(text) == _regex(text), text


_UPPER = accel.function("sql_keywords_upper")


def _upper_regex(text: str) -> str:
    def upper(m: Any) -> str:
        word = m.group(0)
        return word.upper() if word.lower() in digests._KEYWORDS else word

    return digests._WORD.sub(upper, text)


_WORDS = ["select", "SeLeCt", "from", "x", "_", "a_b", "Order", "by", "limit1", "t2x", "IN"]
_CHARS = ' ,.()=?\n"`[]1_$:'


@needs_c
def test_keywords_upper_random() -> None:
    rng = random.Random(5)
    for _ in range(20000):
        parts = [
            rng.choice(_WORDS) if rng.random() < 0.5 else rng.choice(_CHARS)
            for _ in range(rng.randint(0, 12))
        ]
        text = "".join(parts)
        assert _UPPER(text, digests._KEYWORDS) == _upper_regex(text), text


@needs_c
def test_keywords_upper_declined() -> None:
    assert _UPPER("s\u00e9lect from t", digests._KEYWORDS) is None
    assert _UPPER(b"select", digests._KEYWORDS) is None
    long_word = "select" * 10  # (longer than the C buffer: asked of the set as it is)
    assert _UPPER(f"{long_word} from", digests._KEYWORDS) == f"{long_word} FROM"
    assert _UPPER("a from", frozenset({"a" * 40, "from"})) == "a FROM"
    assert _UPPER("A" * 40 + " x", frozenset({"a" * 40})) == "A" * 40 + " x"
    assert _UPPER("a" * 40 + " x", frozenset({"a" * 40})) == "A" * 40 + " x"


def test_canonical_sql_texts() -> None:
    # (with or without the accelerator)
    assert digests.canonical_sql("select * from t where id in (1, 2, 3) and name = 'x'") == (
        "SELECT * FROM t WHERE id IN (?) AND name = ?"
    )
