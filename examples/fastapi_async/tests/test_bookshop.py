"""The bookshop's API against a real PostgreSQL (see conftest.py)."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_add_and_list_authors(client: TestClient) -> None:
    created = client.post("/authors", json={"name": "Ursula"}, headers={"X-Request-Id": "r1"})
    assert created.status_code == 201
    assert created.json()["request"] == "r1"
    listed = client.get("/authors")
    assert listed.status_code == 200
    assert {"id": created.json()["id"], "name": "Ursula"} in listed.json()
    assert "x-elapsed-ms" in listed.headers


def test_books_of_an_author(client: TestClient) -> None:
    author = client.post("/authors", json={"name": "Iain"}).json()
    for title in ("Excession", "consider Phlebas"):
        assert (
            client.post(f"/authors/{author['id']}/books", json={"title": title}).status_code == 201
        )
    books = client.get(f"/authors/{author['id']}/books")
    assert books.json() == {"author": "Iain", "titles": ["consider Phlebas", "Excession"]}


def test_missing_author_is_404(client: TestClient) -> None:
    assert client.get("/authors/999999/books").status_code == 404


def test_stats_and_health(client: TestClient) -> None:
    stats = client.get("/stats").json()
    assert stats["score"] == stats["books"] * 10 + stats["authors"]
    assert client.get("/health").json() == {"status": "ok"}
