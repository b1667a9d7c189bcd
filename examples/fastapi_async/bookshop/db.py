"""Models and the async engine (SQLAlchemy 2 over asyncpg)."""

from __future__ import annotations

from sqlalchemy import ForeignKey, String
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.pool import NullPool


class Base(DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "authors"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(80))


class Book(Base):
    __tablename__ = "books"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    author_id: Mapped[int] = mapped_column(ForeignKey("authors.id"))


def async_url(url: str) -> str:
    """`postgresql://…` → `postgresql+asyncpg://…` (other drivers are kept as given)."""
    if url.startswith("postgresql://"):
        return "postgresql+asyncpg://" + url[len("postgresql://") :]
    return url


class Database:
    """One engine per app; a session per request (`deps.get_session`)."""

    def __init__(self, url: str) -> None:
        # NullPool: connections are not shared between event loops (the test client runs the
        # app in its own loop)
        self.engine = create_async_engine(async_url(url), poolclass=NullPool)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)

    def session(self) -> AsyncSession:
        return self.sessions()

    async def close(self) -> None:
        await self.engine.dispose()


async def create_schema(url: str) -> None:
    engine = create_async_engine(async_url(url), poolclass=NullPool)
    async with engine.begin() as conn:
        await conn.run_sync(Base.metadata.drop_all)
        await conn.run_sync(Base.metadata.create_all)
    await engine.dispose()


async def drop_schema(url: str) -> None:
    engine = create_async_engine(async_url(url), poolclass=NullPool)
    async with engine.begin() as conn:
        await conn.run_sync(Base.metadata.drop_all)
    await engine.dispose()
