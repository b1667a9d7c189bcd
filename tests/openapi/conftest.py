"""Fixtures for openapi tests: recordings made of HTTP exchanges, and the spec validator."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Callable, Optional

import orjson
import pytest

from tests.conftest import DocBuilder


class ApiRecorder(DocBuilder):
    """A DocBuilder with HTTP server exchanges (call + return) in one line each."""

    def exchange(
        self,
        method: str,
        path: Optional[str],
        status: Any = 200,
        *,
        template: Optional[str] = None,
        params: Optional[list[dict[str, Any]]] = None,
        headers: Optional[dict[str, str]] = None,
        response_headers: Optional[dict[str, str]] = None,
        mime: Optional[str] = None,
        return_value: Optional[dict[str, Any]] = None,
        thread: int = 1,
    ) -> int:
        request: dict[str, Any] = {"request_method": method}
        if path is not None:
            request["path_info"] = path
        if template is not None:
            request["normalized_path_info"] = template
        if headers is not None:
            request["headers"] = headers
        fields: dict[str, Any] = {"http_server_request": request}
        if params is not None:
            fields["message"] = params
        call = self.call(thread=thread, **fields)
        response: dict[str, Any] = {"status_code": status}
        if response_headers is not None:
            response["headers"] = response_headers
        if mime is not None:
            response["mime_type"] = mime
        ret: dict[str, Any] = {"http_server_response": response}
        if return_value is not None:
            ret["return_value"] = return_value
        self.ret(call, thread=thread, **ret)
        return call


def param(name: str, cls: str = "String", value: Any = "x", **extra: Any) -> dict[str, Any]:
    return {"name": name, "class": cls, "value": value, "object_id": 1, **extra}


_counter = itertools.count()


@pytest.fixture
def recorder() -> ApiRecorder:
    return ApiRecorder()


@pytest.fixture
def write(tmp_path: Path) -> Callable[..., Path]:
    """write(recorder_or_dict, name=None, directory=tmp_path/'trace') -> path of a recording."""

    def _write(doc: Any, name: Optional[str] = None, directory: Optional[Path] = None) -> Path:
        data = doc.doc() if isinstance(doc, DocBuilder) else doc
        folder = directory or tmp_path / "trace"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name or f'rec{next(_counter)}'}.trace.json"
        path.write_bytes(data if isinstance(data, bytes) else orjson.dumps(data))
        return path

    return _write


def assert_valid(document: dict[str, Any]) -> None:
    """openapi-spec-validator accepts the document (3.0 or 3.1 by its `openapi` field)."""
    from openapi_spec_validator import validate

    validate(document)
