"""The normalized text of plain SQL, without sqlglot.

Contract:

- `plain_normalized(sql, dialect)` returns `tracetool.sql.normalize(sql, …)`'s text, or None
  when `sql` is not *plain*; callers then tokenize with sqlglot. Importing sqlglot and running its
  tokenizer cost ~0.1 s per process and ~0.2 ms per statement, while the statements ORMs write
  (after the digests' literal masking) are mostly plain.
- Plain means: in one of the verified dialects (generic, postgres; sqlite without double quotes
  or `$`), made only of ASCII words that are not NULL, TRUE or FALSE (the keywords `normalize`
  may mask), `"word"` identifiers, `$1`-style and `?` placeholders not glued to a word, the
  punctuation `( ) , . = * ; < > ! + - /` without comment markers, and spaces, tabs and line
  breaks. On such text sqlglot's tokens are the words, placeholders and punctuation runs
  themselves, none is a literal, and `normalize` splices them back with each gap written as one
  space: the result is the text with whitespace runs collapsed and the ends stripped, then bind
  placeholders written `?` (`bind_as_question_marks`).
- tests/test_sql_plain.py checks this against sqlglot on generated statements over every
  keyword of the verified dialects' tokenizers.
"""

from __future__ import annotations

import re
from typing import Optional

# dialect -> whether `"…"` identifiers and `$1` placeholders are plain in it
PLAIN_DIALECTS = {None: True, "postgres": True, "sqlite": False}

_PLAIN = re.compile(r'(?:[A-Za-z0-9_ \t\r\n(),.=*;<>!+\-/?"$])*')
_PLAIN_NO_QUOTES = re.compile(r"(?:[A-Za-z0-9_ \t\r\n(),.=*;<>!+\-/?])*")
# What makes a text of those characters not plain: a comment marker, a literal keyword, a word
# starting with a digit, a placeholder or quote glued to a word, a `$` not starting `$<digits>`,
# a quoted identifier that is not one plain word.
_NOT_PLAIN = re.compile(
    r"--|/\*|\*/"
    r"|\b(?i:null|true|false)\b"
    r"|(?<![A-Za-z0-9_$])[0-9]"
    r"|[A-Za-z0-9_][?$]|\?[A-Za-z0-9_\"$]"
    r"|\$(?![1-9])|\$[0-9]+[A-Za-z_\"$]"
)
_QUOTED = re.compile(r'"([^"]*)"')
_QUOTED_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WS = re.compile(r"[ \t\r\n]+")
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def plain_normalized(sql: str, dialect: Optional[str]) -> Optional[str]:
    """`normalize`'s text of a plain statement, or None (module doc)."""
    quotes = PLAIN_DIALECTS.get(dialect)
    if quotes is None:
        return None
    if not (_PLAIN if quotes else _PLAIN_NO_QUOTES).fullmatch(sql):
        return None
    if _NOT_PLAIN.search(sql):
        return None
    if '"' in sql:
        parts = _QUOTED.split(sql)
        if len(parts) % 2 == 0:  # an odd number of quotes
            return None
        for word in parts[1::2]:
            if not _QUOTED_WORD.fullmatch(word):
                return None
        outside = parts[::2]
        for i, part in enumerate(outside):
            if 0 < i < len(outside) - 1 and not part:
                return None  # `"a""b"`: an escaped quote
            if i and part[:1] in _WORD_CHARS:
                return None  # `"a"b`
            if i < len(outside) - 1 and part[-1:] in _WORD_CHARS:
                return None  # `a"b"`
    from tracetool.sql import bind_as_question_marks

    return bind_as_question_marks(_WS.sub(" ", sql).strip())
