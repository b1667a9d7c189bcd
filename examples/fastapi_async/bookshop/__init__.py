"""An async FastAPI bookshop on PostgreSQL: async SQLAlchemy over asyncpg, a BaseHTTPMiddleware,
`yield` dependencies (async and sync), a task group and worker-thread hand-offs.

`create_app(database_url)` (bookshop.app) is the app factory; the URL is a `postgresql://` (or
`postgresql+asyncpg://`) URL, by default `$BOOKSHOP_DATABASE_URL`.
"""

from __future__ import annotations

from bookshop.app import ENV_URL, create_app

__all__ = ["ENV_URL", "create_app"]
