"""SQL normalization, parameterization and analysis (tables, operations).

Contract:

- `analyze(sql, database_type)` returns a `SqlInfo`: the *parameterized* statement (every literal
  replaced by `?`, comments removed, whitespace runs collapsed to one space, stripped), the
  *normalized* statement (the parameterized one with every bind placeholder written `?`, see
  below), whether that result is *reliable*, the primary *operation* and the *tables* the
  statement names.
- The parameterized text is spliced from the user's own text at the positions of sqlglot's
  tokenizer tokens (dialect chosen from AppMap's `database_type`); SQL is never regenerated from
  an AST, so casing, quoting and placeholders (`$1`, `?`, `?1`, `:name`, `@p1`, `%s`,
  `%(name)s`) stay as written: sanitize keeps this form (`parameterize`). Quoted identifiers
  (`"x"`, `` `x` ``, `[x]`) are never masked.
- The normalized text is what groups statements (query code objects, hotspots, N+1, `query:`
  identifiers): every DB-API paramstyle is one query, so the placeholders `$1`, `?1`, `%s`,
  `%(name)s`, `:name`, `@p1` become `?`, and a cast glued to such a placeholder goes with it
  (`$1::VARCHAR`, `$2::int[]` → `?`; a cast after a literal stays: `'x'::regclass` → `?::regclass`): Django's `%s`, asyncpg's `$1::VARCHAR`,
  SQLAlchemy's `?`/`:name` and psycopg's `%(name)s` spellings of a statement normalize to one
  text. `normalize(sql)` returns it; `same_query(a, b)` also ignores keyword case.
- Literals are strings of every flavour (`'…'`, `E'…'`, `N'…'`, `X'…'`, `B'…'`, `U&'…'`, `q'[…]'`,
  `$$…$$`, `$tag$…$tag$`), numbers (a sign directly after an operator belongs to the number:
  `= -5` → `= ?`), hex numbers, TRUE, FALSE and NULL. One `?` per literal: `IN (1, 2)` → `IN (?, ?)`.
  NULL/TRUE/FALSE directly after `IS`, `IS NOT`, `NOT` or `DEFAULT`, and anywhere in a DDL
  statement (`CREATE`, `ALTER`), are syntax, not values, and are kept (`x IS NULL`,
  `a INT NULL DEFAULT NULL`) — AppMap masks those too; we deliberately do not. Numbers in
  DDL are literals too (`varchar(255)` → `varchar(?)`), as in AppMap. Optimizer hints
  (`/*+ … */`) are comments and go.
- `reliable` is conservative, because `sanitize` keeps a statement only when it is True. It is
  False when the tokenizer fails (unterminated quote or comment, …); when anything but whitespace
  and comments lies between tokens; when a quote, backslash, comment marker (`--`, `/*`, `*/`,
  `#` outside Postgres), stray `$` or digit-led word survives outside quoted identifiers; when a
  literal touches a word (a sign of a string the dialect misread, e.g. MySQL `\\'` escapes read
  as standard SQL); or when a quoted identifier holds what no name would (a `'`, a line break, a
  comment marker, edge spaces). Without sqlglot installed nothing is reliable. An unreliable
  result still carries best-effort normalized text (regex masking when tokenizing failed).
- SQLite reads a double-quoted word as a string when no column has that name (`email =
  "bob@x.io"`). For `database_type` sqlite a `"…"` is therefore a literal (masked) in a value
  position — after a comparison or arithmetic operator, LIKE/GLOB/IS/BETWEEN, THEN/ELSE, DEFAULT,
  LIMIT/OFFSET, or in a VALUES or IN list — and a name where only a name can stand — next to a
  `.` (`"t"."c"`), after FROM/JOIN/INTO/UPDATE/TABLE/INDEX/VIEW/TRIGGER/EXISTS/REFERENCES/AS/
  BY/ON/TO/RETURNING, before `=` in a SET list, in the column list after a table name
  (`INSERT INTO "t" ("a")`, `CREATE TABLE "t" ("a" …)`, `PRIMARY KEY ("a")`). Anywhere else
  (a select list, a function argument, a WHERE operand on the left) it could be either: it is
  kept as written and the statement is not reliable. Other dialects read `"…"` as a name.
- Text that is not SQL is not reliable: a statement whose first word is no SQL statement
  (`AUTH s3cret`, `GET key`, garbage), a SET (or PRAGMA) that assigns a bare word (`SET
  my.api_key = sk_live_1`, `SET NAMES utf8`), and a bare word after `IDENTIFIED BY` or
  `PASSWORD` (a password written without quotes).
- Tables are lower-cased and unquoted, `schema.table` kept when given, CTE names excluded; they
  come from FROM/JOIN/INTO/UPDATE/TABLE/REFERENCES/CREATE INDEX … ON/PRAGMA table_info(…) and
  never contain literal text. `operation` is that of the first statement; for `WITH …` and for
  `DECLARE … CURSOR FOR …` it is the operation of the statement they wrap. `operations` lists
  the operation of every `;`-separated statement, in order, without repeats.

sqlglot is imported lazily; importing this module stays cheap (the agent may import it).
An analysis is reused for every text of its template (`tracetool._sql_template`: the text with
its value literals marked, which provably leaves the analysis unchanged), so the statements an ORM
writes with other LIMIT/OFFSET numbers or string values are tokenized once. Analyses made before
can be handed back (`seeded`, a block in which `analyze` returns them
without tokenizing) and the ones made anew collected (`computed`): the index keeps them on disk
(`tracetool.index.sqlcache`).
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
from collections.abc import Iterator
from typing import Any, Optional, Protocol

from tracetool._sql_analysis import Tok, operations_and_tables, to_toks
from tracetool._sql_plain import plain_normalized
from tracetool._sql_template import template
from tracetool.lazyre import lazy
from tracetool.records import FrozenRecord

__all__ = ["SqlInfo", "analyze", "dialect_for", "normalize", "parameterize", "same_query"]


class SqlInfo(FrozenRecord):
    """What one SQL text is: its parameterized form, how far to trust it, what it touches.

    (A frozen record, as the frozen dataclass it was: equal, hashable, the same repr.)"""

    _fields = ("normalized", "reliable", "operation", "tables", "operations", "parameterized")
    normalized: str
    reliable: bool
    operation: str
    tables: tuple[str, ...]
    # Operation of every statement, in order, without repeats (`operation` is the first one).
    operations: tuple[str, ...]
    # Literals masked, bind placeholders as written (`$1::VARCHAR`, `%s`): what sanitize keeps.
    parameterized: str

    def __init__(
        self,
        normalized: str,
        reliable: bool,
        operation: str,
        tables: tuple[str, ...],
        operations: tuple[str, ...] = (),
        parameterized: str = "",
    ) -> None:
        fields = self.__dict__
        fields["normalized"] = normalized
        fields["reliable"] = reliable
        fields["operation"] = operation
        fields["tables"] = tables
        fields["operations"] = operations
        fields["parameterized"] = parameterized


# AppMap database_type values (Ruby adapter names, Python driver names, JDBC product names), by
# the sqlglot dialect they map to; matching is on the lower-cased value, see dialect_for().
_ALIASES = {
    "sqlite": "sqlite|sqlite3|spatialite",
    "postgres": "postgres|postgresql|pg|postgis|psycopg|psycopg2|cockroachdb",
    "mysql": "mysql|mysql2|mariadb|trilogy|pymysql|mysqldb",
    "oracle": "oracle|oracle_enhanced|oracledb|cx_oracle",
    "tsql": "mssql|sqlserver|sql server|microsoft sql server|tsql|pyodbc",
    # No sqlglot dialect for these Java engines; ANSI-ish generic tokenizing suits them.
    "": "h2|hsqldb|hsql database engine|derby|apache derby",
}
_DIALECTS = {alias: d or None for d, names in _ALIASES.items() for alias in names.split("|")}
# sqlglot dialects whose own name may arrive as database_type.
_PASSTHROUGH = frozenset(
    "athena bigquery clickhouse databricks doris drill duckdb hive materialize presto redshift "
    "risingwave snowflake spark starrocks teradata trino".split()
)
# Substrings of product names (JDBC `getDatabaseProductName`, DB-API module names).
_CONTAINS = (
    ("postgres", "postgres"),
    ("sqlite", "sqlite"),
    ("mysql", "mysql"),
    ("mariadb", "mysql"),
    ("oracle", "oracle"),
    ("sql server", "tsql"),
)


@functools.lru_cache(maxsize=256)
def dialect_for(database_type: Optional[str]) -> Optional[str]:
    """The sqlglot dialect name for an AppMap `database_type`; None means the generic dialect."""
    if not database_type:
        return None
    key = database_type.strip().lower()
    if key in _DIALECTS:
        return _DIALECTS[key]
    if key in _PASSTHROUGH:
        return key
    for needle, dialect in _CONTAINS:
        if needle in key:
            return dialect
    return None


# Token type names (strings, so no sqlglot import is needed here and renamed enum members in other
# sqlglot versions cannot break the import).
_STRING_TYPES = frozenset(
    "STRING NATIONAL_STRING BIT_STRING HEX_STRING BYTE_STRING RAW_STRING HEREDOC_STRING "
    "UNICODE_STRING".split()
)
_VALUE_KEYWORDS = frozenset(("TRUE", "FALSE", "NULL"))
_LITERAL_TYPES = _STRING_TYPES | _VALUE_KEYWORDS | {"NUMBER"}
_NUMBER_STARTS = frozenset(("DASH", "PLUS", "DOT"))
# Tokens after which a number cannot be a literal: it is part of a placeholder ($1, ?1, :1, @1).
_PLACEHOLDER_PREFIXES = frozenset(("PARAMETER", "PLACEHOLDER", "COLON"))
# After these, `-5` is a negative number, not a subtraction.
_SIGN_CONTEXT_WORDS = frozenset(
    "SELECT WHERE AND OR NOT THEN ELSE WHEN IN LIMIT OFFSET VALUES SET RETURN IS LIKE ILIKE "
    "BETWEEN ON HAVING CASE DEFAULT BY TOP FETCH".split()
)
_VALUE_ENDING_TYPES = frozenset(("VAR", "IDENTIFIER", "R_PAREN", "R_BRACKET", "R_BRACE"))
_WORD = lazy(r"[^\W\d][\w$]*\Z")
_SURVIVOR = lazy(r"['\"`\\]|--|/\*|\*/")
_DIGIT_WORD = lazy(r"(?<![\w$:?@.])\d+(?![\w.])")
_WS = lazy(r"\s+")
_DOLLAR_PLACEHOLDER = lazy(r"\$(?:\d+|[^\W\d]\w*)\Z")
_ALNUM = lazy(r"\w+\Z")
# sqlglot calls some unquoted words IDENTIFIER too (`0x5Gq`); only quoted ones are exempt.
_IDENTIFIER_QUOTES = frozenset('"`[')
_ODD_IDENTIFIER = lazy(r"['\r\n]|--|/\*|\*/|\A\s|\s\Z")
_DOLLAR_WORD = lazy(r"[^\W\d]\w*(?:\$\w+)*\Z")


def _blank(gap: str, mysql: bool) -> bool:
    """Whether `gap` (text between two tokens) holds only whitespace and comments.

    A hand-written scan rather than a regex: nested quantifiers over comments backtrack
    exponentially on a long gap that fails to match.
    """
    if gap.isspace():
        return True
    i, n = 0, len(gap)
    while i < n:
        if gap[i].isspace():
            i += 1
        elif gap.startswith("--", i) or (mysql and gap[i] == "#"):
            end = gap.find("\n", i)
            i = n if end < 0 else end + 1
        elif gap.startswith("/*", i):
            end = gap.find("*/", i + 2)
            if end < 0:
                return False
            i = end + 2
        else:
            return False
    return True


_local = threading.local()


def _tokenizer(dialect: Optional[str]) -> Any:
    """A per-thread tokenizer for `dialect` (sqlglot tokenizers keep state while tokenizing)."""
    cache = getattr(_local, "tokenizers", None)
    if cache is None:
        cache = _local.tokenizers = {}
    tokenizer = cache.get(dialect)
    if tokenizer is None:
        from sqlglot.dialects.dialect import Dialect

        try:
            d = Dialect.get_or_raise(dialect)
        except Exception:  # a dialect this sqlglot version lacks: generic tokenizing
            d = Dialect.get_or_raise(None)
        base = d.tokenizer_class
        # Without COMMANDS the tokenizer tokenizes DECLARE/EXPLAIN/CALL/SHOW statements fully
        # instead of folding their rest into one synthetic string token.
        cls = type("_Tracetool" + base.__name__, (base,), {"COMMANDS": set()})
        tokenizer = cache[dialect] = cls(dialect=d)
    return tokenizer


# Texts longer than this are analyzed but not cached: a few multi-megabyte bulk INSERTs must not
# pin gigabytes in a 4096-entry cache.
_CACHE_MAX_CHARS = 65536


class Analyses(Protocol):
    """Analyses made earlier: `get((text, database_type))` is one, or None."""

    def get(self, key: tuple[str, Optional[str]], /) -> Optional[SqlInfo]: ...


# Analyses made earlier, while `seeded` (tracetool.index.sqlcache loads them from disk, so a
# re-index neither imports sqlglot nor tokenizes what it has seen).
_seeded: Optional[Analyses] = None
# While `computed` collects: the analyses made here (not seeded, not from the LRU cache).
_computed: Optional[dict[tuple[str, Optional[str]], SqlInfo]] = None
# While `returned` collects: every analysis `analyze` returned (made, seeded or cached).
_returned: Optional[dict[tuple[Any, Any], SqlInfo]] = None


@contextlib.contextmanager
def seeded(analyses: Analyses) -> Iterator[None]:
    """Inside the block, `analyze` returns these analyses without tokenizing (processes forked
    inside it too); a block inside it replaces them with its own."""
    global _seeded
    outer = _seeded
    _seeded = analyses
    try:
        yield
    finally:
        _seeded = outer


@contextlib.contextmanager
def computed() -> Iterator[dict[tuple[str, Optional[str]], SqlInfo]]:
    """The analyses made inside the block (a cache miss each, by key), filled as it runs."""
    global _computed
    outer = _computed
    found: dict[tuple[str, Optional[str]], SqlInfo] = {}
    _computed = found
    try:
        yield found
    finally:
        _computed = outer
        if outer is not None:
            outer.update(found)


@contextlib.contextmanager
def returned() -> Iterator[dict[tuple[Any, Any], SqlInfo]]:
    """Every analysis `analyze` returned inside the block, by its arguments `(sql,
    database_type)`, filled as it runs: what a later pass over the same statements may read
    instead of asking again (`normalize(sql, database_type)` is the `normalized` text of each)."""
    global _returned
    outer = _returned
    found: dict[tuple[Any, Any], SqlInfo] = {}
    _returned = found
    try:
        yield found
    finally:
        _returned = outer
        if outer is not None:
            outer.update(found)


def analyze(sql: str, database_type: Optional[str] = None) -> SqlInfo:
    """Normalize, parameterize and analyze one SQL text (cached, see `analyze.cache_info()`).

    Never raises: a non-string `sql` (a malformed recording) gives an empty, unreliable result.
    """
    info = _analyze_any(sql, database_type)
    if _returned is not None and sql.__class__ is str and database_type.__class__ in _KEYS:
        _returned[(sql, database_type)] = info
    return info


_KEYS = (str, type(None))  # (the database types `returned` keeps: what recordings hold)


def _analyze_any(sql: str, database_type: Optional[str]) -> SqlInfo:
    if not isinstance(sql, str):
        return SqlInfo("", False, "other", ())
    if len(sql) > _CACHE_MAX_CHARS:
        return _analyze(sql, database_type)
    if _seeded is not None:
        info = _seeded.get((sql, database_type))
        if info is not None:
            return info
    return _analyze_cached(sql, database_type)


# (template, database_type) -> a reliable analysis of a text of that template (see
# `tracetool._sql_template`: every text of the template has that analysis).
_by_template: dict[tuple[str, Optional[str]], SqlInfo] = {}
_TEMPLATES_MAX = 4096


# text -> its template, for recent texts (`sql_template`)
_templates: dict[str, Optional[str]] = {}
_NO_TEMPLATE: Any = object()


def sql_template(sql: str) -> Optional[str]:
    """`tracetool._sql_template.template(sql)`, remembered for recent texts: the index asks it
    of each statement twice (its analysis here, its digest in `tracetool.diagram.digests`,
    through `remembered_template`)."""
    found = _templates.get(sql, _NO_TEMPLATE)
    if found is _NO_TEMPLATE:
        found = template(sql)
        if len(sql) <= _CACHE_MAX_CHARS:
            if len(_templates) >= _TEMPLATES_MAX:
                _templates.clear()
            _templates[sql] = found
    return found  # type: ignore[no-any-return]


def remembered_template(sql: str) -> tuple[bool, Optional[str]]:
    """(True, `sql_template(sql)`) when it was computed lately, else (False, None): never
    computes it."""
    found = _templates.get(sql, _NO_TEMPLATE)
    return (False, None) if found is _NO_TEMPLATE else (True, found)


def _analyze_tracked(sql: str, database_type: Optional[str]) -> SqlInfo:
    key = sql_template(sql)
    info = None if key is None else _by_template.get((key, database_type))
    if info is None:
        info = _analyze(sql, database_type)
        if key is not None and info.reliable:
            if len(_by_template) >= _TEMPLATES_MAX:
                _by_template.clear()
            _by_template[(key, database_type)] = info
    if _computed is not None:
        _computed[(sql, database_type)] = info
    return info


def _analyze(sql: str, database_type: Optional[str]) -> SqlInfo:
    dialect = dialect_for(database_type if isinstance(database_type, str) else None)
    try:
        raw = _tokenizer(dialect).tokenize(sql)
    except Exception:  # TokenError; or ImportError without sqlglot: never trust, still mask
        return _fallback(sql, dialect)
    toks = to_toks(raw)
    strings: frozenset[int] = frozenset()
    ambiguous = False
    if dialect == "sqlite" and '"' in sql:
        strings, ambiguous = _sqlite_strings(sql, toks)
    parameterized, reliable = _splice(sql, toks, dialect, strings)
    ops, tables = operations_and_tables(toks)
    reliable = reliable and not ambiguous and _is_sql(toks, ops)
    return SqlInfo(
        bind_as_question_marks(parameterized),
        reliable,
        ops[0] if ops else "other",
        tables,
        ops,
        parameterized,
    )


_analyze_cached = functools.lru_cache(maxsize=4096)(_analyze_tracked)
analyze.cache_info = _analyze_cached.cache_info  # type: ignore[attr-defined]


def _cache_clear() -> None:
    _analyze_cached.cache_clear()
    _templates.clear()
    _by_template.clear()


analyze.cache_clear = _cache_clear  # type: ignore[attr-defined]


def normalize(sql: str, database_type: Optional[str] = None) -> str:
    """The normalized text of `sql`: literals and placeholders as `?` (module contract).

    Plain statements are normalized without sqlglot (`tracetool._sql_plain`, same text)."""
    if isinstance(sql, str) and len(sql) <= _CACHE_MAX_CHARS:
        plain = _plain(sql, database_type)
        if plain is not None:
            return plain
    return analyze(sql, database_type).normalized


@functools.lru_cache(maxsize=4096)
def _plain(sql: str, database_type: Optional[str]) -> Optional[str]:
    return plain_normalized(
        sql, dialect_for(database_type if isinstance(database_type, str) else None)
    )


def parameterize(sql: str, database_type: Optional[str] = None) -> tuple[str, bool]:
    """(parameterized text, reliable) — sanitize keeps the text only when reliable is True."""
    info = analyze(sql, database_type)
    return info.parameterized, info.reliable


# Quoted identifiers (kept) or a bind placeholder of any paramstyle, or a masked literal `?`,
# with a cast glued to it (`::VARCHAR`, `::int[]`, `::numeric(10, 2)`).
_BIND = re.compile(
    r'("(?:[^"]|"")*"|`[^`]*`|\[[^\]]*\])'  # quoted identifiers: kept
    r"|(\?\d*)(?![\w:])"  # `?` (a qmark or a masked literal: a cast after it is kept), `?1`
    r"|(?:\$\d+|\?\d+|%\(\w+\)s|%s|(?<![:\w]):[A-Za-z_]\w*|@[A-Za-z_]\w*)"
    r"(?:\s*::\s*[A-Za-z_][\w ]*?(?:\([^()]*\))?(?:\[\])*(?=[\s,;)=<>!+\-*/|]|\Z))?"
)


@functools.lru_cache(maxsize=8192)
def bind_as_question_marks(parameterized: str) -> str:
    """Every bind placeholder (and a cast glued to it) written `?` (module contract)."""
    if not any(c in parameterized for c in "$?%:@"):
        return parameterized
    return _BIND.sub(lambda m: m.group(1) or "?", parameterized)  # group 2 `?…` → `?` too


def same_query(a: str, b: str, database_type: Optional[str] = None) -> bool:
    """Whether two SQL texts are one query: equal normalized text, keywords in any case."""
    return normalize(a, database_type).casefold() == normalize(b, database_type).casefold()


def _glued(a: Tok, b: Tok) -> bool:
    return a.end + 1 == b.start


def _ends_value(tok: Tok) -> bool:
    """Whether `tok` can end an operand, making a following `-`, `.` or `:` an operator."""
    if tok.type in _VALUE_ENDING_TYPES or tok.type in _STRING_TYPES or tok.type == "NUMBER":
        return True
    if tok.word:
        return tok.word not in _SIGN_CONTEXT_WORDS
    return tok.type == "PLACEHOLDER"


def _is_literal(toks: list[Tok], i: int) -> bool:
    tok = toks[i]
    if tok.type in _STRING_TYPES:
        return True
    if tok.type == "NUMBER":
        prev = toks[i - 1] if i else None
        if prev is None or not _glued(prev, tok):
            return True
        # `$1`, `?1`, `:1`, `@1`: the number is a placeholder's index. A colon after an operand
        # is a slice (`a[1:2]`), not a placeholder.
        if prev.type not in _PLACEHOLDER_PREFIXES or not tok.text.isdigit():
            return True  # `?1.5` is a placeholder and a number
        if prev.type == "COLON":
            return i >= 2 and _glued(toks[i - 2], prev) and _ends_value(toks[i - 2])
        return False
    if tok.type in _VALUE_KEYWORDS:
        return not i or toks[i - 1].type not in ("IS", "NOT", "DEFAULT")
    return False


def _number_end(toks: list[Tok], i: int) -> int:
    """If toks[i] starts a signed (`-5`) or dotted (`.5`) number, the index of its NUMBER; else -1.

    A sign belongs to the number when glued to it and not following an operand (`= -5`, but
    `a -5` is a subtraction).
    """
    j = i
    if toks[i + 1].type not in ("NUMBER", "DOT"):
        return -1
    if toks[j].type in ("DASH", "PLUS"):
        if i and _ends_value(toks[i - 1]):
            return -1
        j += 1
    if j < len(toks) and toks[j].type == "DOT":
        if j == i and i and _glued(toks[i - 1], toks[i]) and _ends_value(toks[i - 1]):
            return -1  # t.5 is no number
        j += 1
    if j == i or j >= len(toks) or toks[j].type != "NUMBER" or not _is_literal(toks, j):
        return -1
    for k in range(i, j):
        if not _glued(toks[k], toks[k + 1]):
            return -1
    return j


_DDL_STARTS = frozenset(("CREATE", "ALTER"))
# Token types some branch of `_splice` treats apart; any other is kept as written.
_SPLICE_SPECIAL = frozenset(("HINT", "IDENTIFIER", "VAR")) | _NUMBER_STARTS | _LITERAL_TYPES


def _ddl_tokens(toks: list[Tok]) -> list[bool]:
    """Per token: whether it is inside a DDL statement (one that starts with CREATE or ALTER)."""
    out: list[bool] = []
    ddl = start = True
    for tok in toks:
        if start:
            ddl, start = tok.type in _DDL_STARTS, False
        out.append(ddl)
        if tok.type == "SEMICOLON":
            start = True
    return out


def _splice(
    sql: str, toks: list[Tok], dialect: Optional[str], strings: frozenset[int] = frozenset()
) -> tuple[str, bool]:
    """Rebuild the text from the tokens' own source spans, literals as `?`.

    `strings`: indices of identifier tokens that are string literals (SQLite double quotes).
    """
    mysql = dialect == "mysql"
    out: list[str] = []  # the normalized pieces
    put = out.append
    # indices in `out` of the quoted identifiers, blanked out for the survivor check
    quoted_at: list[int] = []
    reliable = True
    pos = 0  # first source position not yet consumed
    space = False  # a gap (whitespace, comments) precedes the next piece
    prev: Optional[Tok] = None  # last token consumed
    prev_literal = False
    i, n = 0, len(toks)
    ddl: Optional[list[bool]] = None  # (made when first needed: only TRUE/FALSE/NULL ask)
    while i < n:
        tok = toks[i]
        kind, text, start, end, _ = tok
        if start < pos or end < start - 1:  # synthetic or overlapping token
            reliable = False
            i += 1
            continue
        if start > pos:
            gap = sql[pos:start]
            if gap != " " and not _blank(gap, mysql):
                reliable = False
            space = True
            glued = False
        else:
            glued = prev is not None
        last = i
        literal = quoted = False
        if kind not in _SPLICE_SPECIAL:  # (the final branch below, taken first: most tokens)
            piece = sql[start : end + 1]
            if piece != text:  # a multi-word keyword such as `GROUP\n BY`
                piece = _WS.sub(" ", piece)
            if (piece[:1].isdigit() or "$" in piece) and _suspicious(tok, piece):
                reliable = False
        elif kind == "HINT":
            piece = ""  # an optimizer hint `/*+ … */` is a comment, and comments go
        elif kind in _NUMBER_STARTS and i + 1 < n and _number_end(toks, i) > i:
            last, piece, literal = _number_end(toks, i), "?", True
        elif strings and i in strings:
            piece, literal = "?", True
        elif (
            kind in _LITERAL_TYPES
            and not (
                kind in _VALUE_KEYWORDS and (ddl := _ddl_tokens(toks) if ddl is None else ddl)[i]
            )
            and _is_literal(toks, i)
        ):
            piece, literal = "?", True
            if glued and prev_literal:
                piece = ""  # a literal the tokenizer split in two: still one `?`
            elif glued and prev is not None and prev.type == "VAR" and kind in _STRING_TYPES:
                # A word glued to a string: a prefix this dialect does not know (x'..', E'..')
                # or a mis-read escape; mask both, and distrust anything but a short prefix.
                if len(prev.text) > 2:
                    reliable = False
                out[-1] = ""
                if quoted_at and quoted_at[-1] == len(out) - 1:
                    quoted_at.pop()
        elif glued and prev_literal and kind == "VAR":
            # A word glued to a literal's end: a number suffix (generic `0x1F`, `1_000`, `3L`)
            # or the tail of a string the dialect did not understand.
            piece, literal = "", True
            if prev is None or prev.type != "NUMBER" or not _ALNUM.match(text):
                reliable = False
        else:
            piece = sql[start : end + 1]
            quoted = kind == "IDENTIFIER" and piece[:1] in _IDENTIFIER_QUOTES
            if quoted:
                if _odd_identifier(piece):
                    reliable = False
            else:
                if piece != text:  # a multi-word keyword such as `GROUP\n BY`
                    piece = _WS.sub(" ", piece)
                if (
                    kind != "NUMBER"  # (a kept NUMBER is `$1`'s 1)
                    and (piece[:1].isdigit() or "$" in piece)  # (else never suspicious)
                    and _suspicious(tok, piece)
                ):
                    reliable = False
        if piece:
            if space and out:
                put(" ")
            space = False
            if quoted:
                quoted_at.append(len(out))
            put(piece)
        if last != i:
            tok = toks[last]
        prev, prev_literal = tok, literal
        pos = tok.end + 1
        i = last + 1
    tail = sql[pos:]
    if tail and not _blank(tail, mysql):
        reliable = False
    text = "".join(out)
    if reliable:
        if quoted_at:
            for k in quoted_at:
                out[k] = "_"
            plain = "".join(out)
        else:
            plain = text
        if _survivors(plain, dialect):
            reliable = False
    return text, reliable


# SQLite double quotes (module doc): what stands before a `"…"` that makes it a name or a value.
_NAME_AFTER_WORDS = frozenset(
    "FROM JOIN INTO UPDATE TABLE INDEX VIEW TRIGGER EXISTS REFERENCES AS BY ON TO RETURNING".split()
)
_NAME_AFTER_TYPES = frozenset(("ORDER_BY", "GROUP_BY", "PARTITION_BY", "ALIAS"))
_VALUE_AFTER_TYPES = frozenset(
    "EQ NEQ LT GT LTE GTE NULLSAFE_EQ LIKE ILIKE GLOB IS NOT BETWEEN THEN ELSE DEFAULT DPIPE PLUS "
    "DASH SLASH MOD STAR ESCAPE LIMIT OFFSET".split()
)
_NAME_LIST_BEFORE = frozenset(("INTO", "TABLE", "EXISTS", "REFERENCES", "ON", "PRAGMA"))
_NAME_PART_TYPES = frozenset(("IDENTIFIER", "VAR", "DOT"))


def _paren_kind(toks: list[Tok], i: int, values_clause: bool, depth: int) -> str:
    """What the parenthesis at toks[i] holds: "values", "names" or "other"."""
    if not i:
        return "other"
    prev = toks[i - 1]
    if prev.word in ("VALUES", "IN"):
        return "values"
    if prev.type == "COMMA" and values_clause and depth == 0:
        return "values"  # VALUES (…), (…)
    if prev.word in ("KEY", "UNIQUE"):
        return "names"  # PRIMARY KEY (…), UNIQUE (…), FOREIGN KEY (…)
    j = i - 1
    while j >= 0 and toks[j].type in _NAME_PART_TYPES and toks[j].word not in _NAME_AFTER_WORDS:
        j -= 1
    if j < i - 1 and j >= 0 and toks[j].word in _NAME_LIST_BEFORE:
        return "names"  # INSERT INTO "t" (…), CREATE TABLE t (…), PRAGMA table_info(…)
    return "other"


def _sqlite_strings(sql: str, toks: list[Tok]) -> tuple[frozenset[int], bool]:
    """SQLite `"…"` tokens read as strings (module doc): (their indices, any ambiguous one)."""
    strings: set[int] = set()
    ambiguous = False
    parens: list[str] = []
    values_clause = False
    n = len(toks)
    for i, tok in enumerate(toks):
        kind = tok.type
        if kind == "L_PAREN":
            parens.append(_paren_kind(toks, i, values_clause, len(parens)))
            continue
        if kind == "R_PAREN":
            if parens:
                parens.pop()
            continue
        if kind == "SEMICOLON":
            parens.clear()
            values_clause = False
            continue
        if tok.word == "VALUES":
            values_clause = True
        elif tok.word in ("SELECT", "ON", "RETURNING", "WHERE") and not parens:
            values_clause = False
        if kind != "IDENTIFIER" or sql[tok.start : tok.start + 1] != '"':
            continue
        prev = toks[i - 1] if i else None
        after = toks[i + 1] if i + 1 < n else None
        if (prev is not None and prev.type == "DOT") or (after is not None and after.type == "DOT"):
            continue  # "t"."c"
        if prev is None:
            ambiguous = True
            continue
        if prev.word in _NAME_AFTER_WORDS or prev.type in _NAME_AFTER_TYPES:
            continue
        if prev.type in ("SET", "COMMA") and after is not None and after.type == "EQ":
            continue  # SET "a" = ?, "b" = ?
        if prev.type in ("L_PAREN", "COMMA") and parens and parens[-1] != "other":
            if parens[-1] == "values":
                strings.add(i)
            continue
        if prev.type in _VALUE_AFTER_TYPES:
            strings.add(i)
            continue
        ambiguous = True
    return frozenset(strings), ambiguous


# Words that may follow `=` / TO in a SET or PRAGMA; any other bare word there is a value.
_SETTING_WORDS = frozenset(("ON", "OFF", "DEFAULT", "TRUE", "FALSE", "NULL", "LOCAL"))
_PASSWORD_WORDS = frozenset(("PASSWORD", "IDENTIFIED"))


def _is_sql(toks: list[Tok], ops: tuple[str, ...]) -> bool:
    """Whether the text reads as SQL whose kept words hold no value (module doc)."""
    if not ops or "other" in ops:
        return False
    start = 0
    ends = [i for i, t in enumerate(toks) if t.type == "SEMICOLON"] + [len(toks)]
    for end in ends:
        statement = toks[start:end]
        start = end + 1
        if not statement:
            continue
        for i, tok in enumerate(statement):
            if tok.word in _PASSWORD_WORDS:
                j = i + 1
                if j < len(statement) and statement[j].word == "BY":
                    j += 1
                if j < len(statement) and statement[j].type in ("VAR", "IDENTIFIER"):
                    return False
        lead = statement[0].word
        if lead == "SET" or (lead == "PRAGMA" and any(t.type == "EQ" for t in statement)):
            at = next(
                (i for i, t in enumerate(statement) if t.type == "EQ" or t.word == "TO"), None
            )
            if at is None:
                return False
            for tok in statement[at + 1 :]:
                if tok.type in ("VAR", "IDENTIFIER") and tok.word not in _SETTING_WORDS:
                    return False
    return True


@functools.lru_cache(maxsize=4096)  # names repeat across statements
def _odd_identifier(piece: str) -> bool:
    """A quoted identifier no schema would have: likely text the dialect read differently.

    Such as a string in MySQL-style double quotes (`"it's"`), or a stray quote that swallowed
    part of the statement (`[ x 'secret' ]`). It is kept as written, but not trusted.
    """
    inner = piece[1:-1]
    if _ODD_IDENTIFIER.search(inner):
        return True
    others = {'"': "`", "`": '"', "[": '"`'}.get(piece[0], "")
    return any(c in inner for c in others)


def _suspicious(tok: Tok, text: str) -> bool:
    """A kept token that looks like part of a literal the dialect did not understand.

    That is a word starting with a digit (`0x5Gq`), or a `$` that is neither a placeholder
    (`$1`, `$name`) nor a single `$` inside a word (`v$session`): a dollar quote.
    """
    if text[:1].isdigit():
        return True
    if "$" not in text or tok.type == "PARAMETER" or _DOLLAR_PLACEHOLDER.match(text):
        return False
    return not _DOLLAR_WORD.match(text)


def _survivors(plain: str, dialect: Optional[str]) -> bool:
    """Whether the kept text (identifiers blanked) still holds a quote, comment or digit word.

    Checked on the whole text, not per token: `-` `-` glued is `--`, which some reader (or the
    database itself: Postgres reads `#--x` as `#` and a comment) takes for a comment.
    """
    if _SURVIVOR.search(plain) or _DIGIT_WORD.search(plain):
        return True
    return "#" in plain and dialect != "postgres"  # a MySQL comment; XOR in Postgres


_FALLBACK_LITERALS = lazy(
    r"""(?:[A-Za-z]|U&)?'(?:[^'\\]|\\.|'')*(?:'|\Z)"""  # strings, unterminated ones too
    r"""|\$([A-Za-z_]\w*)?\$.*?(?:\$\1\$|\Z)"""  # dollar quotes
    r"""|(?<![\w$:?@])-?\b(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\b""",
    re.S,
)
_FALLBACK_COMMENTS = lazy(r"--[^\n]*|/\*.*?(?:\*/|\Z)|#[^\n]*", re.S)


def _fallback(sql: str, dialect: Optional[str]) -> SqlInfo:
    """Best effort for text the tokenizer rejects: regex masking, never reliable."""
    text = _FALLBACK_LITERALS.sub("?", sql)
    text = _FALLBACK_COMMENTS.sub(" ", text)
    text = _WS.sub(" ", text).strip()
    ops: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()
    try:
        raw = _tokenizer(dialect).tokenize(text)
        ops, tables = operations_and_tables(to_toks(raw))
    except Exception:
        pass
    return SqlInfo(
        bind_as_question_marks(text), False, ops[0] if ops else "other", tables, ops, text
    )
