"""The bookshelf example: a Flask app factory in the package `__init__`, blueprints, and
SQLAlchemy models with a lazy relationship (`Author.books`)."""

from __future__ import annotations

from typing import Any, Optional

from flask import Flask
from sqlalchemy import create_engine
from sqlalchemy.orm import sessionmaker


def create_app(database_url: Optional[str] = None, **settings: Any) -> Flask:
    """The app: one engine and session factory per app, the `books` and `uploads` blueprints."""
    from bookshelf.models import Base
    from bookshelf.views import books, uploads

    app = Flask(__name__)
    app.config.update(settings)
    engine = create_engine(database_url or "sqlite://")
    Base.metadata.create_all(engine)
    app.extensions["bookshelf.sessions"] = sessionmaker(engine, expire_on_commit=False)
    app.extensions["bookshelf.engine"] = engine
    app.register_blueprint(books)
    app.register_blueprint(uploads, url_prefix="/uploads")
    return app
