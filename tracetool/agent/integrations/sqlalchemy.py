"""SQLAlchemy: `before_cursor_execute` / `after_cursor_execute` / `handle_error` listeners on the
`Engine` class (so every engine, sync or async, is covered) record each statement as a
`sql_query` event with the dialect's name as `database_type` (`sqlite`, `postgresql`, `mysql` …)
and its server version. While SQLAlchemy runs a statement, the DB-API level integrations
(sqlite3, psycopg) stay silent.
"""

from __future__ import annotations

from typing import Any, Optional

from tracetool.agent.integrations._common import Span, sql_event, sql_guard

_KEY = "tracetool_sql_spans"
_installed = False


def install() -> None:
    global _installed
    if _installed:
        return
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    event.listen(Engine, "before_cursor_execute", _before)
    event.listen(Engine, "after_cursor_execute", _after)
    event.listen(Engine, "handle_error", _error)
    _installed = True


def _version(dialect: Any) -> Optional[str]:
    info = getattr(dialect, "server_version_info", None)
    if not info:
        return None
    return ".".join(str(part) for part in info)


def _before(
    conn: Any, cursor: Any, statement: Any, parameters: Any, context: Any, executemany: bool
) -> None:
    dialect = conn.dialect
    span = Span.open(lambda: sql_event(statement, dialect.name, _version(dialect)))
    if span is None:
        return
    conn.info.setdefault(_KEY, []).append((span, sql_guard.set(True)))


def _pop(conn: Any) -> Optional[Span]:
    if conn is None:
        return None
    stack = conn.info.get(_KEY)
    if not stack:
        return None
    span, token = stack.pop()
    try:
        sql_guard.reset(token)
    except ValueError:  # reset from another context (should not happen): clear ours
        sql_guard.set(False)
    return span  # type: ignore[no-any-return]


def _after(
    conn: Any, cursor: Any, statement: Any, parameters: Any, context: Any, executemany: bool
) -> None:
    span = _pop(conn)
    if span is not None:
        span.close()


def _error(ctx: Any) -> None:
    span = _pop(getattr(ctx, "connection", None))
    if span is not None:
        span.fail(ctx.original_exception)
