"""`tracetool._sql_template`: texts of one template have one analysis (differential, against
the tokenizer: each text's literals changed, both analyzed afresh)."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator

import orjson
import pytest

from tests.conftest import corpus_recordings
from tracetool import sql
from tracetool._sql_template import NUMBER_MARK, STRING_MARK, template

pytest.importorskip("sqlglot")

DATABASE_TYPES = [
    None,
    "postgresql",
    "sqlite",
    "mysql",
    "mssql",
    "oracle",
    "bigquery",
    "snowflake",
    "duckdb",
    "clickhouse",
    "spark",
    "h2",
]
# String contents a literal may be changed to: none reads as a word, none makes the text
# untemplated (no comment marker, backslash, bracket, dollar).
_CONTENTS = [
    "x y",
    "a-b",
    "bob@x.io",
    "12",
    "3.5",
    "-",
    " ",
    "é ü",
    '"',
    "x\ny",
    "?",
    ":a",
    "%s",
    ";",
    "(",
    ")",
    "1e5",
    ",",
    "a b c",
    "2024-01-01 00:00:00",
    "0x1F",
    "ab'",  # (as content, this makes `'ab''`: a doubled quote, not this template)
]


def _variants(text: str, rng: random.Random, count: int = 3) -> Iterator[str]:
    """`text` with every templated literal replaced by another value."""
    key = template(text)
    if key is None or (STRING_MARK not in key and NUMBER_MARK not in key):
        return
    for _ in range(count):
        out = []
        for ch in key:
            if ch == NUMBER_MARK:
                out.append(str(rng.choice([0, 1, 7, 42, 10**6, rng.randrange(10**12)])))
            elif ch == STRING_MARK:
                out.append("'" + rng.choice(_CONTENTS) + "'")
            else:
                out.append(ch)
        yield "".join(out)


def _check(texts: Iterable[tuple[str, str | None]], seed: int = 0) -> tuple[int, int]:
    """Every variant of one template as the text has the text's analysis, when reliable;
    (texts compared, variants compared)."""
    rng = random.Random(seed)
    compared = variants = 0
    for text, database_type in texts:
        expected = sql._analyze(text, database_type)
        if not expected.reliable:
            continue  # never reused (tracetool.sql._analyze_tracked)
        compared += 1
        for variant in _variants(text, rng):
            if template(variant) != template(text):
                continue
            variants += 1
            assert sql._analyze(variant, database_type) == expected, (text, variant)
    return compared, variants


def _corpus_sql() -> list[tuple[str, str | None]]:
    found: dict[tuple[str, str | None], None] = {}
    for path in corpus_recordings():
        doc = orjson.loads(path.read_bytes())
        for event in doc.get("events") or ():
            query = event.get("sql_query") if isinstance(event, dict) else None
            if isinstance(query, dict) and isinstance(query.get("sql"), str):
                found[(query["sql"], query.get("database_type"))] = None
    return list(found)


def test_every_corpus_statement_keeps_its_analysis_with_other_literals() -> None:
    texts = _corpus_sql()
    if not texts:
        pytest.skip("shared corpus not found")
    compared, variants = _check(texts)
    assert compared > 200 and variants > 200
    # and in every dialect
    for database_type in DATABASE_TYPES:
        _check([(text, database_type) for text, _ in texts[:60]])


EDGE_CASES = [
    "SELECT * FROM t WHERE id = 5 LIMIT 10 OFFSET 20",
    "SELECT * FROM t WHERE a = 'x y' AND b IN (1, 2, 3)",
    "SELECT * FROM t WHERE a = 'from' AND b = 'bob@x.io'",  # a word-like string is kept
    "SELECT 'from' x FROM t WHERE y = 'a b'",
    "SELECT * FROM t WHERE a = 'password' AND b = c AND d = 'a-b'",
    "SELECT * FROM t WHERE a IDENTIFIED BY 'p w' AND b = 3",
    "UPDATE t SET a = 'x y', b = 5 WHERE id = 7",
    "INSERT INTO t (a, b) VALUES ('x y', 5), ('a-b', 6)",
    "DELETE FROM t WHERE a <> 'q r' OR b >= 4",
    "SELECT * FROM t WHERE a = E'x y' AND b = N'a b' AND c = X'1F 2A' AND d = 'e f'",
    "SELECT * FROM t WHERE a = U&'d a' AND b = B'0 1' AND c = r'x y' AND e = 5",
    "SELECT * FROM t WHERE a = 'it''s' AND b = '' AND c = 'x y' AND d = 1",
    "SELECT * FROM t WHERE a = '''x y''' AND b = 2",
    "SELECT * FROM t WHERE a = \"it's\" AND b = 'x y' AND c = 3",
    'SELECT * FROM t WHERE "a" = "x y" AND "b" = \'c d\' AND e = 4',
    'SELECT "t"."a" FROM "t" WHERE "t"."b" = 5 AND "c" IN (\'x y\', 6)',
    "SELECT * FROM t WHERE a = $1 AND b = 5 LIMIT $2",
    "SELECT * FROM t WHERE a = ?1 AND b = :1 AND c = @1 AND d = 5",
    "SELECT * FROM t WHERE a = ? AND b = %s AND c = %(n)s AND d = :name AND e = 5",
    "SELECT t.5, 1.5, .5, 1e5, 0x1F, 1_000, 3L, 5 FROM t",
    "SELECT a-5, a - 5, -5, +5, a*5, a/5, (5), 5-a FROM t WHERE b=-5",
    "SELECT * FROM t WHERE a BETWEEN 1 AND 10 AND b NOT IN (1,2) AND c IS NOT NULL",
    "SELECT * FROM t WHERE a = 1; SELECT * FROM u WHERE b = 'x y'",
    "WITH c AS (SELECT * FROM t WHERE a = 5) SELECT * FROM c LIMIT 3",
    "SET search_path = 'a b'",
    "SET x = 5",
    "PRAGMA table_info('users')",
    "PRAGMA user_version = 5",
    "SELECT CAST(a AS VARCHAR(255)), a::int, '5'::int FROM t WHERE b = 5",
    "SELECT * FROM t ORDER BY 1 DESC LIMIT 5",
    "SELECT * FROM t WHERE a = 5x AND b = 5 AND c = 'x y'z",
    "SELECT * FROM t WHERE a LIKE '%x y%' ESCAPE '!' AND b = 6",
    "SELECT TOP 5 * FROM t WHERE a = N'x y'",
    "SELECT * FROM t FETCH FIRST 5 ROWS ONLY",
    "SELECT * FROM t WHERE a = q'[it's]' AND b = 5",
    "SELECT * FROM t WHERE a = q'!x y!' AND b = 5",
    "SELECT * FROM t WHERE a = q'!a' = 'b!' AND c = 1",  # one Oracle string
    "SELECT * FROM t WHERE a = '12' AND b = '12 ' AND c = 'é ü'",
]
NOT_TEMPLATED = [
    "SELECT 1 -- 'x y'",
    "SELECT /* 5 */ 1",
    "SELECT 1 # 2",
    "SELECT `a` FROM t WHERE b = 5",
    "SELECT [a] FROM t WHERE b = 5",
    "SELECT $$x y$$, 5",
    "SELECT $tag$x$tag$, 5",
    "SELECT 'a\\'b', 5",
    "SELECT * FROM t WHERE a = 'unterminated",
    'SELECT "unterminated FROM t WHERE a = 5',
    "CREATE TABLE t (a VARCHAR(255) DEFAULT 'x y')",
    "ALTER TABLE t ADD COLUMN a NUMERIC(10, 2)",
    "select 1; create table t (a int)",
    "SELECT v$session, 5 FROM t",
    "SELECT {fn NOW()}, 5",
    # prefixed strings may end elsewhere than at the next quote (Oracle's q-quote: at `!'`)
    "SELECT * FROM t WHERE a = q'!a' = 'b!' AND c = 1",
    "SELECT * FROM t WHERE a = E'x y' AND b = 5",
    "SELECT * FROM t WHERE a = U&'d a' AND b = 5",
    "SELECT * FROM t WHERE a = :'x y' AND b = 5",
    "SELECT * FROM t WHERE a = r\"x y\" AND b = 'c d'",
    # triple quotes (BigQuery) end at the next triple quote
    "SELECT '''a' 'x y' 'b''' FROM t WHERE c = 5",
    'SELECT """a" \'x y\' "b""" FROM t WHERE c = 5',
]


def test_edge_cases_keep_their_analysis_with_other_literals() -> None:
    total = 0
    for database_type in DATABASE_TYPES:
        _, variants = _check([(text, database_type) for text in EDGE_CASES])
        total += variants
    assert total > 100


def test_what_the_analysis_could_read_is_not_templated() -> None:
    for text in NOT_TEMPLATED:
        assert template(text) is None, text
    assert template("SELECT 'from' x, 'a b' FROM t") == f"SELECT 'from' x, {STRING_MARK} FROM t"
    assert (
        template("SELECT $1, ?1, t.5, 1.5, 5x, (5)")
        == f"SELECT $1, ?1, t.5, 1.5, 5x, ({NUMBER_MARK})"
    )
    assert template("SELECT 'it''s', '', 'a b'") == f"SELECT 'it''s', '', {STRING_MARK}"
    assert template('SELECT "t"."a" FROM "t"') == 'SELECT "t"."a" FROM "t"'


_PUNCT = ["(", ")", ",", ".", "=", "*", ";", "<", ">", "<>", "+", "-", "/", "||", ":", "::", "?"]


def _statement(rng: random.Random, words: list[str]) -> str:
    parts: list[str] = [rng.choice(["SELECT", "UPDATE", "DELETE FROM", "INSERT INTO", "WITH"])]
    for _ in range(rng.randint(1, 16)):
        roll = rng.random()
        if roll < 0.35:
            parts.append(rng.choice(words))
        elif roll < 0.55:
            parts.append(str(rng.randint(0, 999)))
        elif roll < 0.7:
            parts.append("'" + rng.choice([*_CONTENTS[:-1], "ab", "from", "x_1", "!a", "b!"]) + "'")
        elif roll < 0.75:
            parts.append(f'"{rng.choice(words)}"')
        elif roll < 0.8:
            parts.append(f"${rng.randint(1, 9)}")
        else:
            parts.append(rng.choice(_PUNCT))
    glue = [" ", "", "\n"]
    return "".join(part + rng.choice(glue) for part in parts).strip()


@pytest.mark.parametrize("database_type", DATABASE_TYPES)
def test_generated_statements_keep_their_analysis_with_other_literals(
    database_type: str | None,
) -> None:
    tokenizer = sql._tokenizer(sql.dialect_for(database_type))
    words = sorted(k for k in type(tokenizer).KEYWORDS if k.replace(" ", "").isalpha())
    words += ["users", "t", "id", "x_1", "E", "N", "X", "B", "U", "q", "r", "e5"]
    rng = random.Random(f"template {database_type}")
    texts = [(_statement(rng, words), database_type) for _ in range(300)]
    compared, variants = _check(texts, seed=1)
    assert compared > 20 and variants > 20


def test_one_template_is_analyzed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    analyze = sql._analyze

    def counted(text: str, database_type: str | None) -> sql.SqlInfo:
        calls.append(text)
        return analyze(text, database_type)

    monkeypatch.setattr(sql, "_analyze", counted)
    sql.analyze.cache_clear()  # type: ignore[attr-defined]
    try:
        texts = [f"SELECT * FROM tmpl_probe WHERE a = 'x-{i}' LIMIT {i}" for i in range(5)]
        infos = [sql.analyze(text, "postgres") for text in texts]
    finally:
        sql.analyze.cache_clear()  # type: ignore[attr-defined]
    assert calls == texts[:1]
    assert {info.normalized for info in infos} == {"SELECT * FROM tmpl_probe WHERE a = ? LIMIT ?"}
