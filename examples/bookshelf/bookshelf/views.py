"""The `books` blueprint (path parameters, urlencoded forms) and `uploads` (multipart files)."""

from __future__ import annotations

from flask import Blueprint, abort, current_app, jsonify, request
from sqlalchemy import select
from sqlalchemy.orm import Session

from bookshelf import services
from bookshelf.models import Author, Book

books = Blueprint("books", __name__)
uploads = Blueprint("uploads", __name__)


def _session() -> Session:
    return current_app.extensions["bookshelf.sessions"]()  # type: ignore[no-any-return]


@books.post("/authors")
def add_author():  # type: ignore[no-untyped-def]
    with _session() as db:
        author = Author(name=request.form["name"])
        for title in request.form.getlist("title"):
            author.books.append(Book(title=title))
        db.add(author)
        db.commit()
        return jsonify(services.author_card(author)), 201


@books.get("/authors/<int:author_id>")
def show_author(author_id: int):  # type: ignore[no-untyped-def]
    with _session() as db:
        author = db.get(Author, author_id)
        if author is None:
            abort(404)
        return jsonify(services.author_card(author))


@books.get("/authors/<int:author_id>/books")
def author_books(author_id: int):  # type: ignore[no-untyped-def]
    with _session() as db:
        found = db.scalars(select(Book).where(Book.author_id == author_id).order_by(Book.id))
        return jsonify(list(services.titles(found)))


@uploads.post("/<shelf>")
def upload(shelf: str):  # type: ignore[no-untyped-def]
    sent = request.files["file"]
    lines = sent.read().decode("utf-8").count("\n")
    return jsonify({"shelf": shelf, "note": request.form.get("note", ""), "lines": lines}), 201
