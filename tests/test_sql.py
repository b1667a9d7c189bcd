"""tracetool.sql: normalization, parameterization, tables and operations.

The golden table below is the contract in examples: (database_type, sql, normalized, reliable,
operation, tables). To change an expectation, edit the row by hand and say why in the commit.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tracetool.sql import (
    SqlInfo,
    analyze,
    bind_as_question_marks,
    dialect_for,
    normalize,
    parameterize,
    returned,
    same_query,
    seeded,
)

PROJECT = Path(__file__).resolve().parents[1]


def _shared() -> Path | None:
    # shared/ lives beside the project root (a checkout's sibling); worktrees sit one level deeper.
    for parent in (PROJECT.parent, *PROJECT.parent.parents):
        if (parent / "shared" / "corpus").is_dir():
            return parent / "shared"
    return None


# fmt: off
GOLDEN = [
    # quoting and escapes
    ('sqlite', "SELECT * FROM users WHERE name = 'it''s'",
     'SELECT * FROM users WHERE name = ?', True, 'select', ('users',)),
    ('mysql', 'SELECT * FROM users WHERE name = \'a\\\'b\' AND nick = "bob"',
     'SELECT * FROM users WHERE name = ? AND nick = ?', True, 'select', ('users',)),
    ('postgres', "SELECT * FROM notes WHERE body = E'line\\nbreak' AND tag = N'x'",
     'SELECT * FROM notes WHERE body = ? AND tag = ?', True, 'select', ('notes',)),
    ('postgres', "SELECT $$dollar 'quoted'$$, $tag$a $$ b$tag$ FROM t",
     'SELECT ?, ? FROM t', True, 'select', ('t',)),
    ('mysql', "SELECT * FROM blobs WHERE h = 0x1F OR h = X'ab'",
     'SELECT * FROM blobs WHERE h = ? OR h = ?', True, 'select', ('blobs',)),
    ('sqlite', "SELECT * FROM blobs WHERE h = X'ab'",
     'SELECT * FROM blobs WHERE h = ?', True, 'select', ('blobs',)),
    ('postgres', 'SELECT * FROM m WHERE a = 42 AND b = 3.14 AND c = -5 AND d = 1.5e-3 AND e = a - 1',
     'SELECT * FROM m WHERE a = ? AND b = ? AND c = ? AND d = ? AND e = a - ?', True, 'select', ('m',)),
    ('sqlite', 'UPDATE flags SET on_off = TRUE, other = false, gone = NULL WHERE x IS NULL AND y IS NOT NULL',
     'UPDATE flags SET on_off = ?, other = ?, gone = ? WHERE x IS NULL AND y IS NOT NULL', True, 'update', ('flags',)),
    # placeholders kept verbatim
    ('postgres', 'SELECT * FROM users WHERE id = $1 AND org = $2',
     'SELECT * FROM users WHERE id = $1 AND org = $2', True, 'select', ('users',)),
    ('postgresql', 'SELECT * FROM users WHERE id = %s AND name = %(name)s',
     'SELECT * FROM users WHERE id = %s AND name = %(name)s', True, 'select', ('users',)),
    ('sqlite', 'SELECT * FROM users WHERE id = ? AND a = ?1 AND b = :name AND c = @p AND d = $v',
     'SELECT * FROM users WHERE id = ? AND a = ?1 AND b = :name AND c = @p AND d = $v', True, 'select', ('users',)),
    ('oracle', 'SELECT * FROM users WHERE id = :1 AND name = :name',
     'SELECT * FROM users WHERE id = :1 AND name = :name', True, 'select', ('users',)),
    ('mssql', "SELECT * FROM [dbo].[Users] WHERE [Id] = @p1 AND Name = N'x'",
     'SELECT * FROM [dbo].[Users] WHERE [Id] = @p1 AND Name = ?', True, 'select', ('dbo.users',)),
    ('sqlite', 'SELECT * FROM users WHERE id IN (1, 2, 3)',
     'SELECT * FROM users WHERE id IN (?, ?, ?)', True, 'select', ('users',)),
    ('sqlite', 'SELECT * FROM posts ORDER BY created_at DESC LIMIT 10 OFFSET 5',
     'SELECT * FROM posts ORDER BY created_at DESC LIMIT ? OFFSET ?', True, 'select', ('posts',)),
    # comments
    ('sqlite', 'SELECT a FROM t -- password=hunter2\nWHERE b = 1',
     'SELECT a FROM t WHERE b = ?', True, 'select', ('t',)),
    ('postgres', 'SELECT /* api_key=abc123 */ a FROM t',
     'SELECT a FROM t', True, 'select', ('t',)),
    ('mysql', "SELECT a FROM t # token=s3cr3t\nWHERE b = 'x'",
     'SELECT a FROM t WHERE b = ?', True, 'select', ('t',)),
    ('mysql', 'SELECT /*+ MAX_EXECUTION_TIME(1000) */ a FROM t',
     'SELECT a FROM t', True, 'select', ('t',)),
    # identifiers never masked
    ('postgres', 'SELECT "123", "select", "a""b" FROM "Weird Table"',
     'SELECT "123", "select", "a""b" FROM "Weird Table"', True, 'select', ('weird table',)),
    # SQLite reads a double-quoted word in a value position as a string (issue 19)
    ('sqlite', 'SELECT * FROM t WHERE name = "it\'s"',
     'SELECT * FROM t WHERE name = ?', True, 'select', ('t',)),
    ('mysql', 'SELECT `1`, `order` FROM `db`.`t`',
     'SELECT `1`, `order` FROM `db`.`t`', True, 'select', ('db.t',)),
    (None, 'SELECT "a"."b" FROM "Schema"."T" AS "a"',
     'SELECT "a"."b" FROM "Schema"."T" AS "a"', True, 'select', ('schema.t',)),
    # statements
    ('sqlite', 'BEGIN; INSERT INTO t (a) VALUES (1); COMMIT',
     'BEGIN; INSERT INTO t (a) VALUES (?); COMMIT', True, 'begin', ('t',)),
    ('postgresql', 'INSERT INTO "misago_users_online" ("user_id", "last_click") VALUES (2218, \'2021-11-18T04:36:14.289585+00:00\'::timestamptz)',
     'INSERT INTO "misago_users_online" ("user_id", "last_click") VALUES (?, ?::timestamptz)', True, 'insert', ('misago_users_online',)),
    ('postgresql', 'DECLARE "_django_curs_1" NO SCROLL CURSOR WITHOUT HOLD FOR SELECT "misago_conf_setting"."id" FROM "misago_conf_setting" WHERE "misago_conf_setting"."id" > 5',
     'DECLARE "_django_curs_1" NO SCROLL CURSOR WITHOUT HOLD FOR SELECT "misago_conf_setting"."id" FROM "misago_conf_setting" WHERE "misago_conf_setting"."id" > ?', True, 'select', ('misago_conf_setting',)),
    ('postgres', "INSERT INTO users (login, age) VALUES ('ann', 30), ('bob', 41) RETURNING *",
     'INSERT INTO users (login, age) VALUES (?, ?), (?, ?) RETURNING *', True, 'insert', ('users',)),
    ('postgres', "WITH recent AS (SELECT * FROM posts WHERE created_at > now() - interval '1 day') SELECT r.id, u.name FROM recent r JOIN users u ON u.id = r.user_id",
     'WITH recent AS (SELECT * FROM posts WHERE created_at > now() - interval ?) SELECT r.id, u.name FROM recent r JOIN users u ON u.id = r.user_id', True, 'select', ('posts', 'users')),
    ('postgres', 'WITH moved AS (DELETE FROM queue WHERE id = 7 RETURNING *) INSERT INTO archive SELECT * FROM moved',
     'WITH moved AS (DELETE FROM queue WHERE id = ? RETURNING *) INSERT INTO archive SELECT * FROM moved', True, 'insert', ('archive', 'queue')),
    ('sqlite', 'UPDATE "users" SET "name" = \'x\', "updated_at" = \'2024-01-01\' WHERE "users"."id" = 12',
     'UPDATE "users" SET "name" = ?, "updated_at" = ? WHERE "users"."id" = ?', True, 'update', ('users',)),
    ('mysql2', "DELETE FROM `sessions` WHERE `expires_at` < '2024-01-01 00:00:00'",
     'DELETE FROM `sessions` WHERE `expires_at` < ?', True, 'delete', ('sessions',)),
    ('sqlite', 'CREATE TABLE IF NOT EXISTS "posts" ("id" integer PRIMARY KEY AUTOINCREMENT NOT NULL, "title" varchar(255) DEFAULT \'untitled\', "user_id" integer REFERENCES "users" ("id"))',
     'CREATE TABLE IF NOT EXISTS "posts" ("id" integer PRIMARY KEY AUTOINCREMENT NOT NULL, "title" varchar(?) DEFAULT ?, "user_id" integer REFERENCES "users" ("id"))', True, 'create', ('posts', 'users')),
    ('postgres', 'CREATE UNIQUE INDEX index_users_on_email ON public.users USING btree (email)',
     'CREATE UNIQUE INDEX index_users_on_email ON public.users USING btree (email)', True, 'create', ('public.users',)),
    ('postgres', 'DROP TABLE IF EXISTS a, b CASCADE',
     'DROP TABLE IF EXISTS a, b CASCADE', True, 'drop', ('a', 'b')),
    ('postgres', 'ALTER TABLE ONLY posts ADD CONSTRAINT fk FOREIGN KEY (user_id) REFERENCES users(id)',
     'ALTER TABLE ONLY posts ADD CONSTRAINT fk FOREIGN KEY (user_id) REFERENCES users(id)', True, 'alter', ('posts', 'users')),
    ('sqlite', 'PRAGMA table_info("active_storage_blobs")',
     'PRAGMA table_info("active_storage_blobs")', True, 'pragma', ('active_storage_blobs',)),
    ('sqlite', 'PRAGMA foreign_keys = ON',
     'PRAGMA foreign_keys = ON', True, 'pragma', ()),
    ('postgres', 'SAVEPOINT active_record_1',
     'SAVEPOINT active_record_1', True, 'savepoint', ()),
    ('postgres', 'RELEASE SAVEPOINT active_record_1',
     'RELEASE SAVEPOINT active_record_1', True, 'release', ()),
    ('postgres', 'ROLLBACK TO SAVEPOINT active_record_1',
     'ROLLBACK TO SAVEPOINT active_record_1', True, 'rollback', ()),
    ('mysql', 'START TRANSACTION',
     'START TRANSACTION', True, 'begin', ()),
    ('postgres', 'SELECT a.attname FROM (SELECT indrelid, indkey, generate_subscripts(indkey, 1) idx FROM pg_index WHERE indrelid = \'"t"\'::regclass AND indisprimary) i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[i.idx]',
     'SELECT a.attname FROM (SELECT indrelid, indkey, generate_subscripts(indkey, ?) idx FROM pg_index WHERE indrelid = ?::regclass AND indisprimary) i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[i.idx]', True, 'select', ('pg_attribute', 'pg_index')),
    ('postgres', 'SELECT EXTRACT(YEAR FROM created_at), SUBSTRING(name FROM 2 FOR 3) FROM events WHERE a IS DISTINCT FROM b',
     'SELECT EXTRACT(YEAR FROM created_at), SUBSTRING(name FROM ? FOR ?) FROM events WHERE a IS DISTINCT FROM b', True, 'select', ('events',)),
    ('postgres', 'SELECT * FROM orders o LEFT OUTER JOIN customers c ON c.id = o.customer_id, LATERAL unnest(o.tags) tag WHERE o.total >= 100.50',
     'SELECT * FROM orders o LEFT OUTER JOIN customers c ON c.id = o.customer_id, LATERAL unnest(o.tags) tag WHERE o.total >= ?', True, 'select', ('customers', 'orders')),
    ('mysql', "INSERT INTO t (a, b) VALUES (1, 'x') ON DUPLICATE KEY UPDATE b = VALUES(b)",
     'INSERT INTO t (a, b) VALUES (?, ?) ON DUPLICATE KEY UPDATE b = VALUES(b)', True, 'insert', ('t',)),
    ('sqlite', "INSERT OR REPLACE INTO kv (k, v) VALUES ('a', 'b')",
     'INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)', True, 'insert', ('kv',)),
    ('postgres', 'INSERT INTO kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v',
     'INSERT INTO kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v', True, 'insert', ('kv',)),
    ('postgres', 'SELECT * FROM accounts WHERE id = 1 FOR UPDATE',
     'SELECT * FROM accounts WHERE id = ? FOR UPDATE', True, 'select', ('accounts',)),
    ('postgres', "SELECT arr[1:2], data->>'key', data #> '{a,b}' FROM docs",
     'SELECT arr[?:?], data->>?, data #> ? FROM docs', True, 'select', ('docs',)),
    ('HSQL Database Engine', 'select owner0_.id as id1_0_0_ from owners owner0_ where owner0_.last_name like ?',
     'select owner0_.id as id1_0_0_ from owners owner0_ where owner0_.last_name like ?', True, 'select', ('owners',)),
    (None, 'SELECT COUNT(*) FROM (SELECT 1 AS one FROM t LIMIT 1) subquery_for_count',
     'SELECT COUNT(*) FROM (SELECT ? AS one FROM t LIMIT ?) subquery_for_count', True, 'select', ('t',)),
    # unreliable
    ('sqlite', "SELECT * FROM t WHERE name = 'unterminated",
     'SELECT * FROM t WHERE name = ?', False, 'select', ('t',)),
    ('postgres', 'SELECT * FROM t WHERE a = 1 /* never closed',
     'SELECT * FROM t WHERE a = ?', False, 'select', ('t',)),
    (None, "SELECT * FROM t WHERE a = 'x\\'y' OR b = 'z\\'w'",
     'SELECT * FROM t WHERE a = ?\\?', False, 'select', ('t',)),
    (None, 'SELECT $$secret$$ FROM t',
     'SELECT $$secret$$ FROM t', False, 'select', ('t',)),
    ('postgres', 'INSERT INTO "scenarios" ("data") VALUES (\'{"version":"1.2","classMap":[{"name":"contr...',
     'INSERT INTO "scenarios" ("data") VALUES (?', False, 'insert', ('scenarios',)),
    (None, 'SELECT a # b FROM t',
     'SELECT a # b FROM t', False, 'select', ('t',)),
    ('sqlite', 'SELECT * FROM t WHERE a = 1 -- x\n AND b = 2 --- y\n',
     'SELECT * FROM t WHERE a = ? AND b = ?', True, 'select', ('t',)),
    ('mysql', 'SELECT a FROM t WHERE b = 1--2',
     'SELECT a FROM t WHERE b = ?-?', True, 'select', ('t',)),
]
# fmt: on


@pytest.mark.parametrize(
    ("database_type", "sql", "normalized", "reliable", "operation", "tables"), GOLDEN
)
def test_golden(database_type, sql, normalized, reliable, operation, tables):
    # The golden texts are the parameterized form (placeholders as written); the normalized
    # form writes every placeholder `?` (test_every_paramstyle_is_one_query).
    info = analyze(sql, database_type)
    assert (info.parameterized, info.reliable, info.operation, info.tables) == (
        normalized,
        reliable,
        operation,
        tables,
    )
    assert normalize(sql, database_type) == bind_as_question_marks(normalized)
    assert parameterize(sql, database_type) == (normalized, reliable)


def test_golden_covers_the_dialects():
    assert len(GOLDEN) >= 40
    assert {dialect_for(row[0]) for row in GOLDEN} >= {"sqlite", "postgres", "mysql", None}


def test_operations_of_every_statement_in_order():
    info = analyze(
        "BEGIN; SAVEPOINT s1; UPDATE t SET a = 1; RELEASE SAVEPOINT s1; COMMIT", "sqlite"
    )
    assert info.operation == "begin"
    assert info.operations == ("begin", "savepoint", "update", "release", "commit")
    assert info.tables == ("t",)


SECRET = "hunter2"
COMMENTED = [
    ("sqlite", f"SELECT a FROM t -- password={SECRET}\nWHERE b = 1"),
    ("sqlite", f"SELECT a FROM t -- password={SECRET}"),
    ("postgres", f"SELECT /* password={SECRET} */ a FROM t"),
    ("postgres", f"SELECT a FROM t /* outer /* password={SECRET} */ still */ WHERE b = 1"),
    ("postgres", f"SELECT a FROM t /* password={SECRET}"),  # unterminated: unreliable
    ("mysql", f"SELECT a FROM t # password={SECRET}\nWHERE b = 2"),
    ("mysql", f"SELECT /*+ hint({SECRET}) */ a FROM t"),
    ("mysql", f"SELECT a FROM t WHERE b = '{SECRET}' -- {SECRET}"),
    (None, f"SELECT a FROM t /* {SECRET} */ WHERE b = '{SECRET}'"),
    (None, f"SELECT a FROM t WHERE b = '{SECRET} -- not a comment'"),
    (None, f"SELECT a FROM t WHERE b = 'x -- {SECRET}"),  # unterminated: unreliable
]


@pytest.mark.parametrize(("database_type", "sql"), COMMENTED)
def test_comments_and_their_secrets_never_survive(database_type, sql):
    info = analyze(sql, database_type)
    assert SECRET not in info.normalized
    assert "--" not in info.normalized and "/*" not in info.normalized
    assert all(SECRET not in table for table in info.tables)


@pytest.mark.parametrize(
    ("database_type", "sql", "identifiers"),
    [
        (
            "postgres",
            'SELECT "1", "42"."7" FROM "2024" WHERE "0" = 0',
            ['"1"', '"42"."7"', '"2024"', '"0"'],
        ),
        ("postgres", 'SELECT "true", "null", "a""b" FROM "t"', ['"true"', '"null"', '"a""b"']),
        ("mysql", "SELECT `1`, `a b` FROM `2` WHERE `x` = 'x'", ["`1`", "`a b`", "`2`", "`x`"]),
        (
            "mssql",
            "SELECT [1], [order] FROM [dbo].[3] WHERE [x] = 1",
            ["[1]", "[order]", "[dbo].[3]", "[x]"],
        ),
        ("sqlite", 'SELECT "t"."a  b" FROM "t" AS "x"', ['"t"."a  b"', '"t"', '"x"']),
    ],
)
def test_identifiers_are_never_masked(database_type, sql, identifiers):
    info = analyze(sql, database_type)
    assert info.reliable
    for identifier in identifiers:
        assert identifier in info.normalized
    assert info.normalized.endswith("?") or "WHERE" not in sql


@pytest.mark.parametrize(
    ("database_type", "sql"),
    [
        ("sqlite", "SELECT * FROM t WHERE a = 'unterminated"),
        ("postgres", "SELECT * FROM t WHERE a = $$never closed"),
        ("postgres", "SELECT * FROM t WHERE a = 1 /* never closed"),
        ("mysql", "SELECT * FROM t WHERE a = 'x\\'"),
        (None, "SELECT * FROM t WHERE a = 'x\\'y' OR b = 'z\\'w'"),  # MySQL escapes, unknown db
        (None, "SELECT $$x$$"),  # dollar quotes the generic dialect does not know
        (None, "SELECT a # b FROM t"),  # `#`: a MySQL comment or an operator?
        ("sqlite", "SELECT \x00'"),
        ("sqlite", 'SELECT "it\'s" FROM t'),  # a string in double quotes, or a strange name
        ("sqlite", "SELECT * FROM t WHERE [ a 'secret' ] = 1"),  # a stray bracket swallowed text
        ("postgres", "\\"),
        # not SQL, or SQL whose kept words are values (issue 19)
        ("redis", "AUTH sup3rpassw0rd"),
        (None, "GET session:abcdef"),
        ("postgres", "hello world this is not sql"),
        ("postgres", "SELECT 1; AUTH hunter2"),
        ("postgres", "SET my.api_key = sk_live_abc"),
        ("postgres", "SET search_path TO tenant_secret"),
        ("mysql", "SET NAMES utf8mb4"),
        ("sqlite", "PRAGMA key = passphrase"),
        ("oracle", "CREATE USER bob IDENTIFIED BY hunter2"),
        ("postgres", "ALTER ROLE bob PASSWORD hunter2"),
        # SQLite double quotes where a string and a name are both possible
        ("sqlite", 'SELECT "hunter2" FROM t'),
        ("sqlite", 'SELECT * FROM t WHERE lower("hunter2") = name'),
        ("sqlite", 'SELECT * FROM t WHERE "hunter2" = name'),
    ],
)
def test_unreliable(database_type, sql):
    normalized, reliable = parameterize(sql, database_type)
    assert reliable is False
    assert isinstance(normalized, str)


_LITERALS = [
    "'SECRET'", "'it''s SECRET'", "E'SE\\'CRET'", "N'SECRET'", "$$SECRET$$", "$q$SECRET$q$",
    "X'5EC12E7'", "0x5EC12E7", "987654", "-987654", "9876.54e3", "'SECRET\\'", "q'[SECRET]'",
    "U&'SECRET'", "'multi\nline SECRET'",
]  # fmt: skip
_COMMENTS = ["-- SECRET\n", "/* SECRET */", "/*+ SECRET */"]
_WORDS = [
    "SELECT", "FROM", "t", "WHERE", "a", "=", "AND", "(", ")", ",", ";", "IN", "IS NULL", "x.y",
    '"id"', "`id`", "[id]", "$1", "?", ":p", "@p", "%s", "-", "+", "*", "||", "::int", "LIMIT",
    "VALUES", "INSERT INTO", "UPDATE", "SET",
]  # fmt: skip
_NOISE = list("'\"`[]$#-/*\\")
_LEAK = re.compile(r"SECRET|(?<![\w$?:@])(987654|5EC12E7|9876)")


@pytest.mark.parametrize("database_type", [None, "sqlite", "postgres", "mysql", "mssql", "oracle"])
def test_reliable_results_never_show_a_literal_or_comment(database_type):
    # Random statements from literals holding a marker, comments holding it, SQL words and stray
    # quote/comment characters: whatever the tokenizer makes of them, a result marked reliable
    # must not show the marker (quoted identifiers are the one documented exception, and the
    # stray quotes that make one also make the result unreliable).
    import random

    rng = random.Random(20240611)
    comments = [*_COMMENTS, "# SECRET\n"] if database_type == "mysql" else _COMMENTS
    reliable = 0
    for _ in range(1500):
        parts = []
        for _ in range(rng.randint(2, 12)):
            r = rng.random()
            pool = _LITERALS if r < 0.3 else comments if r < 0.4 else _NOISE if r < 0.45 else _WORDS
            parts.append(rng.choice(pool))
        # (a statement word first: text that does not start like SQL is never reliable)
        sql = rng.choice([" ", "\n", "  "]).join(["SELECT", *parts])
        info = analyze(sql, database_type)
        if info.reliable:
            reliable += 1
            assert not _LEAK.search(info.normalized), (sql, info.normalized)
    assert reliable > 300  # the check above did look at many results


def test_garbage_never_raises():
    for sql in ["", " ", ";", "'", '"', "`", "/*", "--", "$$", "$a$", "((", "))", "\x00", "é'"]:
        for database_type in (None, "sqlite", "postgres", "mysql", "oracle", "mssql"):
            info = analyze(sql, database_type)
            assert isinstance(info, SqlInfo)
            assert "'" not in info.normalized or not info.reliable


def test_whitespace_is_collapsed_and_stripped():
    sql = "  SELECT\n\ta ,\r\n  b\tFROM   t  GROUP\n BY a  ;  "
    assert normalize(sql) == "SELECT a , b FROM t GROUP BY a ;"


def test_analyze_is_cached():
    sql = "SELECT * FROM cache_probe WHERE id = 99"
    before = analyze.cache_info()
    first = analyze(sql, "sqlite")
    second = analyze(sql, "sqlite")
    after = analyze.cache_info()
    assert first is second
    assert after.hits >= before.hits + 1
    assert analyze.cache_info().maxsize == 4096


def test_long_text_is_analyzed_without_pinning_the_cache():
    sql = "INSERT INTO big (a, b) VALUES " + ", ".join(f"({i}, 'v{i}')" for i in range(20000))
    assert len(sql) > 65536
    before = analyze.cache_info().currsize
    info = analyze(sql, "postgres")
    assert info.reliable and info.tables == ("big",) and info.operation == "insert"
    assert info.normalized.startswith("INSERT INTO big (a, b) VALUES (?, ?), (?, ?),")
    assert "v1" not in info.normalized
    assert analyze.cache_info().currsize == before


def test_returned_keeps_every_answer_made_cached_or_seeded():
    """`returned` holds what `analyze` answered inside it, by its arguments, however it was found
    (a new analysis, the cache, seeded ones, a text too long to cache); each one's `normalized`
    is `normalize`'s text. Arguments that are not text (or None) are answered and left out."""
    long = "INSERT INTO big (a) VALUES " + ", ".join(f"({i})" for i in range(20000))
    seed = SqlInfo("SELECT seeded", True, "select", ())
    analyze("SELECT 1 FROM cached_probe", None)
    with seeded({("SELECT 2 FROM seeded_probe", "postgres"): seed}):
        with returned() as outer:
            analyze("SELECT 1 FROM cached_probe", None)
            with returned() as inner:
                analyze("SELECT a FROM t WHERE b = 'x'", "sqlite")
                assert analyze("SELECT 2 FROM seeded_probe", "postgres") is seed
                analyze(long, "postgres")
                analyze(["not", "text"])  # type: ignore[arg-type]
                analyze("SELECT 1", 42)  # type: ignore[arg-type]
            assert set(inner) == {
                ("SELECT a FROM t WHERE b = 'x'", "sqlite"),
                ("SELECT 2 FROM seeded_probe", "postgres"),
                (long, "postgres"),
            }
    assert set(outer) == set(inner) | {("SELECT 1 FROM cached_probe", None)}
    for (text, database_type), info in outer.items():
        if info is not seed:
            assert info.normalized == normalize(text, database_type)
    analyze("SELECT 3")  # (outside: kept nowhere)
    assert ("SELECT 3", None) not in outer


def test_bad_input_types_give_an_unreliable_empty_result():
    for value in (None, 123, b"SELECT 1"):
        info = analyze(value)  # type: ignore[arg-type]
        assert info == SqlInfo("", False, "other", ())
    assert analyze("SELECT 1", 42).normalized == "SELECT ?"  # type: ignore[arg-type]


def test_threads_get_the_same_answers():
    from concurrent.futures import ThreadPoolExecutor

    statements = [(row[0], row[1]) for row in GOLDEN] * 4
    analyze.cache_clear()
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda row: analyze(row[1], row[0]), statements))
    analyze.cache_clear()
    assert results == [analyze(sql, database_type) for database_type, sql in statements]


@pytest.mark.parametrize(
    ("database_type", "dialect"),
    [
        ("sqlite", "sqlite"),
        ("sqlite3", "sqlite"),
        ("SQLite", "sqlite"),
        ("postgres", "postgres"),
        ("postgresql", "postgres"),
        ("pg", "postgres"),
        ("PostgreSQL", "postgres"),
        ("mysql", "mysql"),
        ("mysql2", "mysql"),
        ("mariadb", "mysql"),
        ("MySQL", "mysql"),
        ("oracle", "oracle"),
        ("oracle_enhanced", "oracle"),
        ("Oracle", "oracle"),
        ("mssql", "tsql"),
        ("sqlserver", "tsql"),
        ("Microsoft SQL Server", "tsql"),
        ("h2", None),
        ("hsqldb", None),
        ("HSQL Database Engine", None),
        ("duckdb", "duckdb"),
        ("snowflake", "snowflake"),
        ("no-such-db", None),
        ("", None),
        (None, None),
    ],
)
def test_dialect_for(database_type, dialect):
    assert dialect_for(database_type) == dialect


def test_importing_tracetool_sql_does_not_import_sqlglot():
    code = "import sys, tracetool.sql; assert 'sqlglot' not in sys.modules, 'sqlglot imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# -- the shared corpus: every recorded SQL statement ------------------------------------------

_QUOTED_IDENTIFIER = re.compile(r'"(?:[^"]|"")*"|`(?:[^`]|``)*`')
_DIGIT_TOKEN = re.compile(r"(?<![\w$:?@.])\d+(?![\w])")


def _corpus_statements() -> list[tuple[str | None, str]]:
    shared = _shared()
    if shared is None:
        pytest.skip("shared/ (the corpus) is not beside the project root")
    statements = set()
    for path in sorted((shared / "corpus" / "appmap-js").rglob("*.appmap.json")):
        doc = orjson.loads(path.read_bytes())
        for event in doc.get("events", []) if isinstance(doc, dict) else []:
            query = event.get("sql_query") if isinstance(event, dict) else None
            if isinstance(query, dict) and isinstance(query.get("sql"), str):
                statements.add((query.get("database_type"), query["sql"]))
    assert len(statements) > 100, "expected the corpus to hold SQL events"
    return sorted(statements, key=lambda row: (row[0] or "", row[1]))


def test_corpus_sql_is_parameterized():
    statements = _corpus_statements()
    reliable = 0
    for database_type, sql in statements:
        info = analyze(sql, database_type)
        assert info.operation, sql
        if not info.reliable:
            continue
        reliable += 1
        outside = _QUOTED_IDENTIFIER.sub("_", info.normalized)
        assert "'" not in outside, (sql, info.normalized)
        assert not _DIGIT_TOKEN.search(outside), (sql, info.normalized)
        # A normalized statement normalizes to itself, so `query:<normalized SQL>` round-trips.
        assert analyze(info.normalized, database_type).normalized == info.normalized, sql
    # Only statements truncated by the recording agent (an open quote at the end) may fail.
    assert reliable >= len(statements) - 3


def test_corpus_tables_and_operations():
    seen = {(t, s): analyze(s, t) for t, s in _corpus_statements()}
    operations = {info.operation for info in seen.values()}
    assert {"select", "insert", "update", "delete", "savepoint", "release"} <= operations
    assert "other" not in operations
    for (_, sql), info in seen.items():
        if info.operation in ("select", "insert", "update", "delete"):
            assert info.tables, sql
        for table in info.tables:
            assert table == table.lower() and "'" not in table and '"' not in table
            assert table.split(".")[-1] in sql.lower(), (table, sql)


@pytest.mark.parametrize(
    ("sql", "normalized"),
    [
        ('SELECT * FROM u WHERE email = "alice@example.com"', "SELECT * FROM u WHERE email = ?"),
        (
            'SELECT * FROM "u" WHERE "u"."a" != "x" AND b <> "y" AND c IS NOT "z" OR d LIKE "w%"',
            'SELECT * FROM "u" WHERE "u"."a" != ? AND b <> ? AND c IS NOT ? OR d LIKE ?',
        ),
        (
            'SELECT * FROM t WHERE a IN ("x", "y") LIMIT 1',
            "SELECT * FROM t WHERE a IN (?, ?) LIMIT ?",
        ),
        (
            'INSERT INTO "t" ("a", "b") VALUES ("s1", 2), ("s3", "s4")',
            'INSERT INTO "t" ("a", "b") VALUES (?, ?), (?, ?)',
        ),
        (
            'UPDATE "t" SET "a" = "s1", "b" = 2 WHERE "t"."id" = "s2"',
            'UPDATE "t" SET "a" = ?, "b" = ? WHERE "t"."id" = ?',
        ),
        (
            'SELECT CASE WHEN "t"."a" = 1 THEN "s1" ELSE "s2" END AS "c" FROM "t" ORDER BY "c"',
            'SELECT CASE WHEN "t"."a" = ? THEN ? ELSE ? END AS "c" FROM "t" ORDER BY "c"',
        ),
        (
            'CREATE INDEX "i" ON "t" ("a", "b")',
            'CREATE INDEX "i" ON "t" ("a", "b")',
        ),
        (
            'CREATE TABLE "t" ("id" integer PRIMARY KEY, "n" text DEFAULT "s1", UNIQUE ("n"))',
            'CREATE TABLE "t" ("id" integer PRIMARY KEY, "n" text DEFAULT ?, UNIQUE ("n"))',
        ),
    ],
)
def test_sqlite_double_quoted_strings_are_literals(sql, normalized):
    """Issue 19: SQLite reads "…" as a string where no column has that name."""
    info = analyze(sql, "sqlite")
    assert (info.normalized, info.reliable) == (normalized, True)
    assert analyze(sql, "postgres").normalized != normalized or '"s' not in sql  # names there


@pytest.mark.parametrize(
    "sql",
    [
        "SET search_path = 'public'",
        "SET client_min_messages TO DEFAULT",
        "PRAGMA foreign_keys = ON",
        "ALTER USER bob WITH PASSWORD 'hunter2'",
        "SHOW server_version",
    ],
)
def test_settings_without_bare_values_stay_reliable(sql):
    normalized, reliable = parameterize(sql, "postgres")
    assert reliable, normalized
    assert "hunter2" not in normalized


# Real drivers' spellings of one Django ORM lookup: Django/psycopg2 `%s`, asyncpg (SQLAlchemy)
# `$1::INTEGER`, SQLAlchemy/sqlite `?` and `:name`, psycopg `%(name)s`.
_PARAMSTYLES = [
    (
        "postgresql",
        'SELECT "catalog_book"."id", "catalog_book"."title" FROM "catalog_book" '
        'WHERE "catalog_book"."id" = %s LIMIT 21',
    ),
    (
        "postgresql",
        'SELECT "catalog_book"."id", "catalog_book"."title" FROM "catalog_book" '
        'WHERE "catalog_book"."id" = $1::INTEGER LIMIT 21',
    ),
    (
        "sqlite",
        'SELECT "catalog_book"."id", "catalog_book"."title" FROM "catalog_book" '
        'WHERE "catalog_book"."id" = ? LIMIT 21',
    ),
    (
        "sqlite",
        'SELECT "catalog_book"."id", "catalog_book"."title" FROM "catalog_book" '
        'WHERE "catalog_book"."id" = :id_1 LIMIT 21',
    ),
    (
        "postgresql",
        'select "catalog_book"."id", "catalog_book"."title" from "catalog_book" '
        'where "catalog_book"."id" = %(id)s limit 21',
    ),
]


def test_every_paramstyle_is_one_query():
    normalized = {normalize(sql, db).casefold() for db, sql in _PARAMSTYLES}
    assert normalized == {
        'select "catalog_book"."id", "catalog_book"."title" from "catalog_book" '
        'where "catalog_book"."id" = ? limit ?'
    }
    # the original spelling is kept where it is shown or sanitized
    assert parameterize(*reversed(_PARAMSTYLES[1]))[0].endswith("= $1::INTEGER LIMIT ?")
    assert same_query(_PARAMSTYLES[0][1], _PARAMSTYLES[4][1], "postgresql")
    assert normalize("UPDATE t SET a = $1::VARCHAR[] WHERE b IN ($2::VARCHAR, $3)") == (
        "UPDATE t SET a = ? WHERE b IN (?, ?)"
    )
    # `::` casts of columns and quoted identifiers holding placeholder-like text stay
    assert normalize('SELECT a::text, "%s" FROM t') == 'SELECT a::text, "%s" FROM t'


def test_ddl_null_and_default_are_not_literals():
    sql = "CREATE TABLE t (a INT NULL DEFAULT NULL, b VARCHAR(20) NOT NULL DEFAULT 'x', c BOOL DEFAULT FALSE)"
    assert normalize(sql, "postgresql") == (
        "CREATE TABLE t (a INT NULL DEFAULT NULL, b VARCHAR(?) NOT NULL DEFAULT ?, "
        "c BOOL DEFAULT FALSE)"
    )
    assert normalize("ALTER TABLE t ALTER COLUMN a SET DEFAULT NULL") == (
        "ALTER TABLE t ALTER COLUMN a SET DEFAULT NULL"
    )
    # in DML, NULL and TRUE are values
    assert normalize("UPDATE t SET a = NULL, b = TRUE") == "UPDATE t SET a = ?, b = ?"
