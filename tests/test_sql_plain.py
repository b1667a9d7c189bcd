"""`tracetool._sql_plain`: the sqlglot-free normalization of plain SQL gives sqlglot's text."""

from __future__ import annotations

import random

import pytest

from tracetool import sql
from tracetool._sql_plain import PLAIN_DIALECTS, plain_normalized
from tracetool.diagram.digests import _premask

pytest.importorskip("sqlglot")


def _vocabulary(dialect: str | None) -> list[str]:
    tokenizer = sql._tokenizer(dialect)
    words = {k for k in type(tokenizer).KEYWORDS if k.replace(" ", "").isalpha()}
    words |= {"users", "t", "id", "x_1", "_a", "E", "N", "X", "B", "U", "q", "r", "GO"}
    return sorted(words)


_PUNCT = [
    "(",
    ")",
    ",",
    ".",
    "=",
    "*",
    ";",
    "<",
    ">",
    "<>",
    "!=",
    "<=",
    ">=",
    "+",
    "-",
    "/",
    "->",
    "->>",
    "!",
    "||",
]


def _statement(rng: random.Random, words: list[str], quotes: bool) -> str:
    parts: list[str] = []
    for _ in range(rng.randint(1, 14)):
        roll = rng.random()
        if roll < 0.45:
            parts.append(rng.choice(words))
        elif roll < 0.55:
            parts.append("?")
        elif roll < 0.62 and quotes:
            parts.append(f'"{rng.choice(words).replace(" ", "_")}"')
        elif roll < 0.67 and quotes:
            parts.append(f"${rng.randint(1, 12)}")
        elif roll < 0.72:
            parts.append(str(rng.randint(0, 99)))  # masked by _premask, or not plain
        elif roll < 0.76:
            parts.append("'it''s'")
        else:
            parts.append(rng.choice(_PUNCT))
        parts.append(rng.choice(["", " ", " ", "  ", "\n  ", "\t"]))
    return "".join(parts)


@pytest.mark.parametrize("dialect", sorted(PLAIN_DIALECTS, key=str))
def test_plain_statements_normalize_as_sqlglot_does(dialect: str | None) -> None:
    rng = random.Random(f"plain-{dialect}")
    words = _vocabulary(dialect)
    database_type = {None: None, "postgres": "postgres", "sqlite": "sqlite"}[dialect]
    plain = 0
    for _ in range(4000):
        text = _premask(_statement(rng, words, PLAIN_DIALECTS[dialect]))
        fast = plain_normalized(text, dialect)
        if fast is None:
            continue
        plain += 1
        assert fast == sql.analyze(text, database_type).normalized, text
    assert plain > 1000  # most generated statements take the fast path


@pytest.mark.parametrize(
    "text",
    [
        "SELECT x FROM t WHERE a IS NULL",
        "SELECT 1",
        "SELECT a -- comment",
        "SELECT /* c */ a",
        "SELECT a::int",
        "SELECT :name",
        "SELECT %s",
        "SELECT ?1",
        'SELECT "a""b"',
        'SELECT "a"b',
        'SELECT a"b"',
        'SELECT "a b"',
        "SELECT $$x$$",
        "SELECT x$1",
        "SELECT é",
        "SELECT `a`",
        "SELECT [a]",
        "SELECT 'x'",
        "SELECT a\fb",
    ],
)
def test_what_is_not_plain(text: str) -> None:
    assert plain_normalized(text, "postgres") is None


def test_plain_examples() -> None:
    text = 'SELECT  "users".*\n FROM "users" WHERE "users"."id" = $1 LIMIT ?'
    assert (
        plain_normalized(text, "postgres")
        == 'SELECT "users".* FROM "users" WHERE "users"."id" = ? LIMIT ?'
    )
    assert plain_normalized(text, "sqlite") is None  # double quotes may be strings there
    assert plain_normalized("SELECT a FROM t", "mysql") is None  # not a verified dialect
