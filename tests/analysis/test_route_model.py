"""tracetool.route_model and tracetool.identifiers: the shared answers (issue 15)."""

from __future__ import annotations

import pytest

from tracetool import identifiers, route_model
from tracetool.errors import UsageError


def server(path: str, template: str | None = None, method: str = "GET") -> dict:
    request = {"request_method": method, "path_info": path}
    if template is not None:
        request["normalized_path_info"] = template
    return {"http_server_request": request}


@pytest.mark.parametrize(
    ("path", "template", "route"),
    [
        ("/book/3", "/book/<int:pk>", "/book/{pk}"),
        ("/items/3?x=1", "/items/{item_id}", "/items/{item_id}"),
        ("/users/7", "/users/:id(.:format)", "/users/{id}"),
        ("/book/7/renew/", "^book/(?P<pk>[0-9]+)/renew/$", "/book/{pk}/renew/"),  # Django re_path
        ("/items/5", "/items/{value}", "/items/{value}"),  # a real parameter keeps its name
        ("/api/v1/users/2", None, "/api/v1/users/{user_id}"),
        ("/api/v1/users/ab12cd34ef56", None, "/api/v1/users/{user_id}"),
        ("/categories/3/posts/2024-01-31", None, "/categories/{category_id}/posts/{post_id}"),
        ("/confirm/ffffffffffffffff", None, "/confirm/{confirm_id}"),
        ("/users/:int", None, "/users/{user_id}"),  # as sanitize writes it
        ("/42", None, "/{id}"),
        ("/health", None, "/health"),
    ],
)
def test_server_template(path: str, template: str | None, route: str) -> None:
    assert route_model.server_template(server(path, template)) == route


def test_shape_and_parse_route_read_every_dialect() -> None:
    shapes = {
        route_model.shape(route_model.parse_route(text)[1])
        for text in (
            "GET /book/:id",
            "get /book/{pk}",
            "GET /book/<int:pk>",
            "GET /book/{id:int}",
            "GET http://localhost:8000/book/7?x=1",
        )
    }
    assert shapes == {"/book/{}"}
    assert route_model.same_route(("get", "/b/:id"), ("GET", "/b/<int:pk>"))
    assert not route_model.same_route(("POST", "/b/:id"), ("GET", "/b/<int:pk>"))
    with pytest.raises(UsageError, match="expected '<METHOD> <path>'"):
        route_model.parse_route("/book/:id")


@pytest.mark.parametrize(
    ("url", "route"),
    [
        ("http://127.0.0.1:33025/quote/5?c=EUR", "GET http://127.0.0.1/quote/:int"),
        ("http://localhost:42319/quote/5", "GET http://localhost/quote/:int"),
        ("http://[::1]:5000/x", "GET http://[::1]/x"),
        (
            "https://u:pw@api.example.com:8443/v1/users/42",
            "GET https://api.example.com:8443/v1/users/:int",
        ),
    ],
)
def test_client_route_drops_loopback_ports_only(url: str, route: str) -> None:
    assert route_model.client_route("get", url) == route


def test_identifiers_are_forgiving() -> None:
    known = [
        "catalog/models/BookInstance#is_overdue",
        "catalog/models/Book#display_author",
        "catalog/views.book_detail",
        "catalog/views.renew_book_librarian",
    ]
    assert identifiers.matches("catalog.models.BookInstance.is_overdue", known) == [known[0]]
    assert identifiers.matches("catalog.views.book_detail", known) == [known[2]]
    assert identifiers.matches("catalog/views.book_detail", known) == [known[2]]
    assert identifiers.matches("Catalog.views.book_detail", known) == []
    assert identifiers.closest("catalog.views.renew", known)[0] == known[3]
    assert identifiers.closest("is_overdue", known) == [known[0]]
    assert len(identifiers.closest("catalog", known * 3, n=5)) <= 5
    assert identifiers.did_you_mean("zzz", known) == ""
