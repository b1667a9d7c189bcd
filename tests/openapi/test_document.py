"""Templates, overrides, empty directories, malformed files and big (streamed) recordings."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import orjson
import pytest
import yaml

from tests.openapi.conftest import ApiRecorder, assert_valid, param
from tracetool.errors import ConfigError, NotFoundError
from tracetool.openapi import OpenApiOptions, generate
from tracetool.trace import stream

TEMPLATE = """
openapi: 3.0.3
info:
  title: Shop
  version: '2.0'
  description: Curated by hand
servers:
  - url: https://shop.example.com
tags:
  - name: users
paths:
  /health:
    get:
      responses:
        '200':
          description: Alive
  /users:
    get:
      summary: Curated listing
      responses:
        '200':
          description: The users
components:
  schemas:
    User:
      type: object
  securitySchemes:
    bearer:
      type: http
      scheme: bearer
      bearerFormat: JWT
"""


@pytest.fixture
def recorded(recorder: ApiRecorder, write: Callable[..., Path]) -> Path:
    auth = {"Authorization": "Bearer x"}
    recorder.exchange("GET", "/users", headers=auth)
    recorder.exchange("POST", "/users", 201, headers=auth, params=[param("name")])
    recorder.exchange("GET", "/keys", headers={"Authorization": "k"})
    return write(recorder).parent


def test_default_template(recorded: Path) -> None:
    doc = generate(recorded).document
    assert_valid(doc)
    assert list(doc) == ["openapi", "info", "paths", "components"]
    assert doc["openapi"] == "3.0.3"
    assert doc["info"] == {"title": "My project", "version": "v1"}


def test_template_receives_generated_paths_and_components(recorded: Path, tmp_path: Path) -> None:
    template = tmp_path / "template.yml"
    template.write_text(TEMPLATE)
    doc = generate(recorded, OpenApiOptions(template=template)).document
    assert_valid(doc)
    assert doc["servers"] == [{"url": "https://shop.example.com"}]
    assert doc["tags"] == [{"name": "users"}]
    assert doc["info"]["description"] == "Curated by hand"
    assert doc["info"]["version"] == "2.0"
    # template operations are kept as written, generated ones are added beside them
    assert doc["paths"]["/health"]["get"]["responses"]["200"]["description"] == "Alive"
    assert doc["paths"]["/users"]["get"]["summary"] == "Curated listing"
    assert "201" in doc["paths"]["/users"]["post"]["responses"]
    assert "/keys" in doc["paths"]
    assert list(doc["paths"]) == sorted(doc["paths"])
    assert doc["components"]["schemas"] == {"User": {"type": "object"}}
    schemes = doc["components"]["securitySchemes"]
    assert schemes["bearer"]["bearerFormat"] == "JWT"  # the template's own definition wins
    assert schemes["api_key"] == {"type": "apiKey", "in": "header", "name": "Authorization"}


def test_title_and_version_overrides(recorded: Path, tmp_path: Path) -> None:
    template = tmp_path / "template.yml"
    template.write_text(TEMPLATE)
    options = OpenApiOptions(template=template, title="Shop API", version="3.1.4")
    doc = generate(recorded, options).document
    assert doc["info"]["title"] == "Shop API" and doc["info"]["version"] == "3.1.4"
    text = generate(recorded, OpenApiOptions(title="T", version="1.0")).yaml()
    assert yaml.safe_load(text)["info"] == {"title": "T", "version": "1.0"}  # stays a string


def test_openapi_31_template_gets_31_nullability(
    recorder: ApiRecorder, write: Callable[..., Path], tmp_path: Path
) -> None:
    value = {"class": "Hash", "properties": [{"name": "gone", "class": "NilClass"}]}
    value2 = {"class": "Hash", "properties": [{"name": "gone", "class": "String"}]}
    json = {"Content-Type": "application/json"}
    recorder.exchange("GET", "/n", response_headers=json, return_value=value)
    recorder.exchange("GET", "/n", response_headers=json, return_value=value2)
    template = tmp_path / "t.yml"
    template.write_text("openapi: 3.1.0\ninfo: {title: x, version: '1'}\n")
    doc = generate(write(recorder).parent, OpenApiOptions(template=template)).document
    assert_valid(doc)
    schema = doc["paths"]["/n"]["get"]["responses"]["200"]["content"]["application/json"]
    assert schema["schema"]["properties"]["gone"] == {"type": ["string", "null"]}
    doc30 = generate(write(recorder).parent).document
    schema = doc30["paths"]["/n"]["get"]["responses"]["200"]["content"]["application/json"]
    assert schema["schema"]["properties"]["gone"] == {"type": "string", "nullable": True}


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("- a\n- b\n", ConfigError, "must be a mapping (it is a list)"),
        ("openapi: [unclosed\n", ConfigError, "not valid YAML at line"),
        ("paths: 3\n", ConfigError, "paths must be a mapping"),
    ],
)
def test_bad_templates(
    text: str, error: type[Exception], message: str, recorded: Path, tmp_path: Path
) -> None:
    template = tmp_path / "bad.yml"
    template.write_text(text)
    with pytest.raises(error, match=re.escape(message)):
        generate(recorded, OpenApiOptions(template=template))


def test_missing_template(recorded: Path, tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no such OpenAPI template"):
        generate(recorded, OpenApiOptions(template=tmp_path / "nope.yml"))


def test_empty_directory_gives_a_valid_empty_document(tmp_path: Path) -> None:
    result = generate(tmp_path)
    assert_valid(result.document)
    assert result.document["paths"] == {}
    assert result.warnings == (f"no recordings (*.trace.json, *.appmap.json) found in {tmp_path}",)


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no such directory"):
        generate(tmp_path / "absent")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"events": [{"id": 1, "event": "call", "http_server_request": {', "not valid JSON"),
        (b"", "empty file"),
        (b"[1, 2]", "not a trace document"),
        (b'{"hello": "world"}', "not a trace document"),
    ],
)
def test_malformed_files_are_skipped_with_a_warning(
    content: bytes,
    message: str,
    recorder: ApiRecorder,
    write: Callable[..., Path],
) -> None:
    recorder.exchange("GET", "/fine")
    good = write(recorder, "good")
    write(content, "broken")
    result = generate(good.parent)
    assert_valid(result.document)
    assert list(result.document["paths"]) == ["/fine"]
    (warning,) = result.warnings
    assert warning.startswith("skipped ") and "broken.trace.json" in warning and message in warning
    assert result.recordings == 1


def _big_document(recorder: ApiRecorder, functions: int) -> dict[str, object]:
    recorder.exchange("GET", "/users/1", template="/users/{id}", headers={"Authorization": "k"})
    for _ in range(functions):
        call = recorder.function("App::Worker", "run", "app/worker.rb", 3)
        recorder.ret(call, return_value={"class": "String", "value": "v" * 200})
    recorder.exchange(
        "POST", "/users", 201, params=[param("name")], headers={"Content-Type": "application/json"}
    )
    doc = recorder.doc()
    doc["eventUpdates"] = {"1": {**recorder.events[0], "thread_id": 1}}
    return doc


def test_big_recordings_are_streamed_to_the_same_document(
    recorder: ApiRecorder,
    write: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    doc = _big_document(recorder, 2000)
    path = write(doc, "big")
    whole = generate(path.parent)
    monkeypatch.setattr(stream, "STREAM_THRESHOLD", 64 * 1024)
    assert path.stat().st_size > stream.STREAM_THRESHOLD
    streamed = generate(path.parent)
    assert streamed.yaml() == whole.yaml()
    assert set(streamed.document["paths"]) == {"/users", "/users/{id}"}
    assert_valid(streamed.document)


def test_truncated_big_recording_is_skipped(
    recorder: ApiRecorder,
    write: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = orjson.dumps(_big_document(recorder, 2000))
    path = write(raw[: len(raw) // 2], "cut")
    monkeypatch.setattr(stream, "STREAM_THRESHOLD", 64 * 1024)
    result = generate(path.parent)
    assert result.document["paths"] == {}
    assert len(result.warnings) == 1 and "cut.trace.json: not valid JSON" in result.warnings[0]


def test_same_document_without_pysimdjson(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pysimdjson only lets openapi skip building the events it does not need."""
    from tracetool.trace import extract

    fast = generate(corpus, OpenApiOptions(workers=1)).yaml()
    monkeypatch.setattr(extract, "_PARSER", False)
    assert extract.extract_events(b'{"events": []}', "x") is None
    assert generate(corpus, OpenApiOptions(workers=1)).yaml() == fast
