"""The app factory."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Optional

from fastapi import FastAPI

from bookshop.db import Database
from bookshop.middleware import TimingMiddleware
from bookshop.routes import router

ENV_URL = "BOOKSHOP_DATABASE_URL"


def create_app(database_url: Optional[str] = None) -> FastAPI:
    url = database_url or os.environ.get(ENV_URL)
    if not url:
        raise RuntimeError(f"no database: pass create_app(url) or set {ENV_URL}")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.db = Database(url)
        try:
            yield
        finally:
            await app.state.db.close()

    app = FastAPI(title="bookshop", lifespan=lifespan)
    app.add_middleware(TimingMiddleware)
    app.include_router(router)
    return app
