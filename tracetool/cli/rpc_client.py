"""`tracetool rpc-client <function> [request]`: invoke one JSON-RPC method and print its result.

The request is the method's params as JSON text (an object or an array), `-` to read them
from stdin, or `@FILE`. If a daemon serves the recordings directory (its discovery file names
a live process with a port), the call goes to it; otherwise it runs in this process through the
same dispatcher, without a server (an `explain` then finishes before the command exits).
The result is printed as JSON; a JSON-RPC error prints `tracetool: <message> (JSON-RPC error
<code>)` on stderr and exits 1.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from tracetool.cli.common import common_options
from tracetool.errors import TraceToolError, UsageError

TIMEOUT = 300.0


class RpcError(TraceToolError):
    """The method answered with a JSON-RPC error."""


def read_request(text: str | None) -> Any:
    import orjson

    if text is None:
        return None
    source = "request"
    if text == "-":
        text, source = sys.stdin.read(), "stdin"
    elif text.startswith("@"):
        path = Path(text[1:])
        try:
            text, source = path.read_text(encoding="utf-8"), str(path)
        except OSError as exc:
            raise UsageError(f"{path}: cannot read ({exc.strerror})") from None
    if not text.strip():
        return None
    try:
        params = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"{source}: not valid JSON ({exc})") from None
    if not isinstance(params, (dict, list)):
        raise UsageError(f"{source}: params must be a JSON object or array")
    return params


def call_daemon(port: int, body: bytes, timeout: float = TIMEOUT) -> Any | None:
    """The response of the daemon on `port`, or None when it cannot be reached."""
    import urllib.error
    import urllib.request

    import orjson

    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/",
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as response:
            return orjson.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        raise TraceToolError(f"daemon on port {port} answered HTTP {exc.code}") from None
    except (urllib.error.URLError, ConnectionError):
        return None  # gone or not listening yet: run in-process instead


def call_in_process(trace_dir: Path, query_db: Path | None, body: bytes) -> Any:
    from tracetool_daemon.registry import dispatch_obj
    from tracetool_daemon.service import Project, Service, ServiceOptions

    from tracetool.paths import query_db_path

    directory = Path.cwd().resolve()
    project = Project(directory, trace_dir, query_db or query_db_path(trace_dir))
    service = Service([project], ServiceOptions())
    try:
        return dispatch_obj(service, body)
    finally:
        service.close(wait_assistant=None)  # let an explain finish and be stored


@click.command("rpc-client")
@click.argument("function")
@click.argument("request", required=False)
@click.option("--trace-dir", metavar="DIR", help="Recordings directory (default from trace.yml).")
@click.option("--query-db", metavar="PATH|URL", help="Path to query.db, or a postgresql:// URL.")
@common_options
def command(function: str, request: str | None, trace_dir: str | None, query_db: str | None) -> int:
    """Invoke one JSON-RPC FUNCTION with REQUEST params (JSON, - for stdin, @FILE).

    Uses the running daemon for the recordings directory if there is one, otherwise runs the
    method in-process. `tracetool rpc-client system.listMethods` lists the methods.
    """
    from tracetool_daemon.registry import request_body

    from tracetool.cli.render import print_json
    from tracetool.config import resolve_trace_dir
    from tracetool.paths import read_discovery

    params = read_request(request)
    body = request_body(function, params)
    root = resolve_trace_dir(trace_dir).expanduser().resolve()
    response = None
    info = read_discovery(root) if query_db is None else None
    if info is not None and info.port:
        response = call_daemon(info.port, body)
    if response is None:
        from tracetool import store

        response = call_in_process(root, store.location(query_db, root), body)
    if not isinstance(response, dict):
        raise TraceToolError(f"unexpected JSON-RPC response: {response!r}")
    if "error" in response:
        error = response["error"] or {}
        message = error.get("message", "error")
        if error.get("code") == -32601:  # name the method: the user may have mistyped it
            message = f"{message}: {function!r} (list them with `tracetool rpc-client system.listMethods`)"
        raise RpcError(f"{message} (JSON-RPC error {error.get('code')})")
    print_json(response.get("result"))
    return 0
