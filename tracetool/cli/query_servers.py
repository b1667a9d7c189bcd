"""`tracetool query mcp` and `tracetool query ui`: the query verbs served to AI agents and browsers.

Both are shells over `tracetool_daemon` (MCP server on stdio; local web UI on 127.0.0.1), which
calls the same `tracetool.query` functions as the other verbs. The MCP SDK and the HTTP server
are imported only when the verb runs.

- `mcp` serves until stdin closes. It starts without a database: each tool call opens query.db
  and a missing one is a tool error telling the model to run `tracetool index`.
- `ui` needs the database at start (the spec's rule for `query`: exit with a prompt to run
  `tracetool index`), prints its URL as the only stdout line and serves until interrupted.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from tracetool.cli.common import common_options

F = TypeVar("F", bound=Callable[..., Any])

_DAEMON_HINT = "install the package mcp in tracetool's environment, or reinstall tracetool"


def _db_options(f: F) -> F:
    f = click.option(
        "--query-db", metavar="PATH|URL", help="Path to query.db, or a postgresql:// URL."
    )(f)
    f = click.option(
        "--trace-dir", metavar="DIR", help="Recordings directory whose index to read."
    )(f)
    return f


@click.command("mcp")
@_db_options
@common_options
def mcp_command(trace_dir: str | None, query_db: str | None) -> None:
    """Run a Model Context Protocol server on stdio exposing the query verbs as tools.

    \b
    Tools: summary, recording, endpoints, find, tree, related, hotspots,
    compare, search. Each takes the verb's options as JSON arguments
    (plus trace_dir / query_db) and returns JSON rows.
    Example client configuration:
      {"command": "tracetool", "args": ["query", "mcp", "--trace-dir", "tmp/trace"]}
    """
    from tracetool.errors import ConfigError

    if sys.version_info < (3, 10):
        raise ConfigError("`query mcp` needs Python 3.10 or newer (the MCP SDK does)")
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise ConfigError(f"the MCP SDK is not installed; {_DAEMON_HINT}") from None
    from tracetool_daemon.mcp import serve_stdio

    serve_stdio(trace_dir, query_db)


@click.command("ui")
@_db_options
@click.option(
    "-p",
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port on 127.0.0.1; 0 lets the OS choose.",
)
@click.option(
    "--open/--no-open",
    "open_browser",
    default=None,
    help="Open the UI in a browser (default: only when stdout is a terminal).",
)
@common_options
def ui_command(
    trace_dir: str | None, query_db: str | None, port: int, open_browser: bool | None
) -> None:
    """Launch a local web UI: dashboard, endpoints, hotspots and traces.

    The server listens on 127.0.0.1 only and prints its URL on one stdout line;
    stop it with Ctrl+C (or SIGTERM).
    """
    from tracetool_daemon.ui import UiServer

    server = UiServer(trace_dir=trace_dir, query_db=query_db, port=port)
    click.echo(server.url)
    sys.stdout.flush()
    if open_browser is None:
        open_browser = sys.stdout.isatty()
    if open_browser:
        import webbrowser

        webbrowser.open(server.url)
    click.echo("Serving the tracetool UI; press Ctrl+C to stop.", err=True)

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # SIGTERM ends the server as cleanly as Ctrl+C

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.close()
