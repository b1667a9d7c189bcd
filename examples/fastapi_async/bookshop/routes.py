"""The API: one SELECT per listing, an INSERT, a join, a task group of counts."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import BaseModel
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bookshop.db import Author, Book
from bookshop.deps import get_session, request_id

router = APIRouter()


class NewAuthor(BaseModel):
    name: str


class NewBook(BaseModel):
    title: str


@router.get("/authors")
async def list_authors(session: AsyncSession = Depends(get_session)) -> list[dict[str, Any]]:
    rows = (await session.scalars(select(Author).order_by(Author.id))).all()
    return [{"id": a.id, "name": a.name} for a in rows]


@router.post("/authors", status_code=201)
async def add_author(
    body: NewAuthor,
    session: AsyncSession = Depends(get_session),
    rid: str = Depends(request_id),
) -> dict[str, Any]:
    author = Author(name=body.name)
    session.add(author)
    await session.flush()
    return {"id": author.id, "name": author.name, "request": rid}


@router.post("/authors/{author_id}/books", status_code=201)
async def add_book(
    author_id: int, body: NewBook, session: AsyncSession = Depends(get_session)
) -> dict[str, Any]:
    author = await session.get(Author, author_id)
    if author is None:
        raise HTTPException(404, "no such author")
    book = Book(title=body.title, author_id=author_id)
    session.add(book)
    await session.flush()
    return {"id": book.id, "title": book.title}


@router.get("/authors/{author_id}/books")
async def author_books(
    author_id: int, session: AsyncSession = Depends(get_session)
) -> dict[str, Any]:
    author = await session.get(Author, author_id)
    if author is None:
        raise HTTPException(404, "no such author")
    books = (await session.scalars(select(Book).where(Book.author_id == author_id))).all()
    return {"author": author.name, "titles": sorted_titles([b.title for b in books])}


def sorted_titles(titles: list[str]) -> list[str]:
    return sorted(titles, key=str.casefold)


@router.get("/stats")
async def stats(request: Request) -> dict[str, int]:
    # two counts at once, each in its own task and session
    db = request.app.state.db
    authors, books = await asyncio.gather(count(db, Author), count(db, Book))
    return {
        "authors": authors,
        "books": books,
        "score": await anyio.to_thread.run_sync(score, authors, books),
    }


async def count(db: Any, model: Any) -> int:
    async with db.session() as session:
        return int(await session.scalar(select(func.count()).select_from(model)) or 0)


def score(authors: int, books: int) -> int:
    return books * 10 + authors


@router.get("/health")
def health() -> dict[str, str]:
    # a sync endpoint: FastAPI runs it in a worker thread (run_in_threadpool)
    return {"status": status_text()}


def status_text() -> str:
    return "ok"
