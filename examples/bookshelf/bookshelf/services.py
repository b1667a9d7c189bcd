"""What the views call: plain functions taking models, generators and open files."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import IO

from bookshelf.models import Author, Book


def author_card(author: Author) -> dict[str, object]:
    """The author's name and id only: never touches `author.books`."""
    return {"id": author.id, "name": author.name}


def titles(books: Iterable[Book]) -> Iterator[str]:
    """A generator over the titles (lazy: nothing is read until the caller iterates)."""
    return (book.title for book in books)


def first_line_later(handle: IO[str]) -> IO[str]:
    """Hands the open file back unread."""
    return handle


def count_lines(handle: IO[str]) -> int:
    return sum(1 for _ in handle)
