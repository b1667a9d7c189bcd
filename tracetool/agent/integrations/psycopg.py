"""PostgreSQL drivers: psycopg 3 (`Cursor`/`AsyncCursor` `execute`/`executemany`, patched on the
classes) and psycopg2 (a C extension: `psycopg2.connect` hands out a recording connection whose
cursors record). `sql_query` events carry `database_type: postgresql` and the server version.
Statements run on behalf of SQLAlchemy or Django are recorded by those integrations instead.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from tracetool.agent.integrations._common import Span, sql_event, sql_guard
from tracetool.agent.integrations._patch import patch_method

DATABASE_TYPE = "postgresql"


def _pg_version(number: Any) -> Optional[str]:
    """libpq's integer version (150004) → "15.4"."""
    if not isinstance(number, int) or number <= 0:
        return None
    if number >= 100000:
        return f"{number // 10000}.{number % 10000}"
    return f"{number // 10000}.{number // 100 % 100}.{number % 100}"


def _sql_text(query: Any, context: Any) -> Any:
    if isinstance(query, (str, bytes, bytearray)):
        return query
    try:
        return query.as_string(context)
    except Exception:
        return str(query)


def _psycopg_fields(cursor: Any, query: Any) -> dict[str, Any]:
    conn = getattr(cursor, "connection", None)
    version = None
    try:
        version = _pg_version(conn.info.server_version)  # type: ignore[union-attr]
    except Exception:
        pass
    return sql_event(_sql_text(query, conn), DATABASE_TYPE, version)


def install_psycopg() -> None:
    import psycopg

    def sync(original: Any, self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        if sql_guard.get():
            return original(self, query, *args, **kwargs)
        return _recorded(
            lambda: _psycopg_fields(self, query), lambda: original(self, query, *args, **kwargs)
        )

    async def asynchronous(original: Any, self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        if sql_guard.get():
            return await original(self, query, *args, **kwargs)
        span = Span.open(lambda: _psycopg_fields(self, query))
        if span is None:
            return await original(self, query, *args, **kwargs)
        token = sql_guard.set(True)
        try:
            result = await original(self, query, *args, **kwargs)
        except BaseException as exc:
            sql_guard.reset(token)
            span.fail(exc)
            raise
        sql_guard.reset(token)
        span.close()
        return result

    for name in ("Cursor", "ClientCursor", "ServerCursor", "RawCursor"):
        cls = getattr(psycopg, name, None)
        if cls is None:
            continue
        for method in ("execute", "executemany"):
            if method in vars(cls):
                patch_method(cls, method, sync)
    for name in ("AsyncCursor", "AsyncClientCursor", "AsyncServerCursor", "AsyncRawCursor"):
        cls = getattr(psycopg, name, None)
        if cls is None:
            continue
        for method in ("execute", "executemany"):
            if method in vars(cls):
                patch_method(cls, method, asynchronous)


_pg2_classes: dict[type, type] = {}


def install_psycopg2() -> None:
    import psycopg2
    import psycopg2.extensions as ext

    class RecordingCursor(ext.cursor):  # type: ignore[misc, name-defined]
        def execute(self, query: Any, vars: Any = None) -> Any:
            return _record2(self, query, lambda: super(RecordingCursor, self).execute(query, vars))

        def executemany(self, query: Any, vars_list: Any) -> Any:
            return _record2(
                self, query, lambda: super(RecordingCursor, self).executemany(query, vars_list)
            )

    def cursor_class(factory: Any) -> Any:
        if factory is None:
            return RecordingCursor
        if issubclass(factory, RecordingCursor):
            return factory
        found = _pg2_classes.get(factory)
        if found is None:
            found = type(factory.__name__, (RecordingCursor, factory), {})
            _pg2_classes[factory] = found
        return found

    class RecordingConnection(ext.connection):  # type: ignore[misc, name-defined]
        def cursor(self, *args: Any, **kwargs: Any) -> Any:
            kwargs["cursor_factory"] = cursor_class(
                kwargs.get("cursor_factory") or self.cursor_factory
            )
            return super().cursor(*args, **kwargs)

    def connect(original: Any, *args: Any, **kwargs: Any) -> Any:
        factory = kwargs.get("connection_factory")
        if factory is None:
            kwargs["connection_factory"] = RecordingConnection
        elif not issubclass(factory, RecordingConnection):
            kwargs["connection_factory"] = type(
                factory.__name__, (RecordingConnection, factory), {}
            )
        return original(*args, **kwargs)

    patch_method(psycopg2, "connect", connect)


def _record2(cursor: Any, query: Any, run: Callable[[], Any]) -> Any:
    if sql_guard.get():
        return run()

    def fields() -> dict[str, Any]:
        version = None
        try:
            version = _pg_version(cursor.connection.server_version)
        except Exception:
            pass
        return sql_event(_sql_text(query, cursor), DATABASE_TYPE, version)

    return _recorded(fields, run)


def _recorded(fields: Callable[[], dict[str, Any]], run: Callable[[], Any]) -> Any:
    """Run one statement as a `sql_query` span; nested driver calls stay silent meanwhile."""
    span = Span.open(fields)
    if span is None:
        return run()
    token = sql_guard.set(True)
    try:
        result = run()
    except BaseException as exc:
        sql_guard.reset(token)
        span.fail(exc)
        raise
    sql_guard.reset(token)
    span.close()
    return result
