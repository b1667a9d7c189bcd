"""tracetool.openapi.generate: documents from recordings, checked by openapi-spec-validator."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from tests.conftest import CORPUS, corpus_recordings
from tests.openapi.conftest import ApiRecorder, assert_valid, param
from tracetool.openapi import OpenApiOptions, generate

COMPARE = CORPUS / "packages/cli/tests/unit/fixtures/compare/.appmap/change-report/all-succeeded"


def one(recorder: ApiRecorder, write: Callable[..., Path], **options: Any) -> dict[str, Any]:
    path = write(recorder)
    result = generate(path.parent, OpenApiOptions(**options))
    assert_valid(result.document)
    return result.document


@pytest.mark.parametrize("recording", corpus_recordings(), ids=lambda p: p.name[:60])
def test_every_corpus_recording_gives_a_valid_document(recording: Path) -> None:
    result = generate([recording])
    assert_valid(result.document)
    assert result.recordings <= 1


def test_whole_corpus_is_valid_and_deterministic(corpus: Path) -> None:
    first = generate(corpus, OpenApiOptions(workers=1))
    second = generate(corpus, OpenApiOptions(workers=2))
    assert_valid(first.document)
    assert first.yaml() == second.yaml()
    assert first.requests > 50 and len(first.document["paths"]) > 20
    assert list(first.document["paths"]) == sorted(first.document["paths"])


@pytest.mark.parametrize("side", ["base", "head"])
def test_agrees_with_appmaps_golden_where_appmap_is_right(side: str, corpus: Path) -> None:
    """Every operation we find is in AppMap's golden (made from a superset of these
    recordings), with a subset of its statuses and all its query parameters; unlike AppMap we
    also declare every path parameter."""
    golden = yaml.safe_load((COMPARE / side / "openapi.yml").read_text())["paths"]
    result = generate(COMPARE / side / "minitest")
    assert_valid(result.document)
    ours = result.document["paths"]
    assert "/microposts/{id}" in ours
    for path, item in ours.items():
        for method, operation in item.items():
            theirs = golden[path][method]
            assert set(operation["responses"]) <= set(theirs["responses"]), (path, method)
            names = {(p["name"], p["in"]) for p in operation.get("parameters", [])}
            assert {(p["name"], p["in"]) for p in theirs.get("parameters", [])} <= names
            declared = {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"}
            assert declared == set(_template_names(path))


def _template_names(path: str) -> list[str]:
    import re

    return re.findall(r"\{([^}]+)\}", path)


def test_appmap_openapi_spec_expectations(corpus: Path) -> None:
    recording = corpus / (
        "packages/openapi/test/data/appmaps/ruby/Users_signup_invalid_signup_information.appmap.json"
    )
    doc = generate([recording]).document
    assert doc["paths"]["/signup"]["get"]["summary"] == "Signup"
    assert "post" in doc["paths"]["/users"]


# -- the failures users reported against AppMap --------------------------------------------------


@pytest.mark.parametrize(
    ("authorization", "name", "scheme"),
    [
        ("Bearer abc.def.ghi", "bearer", {"type": "http", "scheme": "bearer"}),
        ("Basic dXNlcjpwdw==", "basic", {"type": "http", "scheme": "basic"}),
        ("Digest username=x", "digest", {"type": "http", "scheme": "digest"}),
        ("t0k3n", "api_key", {"type": "apiKey", "in": "header", "name": "Authorization"}),
        ("Token abc", "api_key", {"type": "apiKey", "in": "header", "name": "Authorization"}),
    ],
)
def test_security_schemes_are_declared(
    authorization: str,
    name: str,
    scheme: dict[str, str],
    recorder: ApiRecorder,
    write: Callable[..., Path],
) -> None:
    """appmap-python #229: operations named schemes that components never declared."""
    recorder.exchange("GET", "/api/me", headers={"authorization": authorization})  # lower case
    doc = one(recorder, write)
    assert doc["paths"]["/api/me"]["get"]["security"] == [{name: []}]
    assert doc["components"]["securitySchemes"] == {name: scheme}


def test_api_key_header_and_optional_auth(
    recorder: ApiRecorder, write: Callable[..., Path]
) -> None:
    recorder.exchange("GET", "/items", headers={"X-Api-Key": "k"})
    recorder.exchange("GET", "/items")
    doc = one(recorder, write)
    assert doc["paths"]["/items"]["get"]["security"] == [{"x_api_key": []}, {}]
    assert doc["components"]["securitySchemes"]["x_api_key"] == {
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
    }


def test_no_security_without_credentials(recorder: ApiRecorder, write: Callable[..., Path]) -> None:
    recorder.exchange("GET", "/public")
    doc = one(recorder, write)
    assert "security" not in doc["paths"]["/public"]["get"]
    assert "components" not in doc


def test_path_parameters_absent_from_message_are_declared(
    recorder: ApiRecorder, write: Callable[..., Path]
) -> None:
    """appmap-python #228: `{category_slug}` was used in the path but never declared."""
    recorder.exchange(
        "GET", "/c/news/posts", template="/c/{category_slug}/posts", params=[param("page")]
    )
    doc = one(recorder, write)
    parameters = doc["paths"]["/c/{category_slug}/posts"]["get"]["parameters"]
    assert parameters[0] == {
        "name": "category_slug",
        "in": "path",
        "required": True,
        "schema": {"type": "string"},
    }
    assert parameters[1]["name"] == "page" and parameters[1]["in"] == "query"


@pytest.mark.parametrize(
    ("template", "path"),
    [
        ("/users/:id", "/users/42"),
        ("/users/<int:id>", "/users/42"),
        ("/users/{id}", "/users/42"),
        ("/users/{id:int}", "/users/42"),
        ("/users/:id(.:format)", "/users/42"),
    ],
)
def test_template_dialects_become_one_openapi_path(
    template: str, path: str, recorder: ApiRecorder, write: Callable[..., Path]
) -> None:
    recorder.exchange("GET", path, template=template)
    doc = one(recorder, write)
    assert list(doc["paths"]) == ["/users/{id}"]
    (parameter,) = doc["paths"]["/users/{id}"]["get"]["parameters"]
    assert parameter["schema"] == {"type": "integer"}  # typed from the concrete segment


def test_path_parameter_types_from_observed_values(
    recorder: ApiRecorder, write: Callable[..., Path]
) -> None:
    recorder.exchange("GET", "/a/1", template="/a/{id}", params=[param("id", value="1")])
    recorder.exchange("GET", "/b/x1", template="/b/{id}", params=[param("id", value="x1")])
    recorder.exchange("GET", "/c/2", template="/c/{id}")
    recorder.exchange("GET", "/c/two", template="/c/{id}")
    uuid = "3f2a9b1c-1111-2222-3333-444455556666"
    recorder.exchange("GET", f"/d/{uuid}", template="/d/{id}")
    recorder.exchange("GET", "/e/1.5", template="/e/{id}", params=[param("id", "builtins.float")])
    doc = one(recorder, write)

    def schema(path: str) -> dict[str, str]:
        return doc["paths"][path]["get"]["parameters"][0]["schema"]

    assert schema("/a/{id}") == {"type": "integer"}
    assert schema("/b/{id}") == {"type": "string"}
    assert schema("/c/{id}") == {"type": "string"}  # mixed observations
    assert schema("/d/{id}") == {"type": "string", "format": "uuid"}
    assert schema("/e/{id}") == {"type": "number"}


def test_concrete_paths_are_templated_with_named_parameters(
    recorder: ApiRecorder, write: Callable[..., Path]
) -> None:
    recorder.exchange("GET", "/users/42/posts/7")
    recorder.exchange("GET", "/users/43/posts/8")
    recorder.exchange("GET", "/about")
    doc = one(recorder, write)
    assert sorted(doc["paths"]) == ["/about", "/users/{user_id}/posts/{post_id}"]
    parameters = doc["paths"]["/users/{user_id}/posts/{post_id}"]["get"]["parameters"]
    assert [(p["name"], p["schema"]["type"]) for p in parameters] == [
        ("user_id", "integer"),
        ("post_id", "integer"),
    ]


def test_paths_equal_but_for_parameter_names_are_merged(
    recorder: ApiRecorder, write: Callable[..., Path]
) -> None:
    recorder.exchange("GET", "/users/1", template="/users/{id}")
    recorder.exchange("DELETE", "/users/2")  # templated: /users/{user_id}
    doc = one(recorder, write)
    assert list(doc["paths"]) == ["/users/{id}"]
    assert set(doc["paths"]["/users/{id}"]) == {"get", "delete"}
    assert doc["paths"]["/users/{id}"]["delete"]["parameters"][0]["name"] == "id"


def test_query_parameters_and_routing_keys(
    recorder: ApiRecorder, write: Callable[..., Path]
) -> None:
    recorder.exchange(
        "GET",
        "/search",
        params=[
            param("q"),
            param("page", "Integer", "2"),
            param("filter", "Hash", "{}", properties=[{"name": "tag", "class": "String"}]),
            param("controller"),
            param("action"),
        ],
    )
    recorder.exchange("GET", "/search?sort=asc")
    doc = one(recorder, write)
    parameters = {p["name"]: p for p in doc["paths"]["/search"]["get"]["parameters"]}
    assert set(parameters) == {"q", "page", "filter", "sort"}
    assert parameters["page"]["schema"] == {"type": "integer"}
    assert parameters["filter"]["style"] == "deepObject"
    assert parameters["filter"]["schema"]["properties"] == {"tag": {"type": "string"}}


@pytest.mark.parametrize(
    ("headers", "params", "mime"),
    [
        ({"Content-Type": "application/json; charset=utf-8"}, [param("a")], "application/json"),
        ({"content-type": "multipart/form-data; boundary=x"}, [param("a")], "multipart/form-data"),
        (None, [param("a"), param("b")], "application/x-www-form-urlencoded"),
        (None, [param("a"), param("n", "Integer", "1")], "application/json"),
    ],
)
def test_request_bodies(
    headers: Any, params: Any, mime: str, recorder: ApiRecorder, write: Callable[..., Path]
) -> None:
    """appmap-js #537: POST bodies were dropped when the request had no Content-Type."""
    recorder.exchange("POST", "/things", 201, headers=headers, params=params)
    doc = one(recorder, write)
    content = doc["paths"]["/things"]["post"]["requestBody"]["content"]
    assert list(content) == [mime]
    assert set(content[mime]["schema"]["properties"]) == {p["name"] for p in params}


def test_bodies_merge_across_examples(recorder: ApiRecorder, write: Callable[..., Path]) -> None:
    json = {"Content-Type": "application/json"}
    recorder.exchange("PUT", "/t/1", template="/t/{id}", headers=json, params=[param("a")])
    recorder.exchange(
        "PUT", "/t/2", template="/t/{id}", headers=json, params=[param("b", "Integer", "2")]
    )
    doc = one(recorder, write)
    schema = doc["paths"]["/t/{id}"]["put"]["requestBody"]["content"]["application/json"]["schema"]
    assert schema == {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
    }


def test_responses_per_status_with_schemas(
    recorder: ApiRecorder, write: Callable[..., Path]
) -> None:
    json = {"Content-Type": "application/json"}
    user = {"class": "Hash", "properties": [{"name": "id", "class": "Integer"}]}
    recorder.exchange("GET", "/u", 200, response_headers=json, return_value=user)
    recorder.exchange("GET", "/u", 200, response_headers=json, return_value={"class": "String"})
    recorder.exchange("GET", "/u", 404, mime="text/html; charset=utf-8")
    recorder.exchange("GET", "/u", 299)
    doc = one(recorder, write)
    responses = doc["paths"]["/u"]["get"]["responses"]
    assert list(responses) == ["200", "299", "404"]
    assert responses["200"]["description"] == "OK"
    assert responses["404"] == {"description": "Not Found", "content": {"text/html": {}}}
    assert responses["299"] == {"description": "Success"}
    assert responses["200"]["content"]["application/json"]["schema"] == {
        "anyOf": [{"type": "string"}, {"type": "object", "properties": {"id": {"type": "integer"}}}]
    }


def test_media_requests_are_left_out(recorder: ApiRecorder, write: Callable[..., Path]) -> None:
    recorder.exchange("GET", "/assets/app.css")
    recorder.exchange("GET", "/logo", response_headers={"Content-Type": "image/png"})
    recorder.exchange("GET", "/fonts/x.woff2")
    recorder.exchange("GET", "/api")
    path = write(recorder)
    result = generate(path.parent)
    assert list(result.document["paths"]) == ["/api"]
    assert result.media == 3 and not result.warnings


@pytest.mark.parametrize(
    ("method", "path", "status", "reason"),
    [
        ("GET", "/x", 0, "status 0"),
        ("GET", "/x", -1, "status -1"),
        ("GET", "/x", 600, "status 600"),
        ("GET", "/x", 99, "status 99"),
        ("GET", "/x", None, "status None"),
        ("GET", "/x", "abc", "status abc"),
        ("GET", "users/1", 200, "path does not start with /"),
        ("GET", None, 200, "no request path"),
        ("BREW", "/pot", 418, "method BREW"),
    ],
)
def test_bad_requests_are_warned_about_and_skipped(
    method: str,
    path: Any,
    status: Any,
    reason: str,
    recorder: ApiRecorder,
    write: Callable[..., Path],
) -> None:
    recorder.exchange(method, path, status)
    recorder.exchange("GET", "/ok")
    written = write(recorder, "bad")
    result = generate(written.parent)
    assert_valid(result.document)
    assert list(result.document["paths"]) == ["/ok"]
    (warning,) = result.warnings
    assert warning.startswith("bad.trace.json: skipped 1 HTTP request") and reason in warning


def test_corpus_edge_cases_warn(corpus: Path) -> None:
    fixtures = corpus / "packages/cli/tests/unit/fixtures"
    result = generate(fixtures / "invalidStatusCode")
    assert_valid(result.document)
    assert any("status -1" in w for w in result.warnings)
    result = generate(fixtures / "missingPathInfo")
    assert_valid(result.document)
    assert any("no request path" in w for w in result.warnings)


def test_unanswered_request_is_skipped(recorder: ApiRecorder, write: Callable[..., Path]) -> None:
    recorder.call(http_server_request={"request_method": "GET", "path_info": "/hang"})
    recorder.exchange("GET", "/ok")
    result = generate(write(recorder).parent)
    assert list(result.document["paths"]) == ["/ok"]
    assert any("no response recorded" in w for w in result.warnings)


AWKWARD = [
    "/",
    "//double//slash",
    "/trailing/",
    "/spaces in path",
    "/ünïcödé/ström",
    "/percent%20encoded/%E2%9C%93",
    "/colon:in:segment",
    "/braces/{literal}",
    "/dots/file.name.json",
    "/a/" + "x" * 300,
    "/users/42/orders/2024-01-31/items/3f2a9b1c-1111-2222-3333-444455556666",
    "/mail/someone@example.com",
    "/v1/v2beta1/oauth2/callback",
    "/tokens/eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijklmnop",
]


def test_awkward_paths_give_a_valid_document(
    recorder: ApiRecorder, write: Callable[..., Path]
) -> None:
    for path in AWKWARD:
        recorder.exchange("GET", path)
        recorder.exchange("POST", path, 201, params=[param("a")])
    for template in ("/r/:id/:id", "/r/{a}/{b}/{a}", "/r/(?P<pk>[0-9]+)/", "/r/*rest"):
        recorder.exchange("GET", "/r/1/2", template=template)
    doc = one(recorder, write)
    assert len(doc["paths"]) >= len(AWKWARD)


def test_requests_in_many_threads_and_files(
    recorder: ApiRecorder, write: Callable[..., Path], tmp_path: Path
) -> None:
    for thread in (1, 2, 3):
        recorder.exchange("GET", f"/t/{thread}", template="/t/{n}", thread=thread)
    for i in range(6):
        other = ApiRecorder()
        other.exchange("GET", f"/f/{i}")
        write(other)
    path = write(recorder)
    result = generate(path.parent, OpenApiOptions(workers=2))
    assert_valid(result.document)
    assert result.recordings == 7 and result.requests == 9
