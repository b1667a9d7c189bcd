"""Authors and their books; `Author.books` loads lazily (one query when first touched)."""

from __future__ import annotations

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "authors"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    books: Mapped[list[Book]] = relationship(back_populates="author", lazy="select")

    def __repr__(self) -> str:
        # touches the lazy relationship: a repr() by anyone but the app would add a query
        return f"<Author {self.name!r} with {len(self.books)} books>"


class Book(Base):
    __tablename__ = "books"

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    author_id: Mapped[int] = mapped_column(ForeignKey("authors.id"))
    author: Mapped[Author] = relationship(back_populates="books", lazy="select")

    def __str__(self) -> str:
        return f"{self.title} by {self.author.name}"  # follows the foreign key
