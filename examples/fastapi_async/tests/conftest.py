"""The bookshop's tests need a PostgreSQL database: its URL comes from BOOKSHOP_DATABASE_URL
(`postgresql://user@host:port/dbname`; the tables are created and dropped by the session
fixture `database_url`)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest
from bookshop import ENV_URL, create_app
from bookshop.db import create_schema, drop_schema
from fastapi.testclient import TestClient


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    url = os.environ.get(ENV_URL)
    if not url:
        pytest.skip(f"{ENV_URL} is not set: these tests need a PostgreSQL database URL")
    asyncio.run(create_schema(url))
    yield url
    asyncio.run(drop_schema(url))


@pytest.fixture
def client(database_url: str) -> Iterator[TestClient]:
    with TestClient(create_app(database_url)) as test_client:
        yield test_client
