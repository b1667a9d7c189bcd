"""tracetool.routes: URL/path → route template (spec sanitize rule 7) and template syntaxes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tracetool.routes import (
    KINDS,
    classify_segment,
    normalize_path,
    normalize_url,
    path_params,
    route_key,
    to_colon,
    to_openapi,
)

# shared/ sits beside the project root (/work/main → /work/shared); a helper's worktree is one
# level deeper (/work/wt/<name>), so look upwards from the project root's parent.
SHARED = next(
    (
        parent / "shared"
        for parent in Path(__file__).resolve().parents[2:]
        if (parent / "shared" / "corpus").is_dir()
    ),
    Path(__file__).resolve().parents[1].parent / "shared",
)
CORPUS = SHARED / "corpus" / "appmap-js"

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)

URLS = [
    # user:password, port, query and fragment
    (
        "https://user:pw@api.example.com:8443/v1/users/42/orders?x=1#f",
        "https://api.example.com:8443/v1/users/:int/orders",
    ),
    ("https://alice@example.com/", "https://example.com/"),
    ("https://us%40er:p@ss@example.com/a", "https://example.com/a"),
    ("http://semian:31050/500", "http://semian:31050/:int"),
    ("http://toxiproxy:8474/proxies", "http://toxiproxy:8474/proxies"),
    # IPv6 and IPv4 hosts are hosts, not path values
    ("http://[::1]:8080/items/17?debug=true", "http://[::1]:8080/items/:int"),
    ("http://[2001:db8::7]/status", "http://[2001:db8::7]/status"),
    ("http://127.0.0.1:5000/api/v2/jobs/99", "http://127.0.0.1:5000/api/v2/jobs/:int"),
    # empty path, query only, fragment only, host case
    ("https://example.com", "https://example.com"),
    ("https://example.com?token=secret", "https://example.com"),
    ("https://example.com#section-2", "https://example.com"),
    ("HTTPS://API.Example.COM/Users", "https://api.example.com/Users"),
    # provider ids and tokens
    (
        "https://api.stripe.com/v1/customers/cus_JnA0JVDwH8BjTl",
        "https://api.stripe.com/v1/customers/:token",
    ),
    ("https://api.stripe.com/v1/charges", "https://api.stripe.com/v1/charges"),
    (f"https://auth.example.com/verify/{JWT}", "https://auth.example.com/verify/:token"),
    (
        "https://api.github.com/repos/o/r/commits/da39a3ee5e6b4b0d3255bfef95601890afd80709",
        "https://api.github.com/repos/o/r/commits/:hex",
    ),
    # scheme-relative and relative references
    ("//cdn.example.com/img/7/logo.png", "//cdn.example.com/img/:int/logo.png"),
    ("/just/a/path/5?q=1", "/just/a/path/:int"),
]

PATHS = [
    ("/", "/"),
    ("", ""),
    ("/users/42", "/users/:int"),
    ("/users/42/", "/users/:int/"),  # trailing slash kept
    ("/users//42", "/users//:int"),  # double slash kept
    ("/admincp/users/", "/admincp/users/"),
    ("/users/42/posts/9f1c2b3a-1111-4222-8333-444455556666", "/users/:int/posts/:uuid"),
    ("/x/9F1C2B3A-1111-4222-8333-444455556666", "/x/:uuid"),
    ("/x/00000000-0000-0000-0000-000000000000", "/x/:uuid"),
    ("/reports/2024-01-31", "/reports/:date"),
    ("/events/2024-01-31T10:20:30Z", "/events/:iso8601"),
    ("/events/2024-01-31T10:20:30.123%2B01:00", "/events/:iso8601"),
    ("/events/2024-01-31T10%3A20", "/events/:iso8601"),
    ("/n/-5", "/n/:int"),
    ("/n/3.14", "/n/:float"),
    ("/n/-0.5e10", "/n/:float"),
    ("/n/007", "/n/:int"),
    ("/members/bob.smith+tag@example.co.uk/edit", "/members/:email/edit"),
    ("/members/bob%40example.com", "/members/:email"),
    ("/objects/507f1f77bcf86cd799439011", "/objects/:hex"),  # mongo ObjectId
    ("/blobs/da39a3ee5e6b4b0d3255bfef95601890afd80709", "/blobs/:hex"),
    ("/x/deadbeef42", "/x/:hex"),
    # purely alphabetic segments are kept, hex letters or not
    ("/x/deadbeef/face/cafe/decade", "/x/deadbeef/face/cafe/decade"),
    ("/x/deadbeefdeadbeef", "/x/deadbeefdeadbeef"),
    (f"/session/{JWT}/refresh", "/session/:token/refresh"),
    ("/account_activations/7Jgdj4mjIIWebMP5M97Xwg/edit", "/account_activations/:token/edit"),
    ("/account_activations/_uNf3gpWrC6sUrZXry1T0Q/edit", "/account_activations/:token/edit"),
    ("/account_activations/invalid%20token/edit", "/account_activations/:value/edit"),
    ("/password_resets/LS0tCm9wZXJhdGlvbjogcmVzZXQK=/edit", "/password_resets/:token/edit"),
    ("/password_resets/new", "/password_resets/new"),
    # version words and well-known words with digits are route words
    ("/api/v1/users", "/api/v1/users"),
    ("/api/V2/x/v10/y/v1beta1/z/v1.2", "/api/V2/x/v10/y/v1beta1/z/v1.2"),
    ("/oauth2/callback/s3/h2/api2", "/oauth2/callback/s3/h2/api2"),
    ("/auth/sha256/base64/x509/i18n", "/auth/sha256/base64/x509/i18n"),
    ("/.well-known/openid-configuration", "/.well-known/openid-configuration"),
    # digits anywhere else make a value: slugs, names, dated files
    ("/users/user-42", "/users/:value"),
    ("/users/john1987", "/users/:value"),
    ("/pin/a1-b2-c3-d4", "/pin/:value"),
    ("/oauth2-s3/page2", "/oauth2-s3/page2"),
    ("/files/report-2024-01-31.pdf", "/files/:value"),
    ("/static/main.3f9a8b2c.js", "/static/:value"),
    ("/hosts/192.168.0.1", "/hosts/:value"),
    # file names are route words
    ("/static/logo.png", "/static/logo.png"),
    ("/assets/app.js", "/assets/app.js"),
    ("/media/intro.mp4", "/media/intro.mp4"),
    # percent-encoding is decoded before classification
    ("/tags/%34%32", "/tags/:int"),
    ("/caf%C3%A9/menu", "/café/menu"),
    ("/bad/%FF%FE", "/bad/:value"),
    ("/files/a%2Fb", "/files/:value"),
    # query, fragment and matrix parameters are dropped
    ("/search?q=secret#top", "/search"),
    ("/cart;jsessionid=0AB12CD34EF/items/3", "/cart/items/:int"),
    # already templates: kept as written
    ("/users/:id/edit", "/users/:id/edit"),
    ("/users/{id}/posts/{post_id:int}", "/users/{id}/posts/{post_id:int}"),
    ("/users/<int:id>/<slug>", "/users/<int:id>/<slug>"),
    ("/users/:id(.:format)", "/users/:id(.:format)"),
    ("/files/*path", "/files/*path"),
    ("/owners/*/pets/1/visits", "/owners/*/pets/:int/visits"),
    ("/users/:int/posts/:uuid", "/users/:int/posts/:uuid"),
    ("/x/%7Bid%7D", "/x/{id}"),
    # a colon in front of data does not make it a template
    ("/p/:a8f3k2j4x9", "/p/:value"),
]


@pytest.mark.parametrize(("url", "expected"), URLS)
def test_normalize_url(url: str, expected: str) -> None:
    assert normalize_url(url) == expected


@pytest.mark.parametrize(("path", "expected"), PATHS)
def test_normalize_path(path: str, expected: str) -> None:
    assert normalize_path(path) == expected


@pytest.mark.parametrize(("path", "expected"), PATHS)
def test_normalize_path_is_idempotent(path: str, expected: str) -> None:
    assert normalize_path(expected) == expected


def test_golden_table_is_large_enough() -> None:
    assert len(URLS) + len(PATHS) >= 40


def test_malformed_urls_never_raise() -> None:
    assert normalize_url("http://[::1/x/5") == "http://[::1/x/:int"
    assert normalize_url("") == ""
    assert normalize_url("  https://e.com/a/1  ") == "https://e.com/a/:int"
    assert normalize_url("mailto:bob@example.com") == "mailto::email"


@pytest.mark.parametrize(
    ("segment", "kind"),
    [
        ("users", None),
        ("", None),
        ("deadbeef", None),
        ("Face", None),
        ("password_resets", None),
        ("v3", None),
        ("42", "int"),
        ("-1", "int"),
        ("1.5", "float"),
        ("123E4567-E89B-12D3-A456-426614174000", "uuid"),
        ("1999-12-31", "date"),
        ("1999-12-31T23:59", "iso8601"),
        ("a@b.io", "email"),
        ("abcdef0123", "hex"),
        ("cus_JnA0JVDwH8BjTl", "token"),
        ("user-42", "value"),
        ("hello world", "value"),
        (":id", None),
        ("{id}", None),
        ("<int:id>", None),
        ("{id}.json", None),
    ],
)
def test_classify_segment(segment: str, kind: str | None) -> None:
    assert classify_segment(segment) == kind
    assert kind is None or kind in KINDS


@pytest.mark.parametrize(
    ("template", "openapi", "colon", "params"),
    [
        ("/users/:id(.:format)", "/users/{id}", "/users/:id(.:format)", ["id"]),  # Rails
        ("/posts(/:page)(.:format)", "/posts", "/posts(/:page)(.:format)", []),
        (
            "/u/<int:user_id>/p/<slug>",
            "/u/{user_id}/p/{slug}",
            "/u/:user_id/p/:slug",
            ["user_id", "slug"],
        ),  # Flask
        ("/items/{item_id}", "/items/{item_id}", "/items/:item_id", ["item_id"]),  # FastAPI
        (
            "/items/{id:int}/f/{rest:path}",
            "/items/{id}/f/{rest}",
            "/items/:id/f/:rest",
            ["id", "rest"],
        ),
        (
            "articles/<int:year>/<slug:slug>/",
            "articles/{year}/{slug}/",
            "articles/:year/:slug/",
            ["year", "slug"],
        ),  # Django path()
        ("^users/(?P<pk>[0-9]+)/$", "/users/{pk}/", "/users/:pk/", ["pk"]),  # Django re_path()
        (r"^a/(?P<y>\d{4})/(?P<s>[-\w]+)$", "/a/{y}/{s}", "/a/:y/:s", ["y", "s"]),
        ("/files/*path", "/files/{path}", "/files/*path", ["path"]),  # Rails glob
        ("/x/{id}.json", "/x/{id}.json", "/x/:id.json", ["id"]),
        ("/a/:int/b/:int", "/a/{int}/b/{int_2}", "/a/:int/b/:int", ["int", "int"]),
        ("/v1/static", "/v1/static", "/v1/static", []),
        ("/", "/", "/", []),
        ("", "", "", []),
        ("/owners/*/pets", "/owners/*/pets", "/owners/*/pets", []),
        ("/p/foo:batchGet", "/p/foo:batchGet", "/p/foo:batchGet", []),
    ],
)
def test_template_syntaxes(template: str, openapi: str, colon: str, params: list[str]) -> None:
    assert to_openapi(template) == openapi
    assert to_openapi(openapi) == openapi  # fixed point
    assert to_colon(template) == colon
    assert path_params(template) == params
    assert to_openapi(to_colon(openapi)) == openapi


def test_to_openapi_makes_repeated_names_unique() -> None:
    assert to_openapi("/a/:int/b/:int_2/c/:int") == "/a/{int}/b/{int_2}/c/{int_3}"
    assert to_openapi("/a/:int/b/:int/c/:int_2") == "/a/{int}/b/{int_3}/c/{int_2}"
    result = to_openapi("/a/:int/b/:int/c/:int_2")
    assert len(set(path_params(result))) == 3
    assert to_openapi(result) == result


@pytest.mark.parametrize(
    ("method", "template", "key"),
    [
        ("get", "/users/:id", "GET /users/{id}"),
        ("GET", "/users/{id}", "GET /users/{id}"),
        (" post ", "/users(.:format)", "POST /users"),
        ("delete", "/u/<int:id>", "DELETE /u/{id}"),
        ("patch", "/users/:int/posts/:int", "PATCH /users/{int}/posts/{int_2}"),
    ],
)
def test_route_key(method: str, template: str, key: str) -> None:
    assert route_key(method, template) == key


def test_route_key_joins_concrete_and_template_routes() -> None:
    concrete = normalize_path("/users/762146111/edit?tab=1")
    assert route_key("get", concrete) == route_key("GET", "/users/{int}/edit")
    assert route_key("get", to_colon("/users/{id}")) == route_key("get", "/users/{id}")


def _corpus_requests() -> tuple[list[str], list[str]]:
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    paths: list[str] = []
    urls: list[str] = []
    for file in sorted(CORPUS.rglob("*.appmap.json")):
        try:
            doc = orjson.loads(file.read_bytes())
        except orjson.JSONDecodeError:
            continue  # deliberately malformed corpus files are other tests' business
        events = doc.get("events") if isinstance(doc, dict) else None
        for event in events or []:
            server = event.get("http_server_request") or {}
            client = event.get("http_client_request") or {}
            if isinstance(server.get("path_info"), str):
                paths.append(server["path_info"])
            if isinstance(client.get("url"), str):
                urls.append(client["url"])
    return paths, urls


def _digit_only_segments(template: str) -> list[str]:
    return [segment for segment in template.split("/") if segment.isdigit()]


def test_corpus_paths_and_urls_leave_no_numeric_segment() -> None:
    paths, urls = _corpus_requests()
    assert len(paths) > 20 and len(urls) > 5  # the corpus really was read
    for path in paths:
        result = normalize_path(path)
        kinds = {segment[1:] for segment in result.split("/") if segment.startswith(":")}
        assert kinds <= KINDS, (path, result)
        assert result.startswith("/") == path.startswith("/")
        assert not _digit_only_segments(result), (path, result)
        assert normalize_path(result) == result
    for url in urls:
        result = normalize_url(url)
        after_host = result.split("://", 1)[-1].partition("/")[2]
        assert not _digit_only_segments(after_host), (url, result)
        assert "?" not in result and "#" not in result
    # spot checks on real recordings
    assert normalize_path("/microposts/1033843181") == "/microposts/:int"
    assert normalize_url("https://api.stripe.com/v1/customers/cus_JnA0JVDwH8BjTl") == (
        "https://api.stripe.com/v1/customers/:token"
    )
