"""`yield` dependencies: an async one (the database session, committed on the way out) and a
sync one (FastAPI runs its set-up and tear-down in worker threads)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

from fastapi import Request
from sqlalchemy.ext.asyncio import AsyncSession


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    session = request.app.state.db.session()
    try:
        yield session
        await session.commit()
    finally:
        await session.close()


def request_id(request: Request) -> Iterator[str]:
    rid = request.headers.get("X-Request-Id") or uuid.uuid4().hex
    yield rid
    audit(rid)


def audit(rid: str) -> str:
    return f"done {rid}"
