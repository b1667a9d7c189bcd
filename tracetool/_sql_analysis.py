"""Operations and tables of a tokenized SQL text (helper of `tracetool.sql`).

Works on sqlglot tokens reduced to `Tok` (type name, text, source span) so it needs no sqlglot
import and tolerates any dialect: it reads keywords by their upper-cased text, statement by
statement (split at `;`), with a small amount of grammar knowledge per trigger keyword
(FROM, JOIN, INTO, UPDATE, TABLE, REFERENCES, CREATE INDEX … ON, MERGE … USING, PRAGMA). It never
fails: unknown shapes simply yield fewer tables. Table names come only from identifier and word
tokens, never from literals, so they hold no captured data.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, NamedTuple, Optional


class Tok(NamedTuple):
    type: str  # sqlglot TokenType name
    text: str  # token text (identifiers unquoted)
    start: int  # source span, end inclusive
    end: int
    word: str  # upper-cased text of an unquoted word (keyword or name), else ""


_WORD = re.compile(r"[^\W\d][\w$]*\Z")
_TYPE_NAMES: dict[Any, str] = {}
# token text -> its `word`, for keywords, names and punctuation, which repeat across statements
# (not literals: their texts rarely repeat and would fill it)
_WORDS: dict[str, str] = {}
_WORDS_MAX = 16384
_UNCACHED = frozenset(
    "STRING NATIONAL_STRING BIT_STRING HEX_STRING BYTE_STRING RAW_STRING HEREDOC_STRING "
    "UNICODE_STRING NUMBER".split()
)
_new_tok = tuple.__new__  # (a NamedTuple's own constructor is a Python function, ~2x slower)


def to_toks(raw: Iterable[Any]) -> list[Tok]:
    """sqlglot tokens -> `Tok`s (type names cached: enum `.name` lookups are slow)."""
    names = _TYPE_NAMES
    words = _WORDS
    new = _new_tok
    toks: list[Tok] = []
    append = toks.append
    for t in raw:
        kind = t.token_type
        name = names.get(kind)
        if name is None:
            name = names[kind] = kind.name
        text = t.text
        if name == "IDENTIFIER":
            word = ""
        else:
            word = words.get(text)  # type: ignore[assignment]
            if word is None:
                word = text.upper() if _WORD.match(text) else ""
                if name not in _UNCACHED and len(words) < _WORDS_MAX and len(text) <= 64:
                    words[text] = word
        append(new(Tok, (name, text, t.start, t.end, word)))
    return toks


# Words that end a table reference (never a table name or alias when unquoted).
_STOP = frozenset(
    """SELECT WHERE SET VALUES VALUE ON USING JOIN LEFT RIGHT INNER OUTER FULL CROSS NATURAL GROUP
    ORDER LIMIT OFFSET HAVING UNION EXCEPT INTERSECT MINUS WINDOW AS LATERAL ONLY IF NOT EXISTS
    RETURNING DEFAULT FOR WITH FROM INTO TABLE UPDATE DELETE INSERT AND OR WHEN THEN ELSE END CASE
    NULL TRUE FALSE FETCH QUALIFY PARTITION STRAIGHT_JOIN OUTFILE DUMPFILE ADD DROP ALTER RENAME
    COLUMN CONSTRAINT PRIMARY UNIQUE CHECK FOREIGN KEY INDEX TO DO NOTHING CONFLICT TABLESAMPLE
    SAMPLE PIVOT UNPIVOT CONNECT START MATCH_RECOGNIZE OVER FORCE IGNORE USE OUTPUT""".split()
)
# A FROM inside these functions' parentheses is not a table reference.
_FROM_FUNCTIONS = frozenset(("EXTRACT", "SUBSTRING", "SUBSTR", "TRIM", "OVERLAY", "POSITION"))
# Words that may stand between CREATE/DROP/… and TABLE.
_TABLE_LEAD = frozenset(
    """CREATE DROP ALTER TRUNCATE LOCK OR REPLACE TEMP TEMPORARY UNLOGGED GLOBAL LOCAL VIRTUAL
    EXTERNAL TRANSIENT VOLATILE MULTISET SET IF NOT EXISTS""".split()
)
_PRAGMA_TABLE_FUNCTIONS = frozenset(
    ("TABLE_INFO", "TABLE_XINFO", "INDEX_LIST", "FOREIGN_KEY_LIST", "FOREIGN_KEY_CHECK")
)
# First word of a statement -> operation. Anything else is "other".
_OPERATIONS = {
    "SELECT": "select",
    "VALUES": "select",
    "TABLE": "select",
    "INSERT": "insert",
    "REPLACE": "insert",
    "UPSERT": "insert",
    "UPDATE": "update",
    "DELETE": "delete",
    "MERGE": "merge",
    "CREATE": "create",
    "DROP": "drop",
    "ALTER": "alter",
    "TRUNCATE": "truncate",
    "RENAME": "alter",
    "BEGIN": "begin",
    "START": "begin",
    "COMMIT": "commit",
    "END": "commit",
    "ROLLBACK": "rollback",
    "ABORT": "rollback",
    "SAVEPOINT": "savepoint",
    "RELEASE": "release",
    "PRAGMA": "pragma",
    "EXPLAIN": "explain",
    "DESCRIBE": "explain",
    "DESC": "explain",
    "SHOW": "show",
    "SET": "set",
    "RESET": "set",
    "USE": "use",
    "DECLARE": "declare",
    "FETCH": "fetch",
    "CLOSE": "close",
    "MOVE": "fetch",
    "COPY": "copy",
    "VACUUM": "vacuum",
    "ANALYZE": "analyze",
    "REINDEX": "reindex",
    "GRANT": "grant",
    "REVOKE": "revoke",
    "CALL": "call",
    "EXEC": "execute",
    "EXECUTE": "execute",
    "PREPARE": "prepare",
    "DEALLOCATE": "deallocate",
    "LOCK": "lock",
    "UNLOCK": "lock",
    "LISTEN": "listen",
    "NOTIFY": "notify",
    "UNLISTEN": "listen",
    "COMMENT": "comment",
    "REFRESH": "refresh",
    "ATTACH": "attach",
    "DETACH": "detach",
}


def _word(tok: Tok) -> str:
    return tok.word


def _skip_group(toks: list[Tok], i: int) -> int:
    """toks[i] opens a parenthesis; return the index after its match (or the end)."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].type == "L_PAREN":
            depth += 1
        elif toks[j].type == "R_PAREN":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(toks)


def _name_part(tok: Tok) -> Optional[str]:
    if tok.type == "IDENTIFIER":
        return tok.text.lower() or None
    word = _word(tok)
    if word and word not in _STOP:
        return tok.text.lower()
    return None


def _read_name(toks: list[Tok], i: int) -> tuple[Optional[str], int]:
    """A possibly qualified name at toks[i]: (`schema.table`, index after it) or (None, i)."""
    if i >= len(toks):
        return None, i
    first = _name_part(toks[i])
    if first is None:
        return None, i
    parts = [first]
    j = i + 1
    while j + 1 < len(toks) and toks[j].type == "DOT":
        part = _name_part(toks[j + 1])
        if part is None:
            break
        parts.append(part)
        j += 2
    return ".".join(parts), j


def _skip_words(toks: list[Tok], i: int, words: frozenset[str]) -> int:
    while i < len(toks) and _word(toks[i]) in words:
        i += 1
    return i


def _skip_alias(toks: list[Tok], i: int) -> int:
    if i < len(toks) and _word(toks[i]) == "AS":
        i += 1
    if i < len(toks) and _name_part(toks[i]) is not None:
        i += 1
        if i < len(toks) and toks[i].type == "L_PAREN":  # alias column list
            i = _skip_group(toks, i)
    return i


_REF_PREFIX = frozenset(("ONLY", "LATERAL"))


def _read_refs(toks: list[Tok], i: int, out: set[str], many: bool, source: bool = False) -> None:
    """Table references at toks[i] (a comma list when `many`).

    In a `source` position (FROM, JOIN) `name(` is a table function and skipped; elsewhere
    (INTO, TABLE, REFERENCES, ON) the parenthesis is a column list after a table.
    """
    while i < len(toks):
        i = _skip_words(toks, i, _REF_PREFIX)
        if i < len(toks) and toks[i].type == "L_PAREN":
            i = _skip_alias(toks, _skip_group(toks, i))  # subquery: read by the outer pass
        else:
            name, j = _read_name(toks, i)
            if name is None:
                return
            if j < len(toks) and toks[j].type == "L_PAREN":
                j = _skip_group(toks, j)
                if not source:
                    out.add(name)
                # else generate_series(…), unnest(…): not a table
            else:
                out.add(name)
            i = _skip_alias(toks, j)
        if not many or i >= len(toks) or toks[i].type != "COMMA":
            return
        i += 1


def _cte_names(toks: list[Tok], i: int, out: set[str]) -> int:
    """toks[i] is WITH: collect its CTE names; return the index of the main statement."""
    i = _skip_words(toks, i + 1, frozenset(("RECURSIVE",)))
    while i < len(toks):
        name, i = _read_name(toks, i)
        if name is None:
            return i
        out.add(name)
        if i < len(toks) and toks[i].type == "L_PAREN":
            i = _skip_group(toks, i)
        i = _skip_words(toks, i, frozenset(("AS", "NOT", "MATERIALIZED")))
        if i < len(toks) and toks[i].type == "L_PAREN":
            i = _skip_group(toks, i)
        if i < len(toks) and toks[i].type == "COMMA":
            i += 1
            continue
        return i
    return i


def _main_index(toks: list[Tok]) -> int:
    """Index of the word that says what the statement does (past `(`, WITH …, DECLARE … FOR)."""
    i = 0
    while i < len(toks) and toks[i].type == "L_PAREN":
        i += 1
    if i < len(toks) and _word(toks[i]) == "WITH":
        i = _cte_names(toks, i, set())
    if i < len(toks) and _word(toks[i]) == "DECLARE":
        # DECLARE name [BINARY] [INSENSITIVE] [[NO] SCROLL] CURSOR [WITH[OUT] HOLD] FOR <query>
        words = [_word(t) for t in toks[i : i + 12]]
        if "CURSOR" in words and "FOR" in words[words.index("CURSOR") :]:
            j = i + words.index("CURSOR")
            while _word(toks[j]) != "FOR":
                j += 1
            return _main_index(toks[j + 1 :]) + j + 1
    while i < len(toks) and toks[i].type == "L_PAREN":
        i += 1
    return i


# The words `_statement` acts on (besides those ending in `_JOIN`).
_TRIGGERS = (
    frozenset("WITH FROM JOIN INTO UPDATE TABLE TABLES TRUNCATE REFERENCES ON USING".split())
    | _PRAGMA_TABLE_FUNCTIONS
)


def _statement(toks: list[Tok], tables: set[str], ctes: set[str]) -> str:
    """Add the statement's tables and CTE names to the sets; return its operation."""
    main = _main_index(toks)
    lead = _word(toks[main]) if main < len(toks) else ""
    operation = _OPERATIONS.get(lead, "other")
    depth_opener: list[str] = []  # word before each open parenthesis
    for i, tok in enumerate(toks):
        kind = tok.type
        if kind == "L_PAREN":
            depth_opener.append(toks[i - 1].word if i else "")
            continue
        if kind == "R_PAREN":
            if depth_opener:
                depth_opener.pop()
            continue
        word = tok.word
        if not word or (word not in _TRIGGERS and not word.endswith("_JOIN")):
            continue  # (no branch below takes it: most words)
        if word == "WITH":
            _cte_names(toks, i, ctes)
        elif word == "FROM":
            in_function = bool(depth_opener) and depth_opener[-1] in _FROM_FUNCTIONS
            if not in_function and (not i or toks[i - 1].word != "DISTINCT"):
                _read_refs(toks, i + 1, tables, many=True, source=True)
        elif word == "JOIN" or word.endswith("_JOIN"):
            _read_refs(toks, i + 1, tables, many=False, source=True)
        elif word == "INTO":
            _read_refs(toks, _skip_words(toks, i + 1, frozenset(("TABLE",))), tables, False)
        elif word == "UPDATE" and i == main:
            skip = frozenset(("ONLY", "LOW_PRIORITY", "IGNORE"))
            j = _skip_words(toks, i + 1, skip)
            if j < len(toks) and _word(toks[j]) == "OR":  # sqlite UPDATE OR REPLACE t
                j += 2
            _read_refs(toks, j, tables, many=True)
        elif word in ("TABLE", "TABLES") and all(_word(t) in _TABLE_LEAD for t in toks[main:i]):
            j = _skip_words(toks, i + 1, frozenset(("IF", "NOT", "EXISTS", "ONLY")))
            _read_refs(toks, j, tables, many=lead in ("DROP", "LOCK", "TRUNCATE"))
        elif word == "TRUNCATE" and i == main:
            _read_refs(toks, _skip_words(toks, i + 1, frozenset(("ONLY",))), tables, True)
        elif word == "REFERENCES":
            _read_refs(toks, i + 1, tables, many=False)
        elif word == "ON" and lead == "CREATE" and not depth_opener:
            if "INDEX" in (_word(t) for t in toks[main:i]):
                _read_refs(toks, i + 1, tables, many=False)
        elif word == "USING" and lead == "MERGE" and not depth_opener:
            _read_refs(toks, i + 1, tables, many=False, source=True)
        elif word in _PRAGMA_TABLE_FUNCTIONS and lead == "PRAGMA":
            j = i + 1
            if j + 1 < len(toks) and toks[j].type == "L_PAREN":
                name, _ = _read_name(toks, j + 1)  # a quoted-string argument is not read
                if name:
                    tables.add(name)
    return operation


def operations_and_tables(toks: list[Tok]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(operations of the statements in order, without repeats; sorted unique tables)."""
    operations: list[str] = []
    tables: set[str] = set()
    ctes: set[str] = set()
    start = 0
    ends = [i for i, t in enumerate(toks) if t.type == "SEMICOLON"]
    if not ends:  # one statement (most texts): no copy
        operation = _statement(toks, tables, ctes) if toks else ""
        return ((operation,) if toks else ()), tuple(sorted(tables - ctes))
    for end in [*ends, len(toks)]:
        statement = toks[start:end]
        start = end + 1
        if not statement:
            continue
        operation = _statement(statement, tables, ctes)
        if operation not in operations:
            operations.append(operation)
    return tuple(operations), tuple(sorted(tables - ctes))
