from __future__ import annotations

import logging
from pathlib import Path

import pytest
from flask.testing import FlaskClient
from shop import create_app


def test_places_an_order_priced_by_the_pricing_service(client: FlaskClient) -> None:
    response = client.post("/orders", json={"product_id": 2, "quantity": 3})
    assert response.status_code == 201
    order = response.get_json()
    assert order["total_cents"] == 2160  # 3 x 800 with 10% off
    fetched = client.get(f"/orders/{order['id']}")
    assert fetched.get_json() == order


def test_logs_the_new_order(client: FlaskClient, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="shop"):
        client.post("/orders", json={"product_id": 1})
    assert any("order" in r.getMessage() and "Teapot" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "payload",
    [{}, {"product_id": "x"}, {"product_id": 1, "quantity": 0}, {"product_id": 42}],
    ids=["missing", "not-a-number", "zero-quantity", "unknown-product"],
)
def test_rejects_a_bad_order(client: FlaskClient, payload: dict) -> None:
    response = client.post("/orders", json=payload)
    assert response.status_code == 400
    assert "error" in response.get_json()


def test_unknown_order_is_404(client: FlaskClient) -> None:
    assert client.get("/orders/does-not-exist").status_code == 404


def test_pricing_service_down_is_a_502(tmp_path: Path) -> None:
    # Port 9 (discard) on loopback: nothing listens there, the connection is refused.
    broken = create_app(str(tmp_path / "other.db"), "http://127.0.0.1:9")
    response = broken.test_client().post("/orders", json={"product_id": 1})
    assert response.status_code == 502
    assert response.get_json() == {"error": "pricing service unreachable"}
