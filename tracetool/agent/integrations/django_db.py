"""Django ORM: every database connection (`BaseDatabaseWrapper`) gets a permanent execute wrapper
(the hook `connection.execute_wrapper()` uses), recording each statement as a `sql_query` event
with the backend's vendor as `database_type` (`sqlite`, `postgresql`, `mysql`, `oracle`). The
DB-API level integrations stay silent meanwhile. SQL is recorded as Django sends it to the
driver (with `%s` placeholders).
"""

from __future__ import annotations

from typing import Any, Optional

from tracetool.agent.integrations._common import Span, sql_event, sql_guard
from tracetool.agent.integrations._patch import patch_method


def install() -> None:
    from django.db.backends.base import base

    def init(original: Any, self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if _execute_wrapper not in self.execute_wrappers:
            self.execute_wrappers.insert(0, _execute_wrapper)

    patch_method(base.BaseDatabaseWrapper, "__init__", init)
    # Connections made before the hook (the module was already imported) get it too.
    try:
        from django.db import connections

        for conn in connections.all(initialized_only=True):
            if _execute_wrapper not in conn.execute_wrappers:
                conn.execute_wrappers.insert(0, _execute_wrapper)
    except Exception:
        pass


def _server_version(conn: Any) -> Optional[str]:
    if conn.vendor == "sqlite":
        return str(getattr(conn.Database, "sqlite_version", "") or "") or None
    return None


def _execute_wrapper(execute: Any, sql: Any, params: Any, many: bool, context: Any) -> Any:
    conn = context.get("connection") if isinstance(context, dict) else None
    vendor = getattr(conn, "vendor", "unknown")
    span = Span.open(lambda: sql_event(sql, vendor, _server_version(conn) if conn else None))
    if span is None:
        return execute(sql, params, many, context)
    token = sql_guard.set(True)
    try:
        result = execute(sql, params, many, context)
    except BaseException as exc:
        sql_guard.reset(token)
        span.fail(exc)
        raise
    sql_guard.reset(token)
    span.close()
    return result
