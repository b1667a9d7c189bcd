"""The SQL digest's literal masking in C (`sql_premask` in tracetool/_speedups_diagram.c) gives
the regex's text (`digests._PRE.sub`) for every ASCII text: statements of the shared corpus,
random texts over the characters the regex reacts to (quotes of each kind, doubled and
unterminated, brackets, digits, `.`, the characters a number may not follow), and texts the
C function declines (not ASCII, not a str), for which `_premask` runs the regex."""

from __future__ import annotations

import random

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
