"""Fixtures: the pricing stub on 127.0.0.1 and a shop app on a fresh database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from shop import create_app
from shop.pricing_stub import PricingStub


@pytest.fixture(scope="session")
def pricing_url() -> Iterator[str]:
    stub = PricingStub().start()
    yield stub.url
    stub.stop()


@pytest.fixture
def app(tmp_path: Path, pricing_url: str) -> Flask:
    return create_app(str(tmp_path / "shop.db"), pricing_url)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()
