"""The JSON-RPC method table and the one dispatcher both front ends use.

Contract:

- `@method("name", summary=..., params=...)` registers a function `f(service, **params)`
  returning a JSON-serializable value. Parameter names are the wire names (camelCase, as
  AppMap's clients send them). Aliases share one function.
- `dispatch(service, body) -> bytes` runs one JSON-RPC 2.0 request or batch through
  jsonrpcserver and returns the response body (`b""` for notifications). The HTTP server and
  the in-process `rpc-client` call this same function.
- Errors (docs/rpc.md lists them): -32700 parse error, -32600 invalid request, -32601 unknown
  method, -32602 bad params (missing/unknown parameters, wrong types, `UsageError`), -32603
  internal error (an unexpected exception; logged with its traceback). Failures the user can
  act on keep their one-line message: -32001 not found (`NotFoundError`), -32002 no index yet
  (`IndexMissingError`), -32003 not a trace document (`TraceFormatError`), -32000 any other
  `TraceToolError`. The message of a -32602 names the problem ("Invalid params: ...").
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

from tracetool.errors import (
    IndexMissingError,
    NotFoundError,
    TraceFormatError,
    TraceToolError,
    UsageError,
)

log = logging.getLogger("tracetool.daemon.rpc")

F = TypeVar("F", bound=Callable[..., Any])

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_ERROR = -32000
NOT_FOUND = -32001
INDEX_MISSING = -32002
BAD_TRACE = -32003
# Calls per JSON-RPC batch; a longer batch is one -32600 error and nothing runs.
MAX_BATCH = 100


class ParamError(UsageError):
    """A parameter has the wrong type or value (JSON-RPC -32602)."""


@dataclass(frozen=True)
class MethodInfo:
    name: str
    summary: str
    params: str  # e.g. "{appmap, filter?}"
    func: Callable[..., Any]


METHODS: dict[str, MethodInfo] = {}


def method(*names: str, summary: str, params: str = "{}") -> Callable[[F], F]:
    def register(func: F) -> F:
        for name in names:
            if name in METHODS:
                raise ValueError(f"JSON-RPC method {name} registered twice")
            METHODS[name] = MethodInfo(name, summary, params, func)
        return func

    return register


def error_code(exc: TraceToolError) -> int:
    if isinstance(exc, UsageError):
        return INVALID_PARAMS
    if isinstance(exc, NotFoundError):
        return NOT_FOUND
    if isinstance(exc, IndexMissingError):
        return INDEX_MISSING
    if isinstance(exc, TraceFormatError):
        return BAD_TRACE
    return SERVER_ERROR


@functools.lru_cache(maxsize=1)
def _jsonrpcserver() -> Any:
    import warnings

    with warnings.catch_warnings():
        # jsonrpcserver 5 reads its schema with a deprecated importlib.resources call.
        warnings.simplefilter("ignore", DeprecationWarning)
        import jsonrpcserver
    return jsonrpcserver


def _wrap(info: MethodInfo) -> Callable[..., Any]:
    rpc = _jsonrpcserver()
    Error, Success = rpc.Error, rpc.Success

    func = info.func

    @functools.wraps(func)  # jsonrpcserver checks params against the wrapped signature
    def call(service: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return Success(func(service, *args, **kwargs))
        except TraceToolError as exc:
            return Error(error_code(exc), str(exc))
        except Exception as exc:
            log.exception("JSON-RPC method %s failed", info.name)
            return Error(INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}")

    # Computed once: jsonrpcserver asks for the signature on every call.
    call.__signature__ = inspect.signature(func)  # type: ignore[attr-defined]
    return call


def _valid_request(obj: Any) -> bool:
    if not isinstance(obj, dict) or obj.get("jsonrpc") != "2.0":
        return False
    if not isinstance(obj.get("method"), str) or set(obj) - {"jsonrpc", "method", "params", "id"}:
        return False
    if "params" in obj and not isinstance(obj["params"], (list, dict)):
        return False
    rid = obj.get("id")
    return rid is None or (isinstance(rid, (str, int, float)) and not isinstance(rid, bool))


def validate(request: Any) -> Any:
    """JSON-RPC 2.0 request shape (what jsonrpcserver's JSON Schema checks, without its cost)."""
    items = request if isinstance(request, list) else [request]
    if not items or not all(_valid_request(item) for item in items):
        raise ValueError("not a JSON-RPC 2.0 request")
    return request


@functools.lru_cache(maxsize=1)
def _table(generation: int) -> dict[str, Callable[..., Any]]:
    return {name: _wrap(info) for name, info in METHODS.items()}


def _default(obj: Any) -> Any:
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if hasattr(obj, "__fspath__"):
        return str(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj, default=_default, option=orjson.OPT_NON_STR_KEYS)


def _loads(text: str | bytes) -> Any:
    return orjson.loads(text)


def _polish(response: dict[str, Any]) -> dict[str, Any]:
    error = response.get("error")
    if isinstance(error, dict) and error.get("code") == INVALID_PARAMS:
        data = error.get("data")
        if isinstance(data, str) and error.get("message") == "Invalid params":
            error["message"] = f"Invalid params: {data}"
    return response


def prepare() -> None:
    """Import every method and build the dispatch table now (the daemon does it at start-up)."""
    import tracetool_daemon.methods  # noqa: F401

    _jsonrpcserver()
    _table(len(METHODS))


def dispatch_obj(service: Any, body: str | bytes) -> Any:
    """The JSON-RPC response as Python data (None for notifications)."""
    import tracetool_daemon.methods  # noqa: F401  (registers every method)

    dispatch_to_serializable = _jsonrpcserver().dispatch_to_serializable

    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    deserializer: Callable[[str | bytes], Any] = _loads
    try:
        parsed = _loads(body)
    except orjson.JSONDecodeError:
        pass  # jsonrpcserver answers the parse error
    else:
        if isinstance(parsed, list) and len(parsed) > MAX_BATCH:
            return {
                "jsonrpc": "2.0",
                "error": {
                    "code": INVALID_REQUEST,
                    "message": "Invalid request",
                    "data": f"batch of {len(parsed)} calls; at most {MAX_BATCH} per request",
                },
                "id": None,
            }
        deserializer = lambda _text: parsed  # noqa: E731  (parsed once)
    response = dispatch_to_serializable(
        body, _table(len(METHODS)), context=service, deserializer=deserializer, validator=validate
    )
    if isinstance(response, list):
        return [_polish(r) for r in response]
    if isinstance(response, dict):
        return _polish(response)
    return response


def dispatch(service: Any, body: str | bytes) -> bytes:
    """One JSON-RPC request (or batch) in, the response body out (see module doc)."""
    response = dispatch_obj(service, body)
    return b"" if response is None else dumps(response)


def request_body(method_name: str, params: Any, request_id: int = 1) -> bytes:
    """A JSON-RPC 2.0 request (used by rpc-client and tests)."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method_name, "id": request_id}
    if params is not None:
        body["params"] = params
    return dumps(body)
