from __future__ import annotations

from flask.testing import FlaskClient


def test_lists_every_product(client: FlaskClient) -> None:
    response = client.get("/products")
    assert response.status_code == 200
    assert [p["name"] for p in response.get_json()] == ["Teapot", "Tea cup", "Kettle"]


def test_searches_products_by_name(client: FlaskClient) -> None:
    response = client.get("/products", query_string={"q": "Tea"})
    assert [p["id"] for p in response.get_json()] == [1, 2]


def test_shows_one_product(client: FlaskClient) -> None:
    response = client.get("/products/3")
    assert response.get_json() == {"id": 3, "name": "Kettle", "price_cents": 4200}


def test_unknown_product_is_404(client: FlaskClient) -> None:
    assert client.get("/products/99").status_code == 404


def test_a_crash_is_a_500(client: FlaskClient) -> None:
    assert client.get("/boom").status_code == 500
