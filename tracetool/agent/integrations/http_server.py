"""Framework-neutral HTTP server recording, shared by the WSGI and ASGI middleware.

* `remote_response(method, path, hosts, origins)` answers `/_trace/record` exactly as the spec's
  state table: POST → 200 empty / 409 empty, GET → 200 `{"enabled": bool}`, DELETE → 200 trace
  document / 404. Any other `/_trace/...` path is 404, another method 405. These requests are
  never recorded. Before any of that, a request from another site is refused with 403 and a
  JSON `{"error": ...}`: every value of its `Host` and `Origin` headers goes through
  `tracetool.hostcheck.refusal` with the app's allowed names (`app_allowed_hosts`: trace.yml's
  `allowed_hosts`, `$TRACETOOL_ALLOWED_HOSTS`, Django's ALLOWED_HOSTS; loopback always).
* `ServerRequest` is one recorded request: `begin()` appends the `http_server_request` call (and
  starts the per-request recording when `TRACETOOL_RECORD_REQUESTS` is on), `finish()` appends the
  `http_server_response` return (with `exceptions` when the app raised) and saves the per-request
  document. While the app handles the request, `current_request` holds it, so the framework hooks
  can add the route template (`set_route`) and the exceptions their error handlers swallowed
  (`add_exception`). The call event's `http_server_request` dict is filled in place: the route
  is known only after routing, i.e. after the call was appended.

An unhandled exception is recorded as `exceptions` on the request's return event, next to the
500 `http_server_response` (issue 3: "as an exception on the request as well as the 500
response"). AppMap's JSON schema (@appland/appmap-validate) does not list `exceptions` on HTTP
server returns, so a document holding such a request fails that validator on that one event;
AppMap's own loaders read it fine. With code recording on, the raising view's own return carries
the exception too.
"""

from __future__ import annotations

import contextvars
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional

from tracetool.agent.integrations._common import (
    Span,
    http_client_guard,
    mime_type,
    parameters,
    recorder,
    sql_guard,
    warn,
)

REMOTE_PREFIX = "/_trace/"
REMOTE_PATH = "/_trace/record"
BODY_CAPTURE_LIMIT = 1 << 20  # JSON / form bodies larger than this are not parsed into `message`

current_request: contextvars.ContextVar[Optional[ServerRequest]] = contextvars.ContextVar(
    "tracetool_request", default=None
)
# True in a thread/task from the moment it answers `/_trace/...` until it starts serving another
# request: the server's own access-log line for the remote-recording request is not recorded.
serving_remote: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "tracetool_serving_remote", default=False
)

JSON = "application/json"


def is_remote(path: str) -> bool:
    return path == REMOTE_PATH[:-1] or path.startswith(REMOTE_PREFIX)


def app_allowed_hosts() -> tuple[str, ...]:
    """Host names the app answers besides loopback (module doc)."""
    from tracetool.agent.config import active_config
    from tracetool.hostcheck import allowed_hosts

    names = list(allowed_hosts(active_config().allowed_hosts))
    conf = sys.modules.get("django.conf")
    if conf is not None:
        try:
            settings = conf.settings  # type: ignore[attr-defined]
            hosts = settings.ALLOWED_HOSTS if settings.configured else ()
        except Exception:
            hosts = ()
        names.extend(h for h in hosts if isinstance(h, str) and h.strip() != "*")
    return tuple(names)


def remote_response(
    method: str, path: str, hosts: Sequence[str] = (), origins: Sequence[str] = ()
) -> tuple[int, Optional[str], bytes]:
    """(status, content type or None, body) for a request under `/_trace/`."""
    serving_remote.set(True)
    from tracetool.hostcheck import refusal

    why = refusal(hosts, origins, app_allowed_hosts())
    if why is not None:
        import json

        return 403, JSON, json.dumps({"error": why}).encode()
    if path.rstrip("/") != REMOTE_PATH:
        return 404, None, b""
    rec = recorder()
    method = method.upper()
    if method == "POST":
        return (200, None, b"") if rec.start() else (409, None, b"")
    if method == "GET":
        return 200, JSON, b'{"enabled":true}' if rec.is_recording() else b'{"enabled":false}'
    if method == "DELETE":
        recording = rec.finish()
        if recording is None:
            return 404, None, b""
        return 200, JSON, b"".join(recording.iter_bytes())
    return 405, None, b""


def body_params(content_type: Optional[str], body: bytes) -> list[tuple[str, Any]]:
    """Form or JSON body → (name, value) pairs; a JSON non-object becomes one `body` param."""
    if not body or not content_type:
        return []
    ctype = content_type.split(";", 1)[0].strip().lower()
    try:
        if ctype == "application/x-www-form-urlencoded":
            from urllib.parse import parse_qsl

            return parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)
        if ctype == "multipart/form-data":
            return multipart_params(content_type, body)
        if ctype == JSON or ctype.endswith("+json"):
            import orjson

            data = orjson.loads(body)
            if isinstance(data, dict):
                return list(data.items())
            return [("body", data)]
    except Exception:
        return []
    return []


def multipart_params(content_type: str, body: bytes) -> list[tuple[str, Any]]:
    """The fields of a multipart/form-data body: text fields by value, file parts as
    `{filename, size}` — never their contents."""
    boundary = ""
    for piece in content_type.split(";")[1:]:
        key, _, value = piece.strip().partition("=")
        if key.lower() == "boundary":
            boundary = value.strip().strip('"')
    if not boundary:
        return []
    out: list[tuple[str, Any]] = []
    for part in body.split(b"--" + boundary.encode("latin-1"))[1:]:
        if part.startswith(b"--"):
            break  # the closing delimiter
        head, sep, content = part.partition(b"\r\n\r\n")
        if not sep:
            continue
        if content.endswith(b"\r\n"):
            content = content[:-2]
        name: Optional[str] = None
        filename: Optional[str] = None
        for line in head.decode("utf-8", "replace").split("\r\n"):
            if line.lower().startswith("content-disposition:"):
                for item in line.split(";")[1:]:
                    key, _, value = item.strip().partition("=")
                    if key.lower() == "name":
                        name = value.strip('"')
                    elif key.lower() == "filename":
                        filename = value.strip('"')
        if name is None:
            continue
        if filename is not None:
            out.append((name, {"filename": filename, "size": len(content)}))
        else:
            out.append((name, content.decode("utf-8", "replace")))
    return out


def wants_body(content_type: Optional[str], length: Optional[int]) -> bool:
    if not content_type or length is None or length <= 0 or length > BODY_CAPTURE_LIMIT:
        return False
    ctype = content_type.split(";", 1)[0].strip().lower()
    return ctype in (
        "application/x-www-form-urlencoded",
        "multipart/form-data",
        JSON,
    ) or ctype.endswith("+json")


class ServerRequest:
    """One HTTP request being recorded (see the module docstring)."""

    __slots__ = (
        "_guards",
        "_token",
        "exceptions",
        "message",
        "per_request",
        "request",
        "route",
        "span",
    )

    def __init__(
        self,
        method: str,
        path: str,
        protocol: Optional[str],
        headers: dict[str, str],
    ) -> None:
        self.request: dict[str, Any] = {"request_method": method.upper(), "path_info": path}
        if protocol:
            self.request["protocol"] = protocol
        self.request["headers"] = headers
        self.route: Optional[str] = None
        self.exceptions: list[BaseException] = []
        self.message: list[dict[str, Any]] = []  # the call event's `message` (path params join it)
        self.span: Optional[Span] = None
        self.per_request: Optional[Any] = None  # the request's own scoped recording
        self._token: Optional[contextvars.Token[Optional[ServerRequest]]] = None
        self._guards: Any = None

    def begin(self, params: Iterable[tuple[str, Any]] = ()) -> None:
        """Start recording this request (call event) and make it `current_request`."""
        from tracetool.agent import requests_recorder

        if serving_remote.get():
            serving_remote.set(False)
        self.per_request = requests_recorder.start()
        # `message` is required on HTTP calls by AppMap's schema, even when empty
        fields: dict[str, Any] = {"http_server_request": self.request, "message": self.message}
        params = list(params)
        if params and recorder().active:
            self.message.extend(parameters(params))
        self.span = Span.open(fields)
        self._token = current_request.set(self)
        # The app is not part of the client call that reached it in-process (Starlette's
        # TestClient, httpx.ASGITransport, Django's test client): its own outgoing HTTP and SQL
        # are recorded even though the client's re-entrancy guards are set in this context.
        if http_client_guard.get() or sql_guard.get():
            self._guards = (http_client_guard.set(False), sql_guard.set(False))

    def detach(self) -> None:
        """Leave `current_request` (the response body may still be streaming)."""
        if self._token is not None:
            try:
                current_request.reset(self._token)
            except ValueError:  # reset from another context: just clear ours
                current_request.set(None)
            self._token = None
        guards, self._guards = self._guards, None
        if guards is not None:
            try:
                http_client_guard.reset(guards[0])
                sql_guard.reset(guards[1])
            except ValueError:
                pass

    def set_route(
        self, template: Optional[str], path_params: Optional[Mapping[str, Any]] = None
    ) -> None:
        """The framework's route template for this request, in `{name}` form, and the values of
        its path parameters (added to the request's `message`)."""
        if path_params and self.span is not None:
            try:
                self.add_params(path_params.items())
            except Exception as exc:  # never break the request
                warn(f"could not record path parameters: {exc!r}")
        if not template:
            return
        from tracetool.routes import to_openapi

        route = to_openapi(template)
        if not route.startswith("/"):
            route = "/" + route
        self.route = route
        self.request["normalized_path_info"] = route

    def add_params(self, pairs: Iterable[tuple[str, Any]]) -> None:
        """Add parameters to the recorded request's `message` (names already there are kept)."""
        if self.span is None:
            return
        seen = {p.get("name") for p in self.message}
        self.message.extend(p for p in parameters(pairs) if p.get("name") not in seen)

    def add_exception(self, exc: BaseException) -> None:
        if all(e is not exc for e in self.exceptions):
            self.exceptions.append(exc)

    def finish(
        self,
        status: Optional[int],
        headers: Optional[dict[str, str]],
        exc: Optional[BaseException] = None,
    ) -> None:
        """Append the response return event (once) and save the per-request document."""
        self.detach()
        if exc is not None:
            self.add_exception(exc)
        if status is None:
            status = 500 if self.exceptions else 200
        span, self.span = self.span, None
        if span is not None:
            response: dict[str, Any] = {"status_code": status}
            if headers is not None:
                response["headers"] = headers
                mime = mime_type(headers)
                if mime:
                    response["mime_type"] = mime
            # (no `exceptions` here: AppMap's schema allows them on function returns only; the
            # status says the request failed, the handler's return says why)
            fields: dict[str, Any] = {"http_server_response": response}
            try:
                span.close(fields)
            except Exception as err:  # recording trouble never breaks the response
                warn(f"could not record the response: {err!r}")
        scope, self.per_request = self.per_request, None
        if scope is not None:
            from tracetool.agent import requests_recorder

            requests_recorder.finish(
                scope, self.request["request_method"], self.route, self.path_info, status
            )

    @property
    def path_info(self) -> str:
        return str(self.request.get("path_info", ""))
