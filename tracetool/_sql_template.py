"""Literal-insensitive keys for SQL analyses (helper of `tracetool.sql`).

Contract:

- `template(sql)` returns `sql` with some of its literals replaced by a marker, or None when the
  text is not templated at all. Two texts with one template (and one `database_type`) have the
  same `tracetool.sql.analyze` result whenever that of one of them is reliable (the tokenizer
  read it), so an analysis is reused for every text of its template: an ORM's statements differ
  mostly in LIMIT/OFFSET numbers and other literals (1,000 generated recordings: 6,947 texts,
  323 templates), and tokenizing one costs ~0.2 ms, the template ~10 µs.
- Replaced: a run of ASCII digits between two characters of `_BEFORE_NUMBER` / `_AFTER_NUMBER`
  (or the ends of the text); a non-empty `'…'` whose content holds no quote and does not read as
  a word (`_WORD`, the test `tracetool._sql_analysis.to_toks` makes), after a character of
  `_BEFORE_STRING` (or at the start) and not followed by another quote. Everything else is kept
  as written, so it is part of the key.
- Why the analysis cannot tell such texts apart: the text holds no comment marker, backslash,
  backtick, bracket, brace, dollar quote, triple quote or prefixed string (a quote after a
  letter, `&`, `:`…: `E'…'`, `q'!…!'`, which may end elsewhere than at the next quote) — such a
  text is not templated — so every dialect's tokenizer reads it as the scan here does: each
  `'…'` or `"…"` string or name is one run from a quote to the next one of its kind, or several
  such runs side by side (a doubled quote, `'it''s'`: those runs are kept as written). The
  replaced runs are then one NUMBER (not glued to a placeholder prefix, a word, a dot or a sign
  of an exponent) or one STRING token. The token sequences of the two texts then
  differ only in those tokens' text and source spans; the analysis reads a NUMBER's text only
  after a placeholder prefix glued to it, a STRING's only as a keyword-like word (excluded
  above), spans only as gaps and glued pairs (the same: the characters around a run are kept),
  and writes every such token as `?`. DDL (CREATE, ALTER anywhere in the text) is never
  templated: its numbers are type sizes (`VARCHAR(255)`), not values.
- tests/test_sql_template.py checks this against the tokenizer: every statement of the shared
  corpus, hand-written edge cases and generated statements in several dialects, each with its
  literals changed.
"""

from __future__ import annotations

from typing import Optional

from tracetool.lazyre import lazy

# A text with any of these is not templated (module doc); \x01 and \x02 are the markers.
_UNSAFE = lazy(
    r"--|/\*|\*/|[#`\[\]{}\\\x01\x02]|\$(?![0-9])|\$[0-9]+\$|'''|\"\"\""
    r"|(?i:\b(?:create|alter)\b)"
)
# `template` finds what `_UNSAFE` would by substring tests first (much cheaper than the whole
# regex on every text): these pieces, then its `$` and DDL parts.
_UNSAFE_PIECES = (
    "--",
    "/*",
    "*/",
    "#",
    "`",
    "[",
    "]",
    "{",
    "}",
    "\\",
    "\x01",
    "\x02",
    "'''",
    '"""',
)
_UNSAFE_DOLLAR = lazy(r"\$(?![0-9])|\$[0-9]+\$")
_UNSAFE_DDL = lazy(r"(?i:\b(?:create|alter)\b)")
# `tracetool._sql_analysis.to_toks`: a token text matching this has a keyword-like `word`.
_WORD = lazy(r"[^\W\d][\w$]*\Z")
_BEFORE_STRING = frozenset(" \t\r\n(,=<>")
# What may stand before any quote: anything else (a letter, `&`, `:`...) may be a prefix that
# makes another kind of string (Oracle's `q'!...!'` ends at `!'`, not at the next quote).
_BEFORE_QUOTE = _BEFORE_STRING | frozenset("+-*/|;!'")
_BEFORE_NAME = _BEFORE_QUOTE | frozenset('."')
_BEFORE_NUMBER = frozenset(" \t\r\n(,=<>+-*/")
_AFTER_NUMBER = frozenset(" \t\r\n),;=<>+-*/")
# The units the scan reads: strings (group 1: the content), digit runs (2), an unterminated
# quote or a quoted name after a character not in `_BEFORE_NAME` (3: not templated), the end.
# What lies between them is skipped inside the regex: characters that start no unit, and
# `"…"` names after a character of `_BEFORE_NAME` (or at the start), kept as written.
_UNITS = lazy(
    r"(?:[^'\"0-9]++|(?:\A|(?<=[ \t\r\n(,=<>+\-*/|;!'.\"]))\"[^\"]*+\")*+"
    r"(?:'([^']*+)'|([0-9]++)|(['\"])|\Z)"
)
STRING_MARK = "\x01"
NUMBER_MARK = "\x02"


def template(sql: str) -> Optional[str]:
    """The text with its replaceable literals marked, or None (module doc)."""
    for piece in _UNSAFE_PIECES:
        if piece in sql:
            return None
    if "$" in sql and _UNSAFE_DOLLAR.search(sql):
        return None
    lowered = sql.lower()
    if ("reate" in lowered or "lter" in lowered) and _UNSAFE_DDL.search(sql):
        return None
    out: list[str] = []
    pos, n = 0, len(sql)
    for m in _UNITS.finditer(sql):
        kind = m.lastindex
        if kind is None:
            break  # the end
        if kind == 3:
            return None  # an unterminated quote, or a prefixed name (`r"..."`)
        if kind == 1:
            start, end = m.span(1)
            start, end = start - 1, end + 1
        else:
            start, end = m.span(2)
        before = sql[start - 1] if start else " "
        after = sql[end] if end < n else " "
        if kind == 1:
            if before not in _BEFORE_QUOTE:
                return None  # a prefixed string: `E'...'`, `X'...'`, `q'!...!'`
            content = m.group(1)
            if not content or before not in _BEFORE_STRING or after == "'" or _WORD.match(content):
                continue
            mark = STRING_MARK
        else:
            if before not in _BEFORE_NUMBER or (end < n and after not in _AFTER_NUMBER):
                continue
            mark = NUMBER_MARK
        out.append(sql[pos:start])
        out.append(mark)
        pos = end
    if not out:
        return sql
    out.append(sql[pos:])
    return "".join(out)
