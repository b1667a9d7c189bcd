"""`tracetool.diagram.digests.sql_digest` shares one digest among the texts of one template
(`tracetool._sql_template`): differential, each text's literals changed and both digested
afresh (`_premask` gives one text per template, so the canonical form is one too)."""
# (`sql_digest` shares only templates `tracetool.sql` remembers: each is computed first here.)

from __future__ import annotations

import random
from collections.abc import Iterable

import pytest

from tests.test_sql_template import (
    DATABASE_TYPES,
    EDGE_CASES,
    NOT_TEMPLATED,
    _corpus_sql,
    _statement,
    _variants,
)
from tracetool import sql
from tracetool._sql_template import template
from tracetool.diagram import digests

pytest.importorskip("sqlglot")


def _check(texts: Iterable[tuple[str, str | None]], seed: int = 0) -> int:
    """Every variant of a text's template has the text's premasked form and digest (computed
    without the sharing); the shared `sql_digest` gives the same. Returns variants compared."""
    rng = random.Random(seed)
    variants = 0
    for text, database_type in texts:
        if text.endswith("..."):
            continue  # (truncatedQuery, whatever the template)
        premasked = digests._premask(text)
        expected = digests._sql_digest_of(text, database_type)
        sql.sql_template(text)
        assert digests.sql_digest(text, database_type) == expected, text
        for variant in _variants(text, rng):
            if template(variant) != template(text):
                continue
            variants += 1
            assert digests._premask(variant) == premasked, (text, variant)
            assert digests._sql_digest_of(variant, database_type) == expected, (text, variant)
            sql.sql_template(variant)  # (as analyzing it would: `sql_digest` reuses it)
            assert digests.sql_digest(variant, database_type) == expected, (text, variant)
    return variants


def test_corpus_statements_share_a_digest_per_template() -> None:
    texts = _corpus_sql()
    if not texts:
        pytest.skip("shared corpus not found")
    assert _check(texts) > 200
    for database_type in DATABASE_TYPES[:4]:
        _check([(text, database_type) for text, _ in texts[:40]])


def test_edge_cases_share_a_digest_per_template() -> None:
    total = 0
    for database_type in DATABASE_TYPES:
        total += _check([(text, database_type) for text in EDGE_CASES])
    assert total > 100


def test_untemplated_texts_are_digested_each() -> None:
    for text in NOT_TEMPLATED:
        for database_type in (None, "postgres", "mysql"):
            assert digests.sql_digest(text, database_type) == digests._sql_digest_of(
                text, database_type
            )


@pytest.mark.parametrize("database_type", [None, "postgresql", "sqlite", "mysql"])
def test_generated_statements_share_a_digest_per_template(database_type: str | None) -> None:
    tokenizer = sql._tokenizer(sql.dialect_for(database_type))
    words = sorted(k for k in type(tokenizer).KEYWORDS if k.replace(" ", "").isalpha())
    words += ["users", "t", "id", "x_1", "E", "N", "X", "B", "U", "q", "r", "e5"]
    rng = random.Random(f"digest {database_type}")
    texts = [(_statement(rng, words), database_type) for _ in range(300)]
    assert _check(texts, seed=2) > 20


def test_a_truncated_text_stays_truncated_whatever_its_template() -> None:
    digests.sql_digest.cache_clear()
    for text in ("SELECT * FROM t WHERE a = 5", "SELECT * FROM t WHERE a = 6 ...", "SELECT 7"):
        sql.sql_template(text)
    try:
        assert digests.sql_digest("SELECT * FROM t WHERE a = 5", None) != "truncatedQuery"
        assert digests.sql_digest("SELECT * FROM t WHERE a = 6 ...", None) == "truncatedQuery"
        assert digests.sql_digest("SELECT 7", None) == digests.sql_digest("SELECT 8", None)
        assert digests.sql_digest("SELECT 7", None) != digests.sql_digest("SELECT a", None)
    finally:
        digests.sql_digest.cache_clear()
