"""Fixtures: a bookshelf app on a fresh SQLite file, and the SQL it runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from bookshelf import create_app
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import event


@pytest.fixture
def app(tmp_path: Path) -> Flask:
    return create_app(f"sqlite:///{tmp_path / 'books.db'}", TESTING=True)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def statements(app: Flask) -> Iterator[list[str]]:
    """Every SQL statement the app's engine runs from here on."""
    seen: list[str] = []
    engine = app.extensions["bookshelf.engine"]

    def record(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    yield seen
    event.remove(engine, "before_cursor_execute", record)
