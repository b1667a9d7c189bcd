"""The bookshelf's own suite: the app factory, forms and uploads, and exactly the SQL expected —
it passes the same with and without `--trace-record` (recording must not add queries)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from bookshelf import create_app, services
from bookshelf.models import Author, Book
from flask import Flask
from flask.testing import FlaskClient


def test_the_factory_builds_an_app() -> None:
    app = create_app()
    assert sorted(app.blueprints) == ["books", "uploads"]


def test_adds_an_author_from_a_form(client: FlaskClient) -> None:
    response = client.post("/authors", data={"name": "Le Guin", "title": ["Earthsea", "Lathe"]})
    assert response.status_code == 201
    assert response.get_json()["name"] == "Le Guin"
    assert client.get("/authors/1/books").get_json() == ["Earthsea", "Lathe"]


def test_showing_an_author_never_loads_the_books(
    client: FlaskClient, statements: list[str]
) -> None:
    client.post("/authors", data={"name": "Borges", "title": ["Ficciones", "Aleph"]})
    statements.clear()
    assert client.get("/authors/1").get_json() == {"id": 1, "name": "Borges"}
    # one SELECT of the author: the lazy `books` relationship (read by Author.__repr__) is not
    # loaded, and no Book.__str__ follows its foreign key
    assert len(statements) == 1, statements
    assert "FROM authors" in statements[0]


def test_models_generators_and_files_passed_to_functions_are_left_alone(
    app: Flask, statements: list[str], tmp_path: Path
) -> None:
    sessions = app.extensions["bookshelf.sessions"]
    with sessions() as db:
        db.add(Author(name="Calvino", books=[Book(title="Invisible Cities")]))
        db.commit()
    statements.clear()
    with sessions() as db:
        author = db.get(Author, 1)
        assert services.author_card(author) == {"id": 1, "name": "Calvino"}
        assert len(statements) == 1, statements  # the get; nothing from the repr of `author`
        book = author.books[0]  # the app itself loads the books: one more query
        assert len(statements) == 2, statements
        generator = services.titles([book, book])
        assert list(generator) == ["Invisible Cities", "Invisible Cities"]  # not consumed before
    path = tmp_path / "lines.txt"
    path.write_text("a\nb\nc\n")
    with path.open() as handle:
        assert services.first_line_later(handle) is handle
        assert handle.tell() == 0  # the agent did not read it
        assert services.count_lines(handle) == 3


def test_uploads_a_file_with_form_fields(client: FlaskClient) -> None:
    response = client.post(
        "/uploads/fiction",
        data={"note": "first shelf", "file": (io.BytesIO(b"one\ntwo\n"), "list.txt")},
        content_type="multipart/form-data",
    )
    assert response.status_code == 201
    assert response.get_json() == {"shelf": "fiction", "note": "first shelf", "lines": 2}


def test_requests_under_a_frozen_clock(client: FlaskClient) -> None:
    freezegun = pytest.importorskip("freezegun")
    with freezegun.freeze_time("2024-02-29 12:00:00"):
        response = client.post("/authors", data={"name": "Dated", "title": "Leap"})
        assert response.status_code == 201
        assert client.get("/authors/1").get_json()["name"] == "Dated"
