"""`tracetool query mcp`: a Model Context Protocol server on stdio over the query tools.

Contract:

- `serve_stdio(trace_dir=None, query_db=None)` serves MCP (JSON-RPC lines) on stdin/stdout until
  stdin closes, with the official SDK (`mcp` ≥ 2, low-level `Server`). Nothing but protocol
  messages reaches stdout; logs go to stderr.
- `tools/list` lists `tracetool_daemon.query_tools.TOOLS` (name, title, description, JSON input
  schema, read-only annotations). `tools/call` runs `query_tools.call_tool` in a worker thread
  and answers the JSON result twice, as `structuredContent` and as one text block (the spec's
  advice for clients that read only text).
- A user error (bad argument, unknown recording, missing index → "run `tracetool index`") is a
  tool result with `isError: true` and the one-line message, so the model can correct itself;
  an unexpected exception is reported the same way (with its type) and logged with its
  traceback, and the server keeps serving. An unknown tool name is a protocol error (-32602).
- `trace_dir` / `query_db` arguments must lie inside the project (trace.yml's directory, else
  the current one), the server's own recordings or index directory, or (`query_db`)
  `~/.trace/data`; another path is a tool error naming it (`query_tools.check_paths`).
- The server does not require query.db at start: it is opened per call, so `tracetool index`
  may run (or re-run) while the server is up.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import orjson
from tracetool_daemon import query_tools

from tracetool import __version__
from tracetool.errors import TraceToolError

log = logging.getLogger("tracetool.daemon.mcp")

INSTRUCTIONS = (
    "Query runtime recordings (AppMap-format traces of HTTP requests, SQL queries and function "
    "calls) indexed by `tracetool index`. Start with `summary`, then `endpoints`, `hotspots` or "
    "`find`; `tree` shows one recording's call tree. Filters take the CLI's text forms "
    "(status '>=500', duration '>100ms', route 'GET /users/{id}', since '2d')."
)
INVALID_PARAMS = -32602


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def build_server(trace_dir: str | None = None, query_db: str | None = None) -> Any:
    """The SDK `Server` with `tools/list` and `tools/call` over `query_tools`."""
    import anyio.to_thread
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    roots = query_tools.allowed_roots(trace_dir, query_db)
    tools = [
        types.Tool(
            name=tool.name,
            title=tool.title,
            description=tool.description,
            input_schema=tool.input_schema,
            annotations=types.ToolAnnotations(
                title=tool.title,
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=False,
            ),
        )
        for tool in query_tools.TOOLS
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    def error(message: str) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in query_tools.BY_NAME:
            names = ", ".join(query_tools.BY_NAME)
            raise MCPError(INVALID_PARAMS, f"unknown tool {params.name!r}: use one of {names}")
        run = functools.partial(
            query_tools.call_tool,
            params.name,
            params.arguments,
            trace_dir=trace_dir,
            query_db=query_db,
        )
        try:
            query_tools.check_paths(params.arguments, roots)
            result = await anyio.to_thread.run_sync(run)
        except TraceToolError as exc:
            return error(str(exc))
        except Exception as exc:  # a bug must not end the session
            log.exception("tool %s failed", params.name)
            return error(f"internal error in {params.name} ({type(exc).__name__}): {exc}")
        return types.CallToolResult(
            content=[types.TextContent(text=_json(result))], structured_content=result
        )

    return Server(
        "tracetool",
        version=__version__,
        title="tracetool query",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve_stdio(trace_dir: str | None = None, query_db: str | None = None) -> None:
    """Serve MCP on stdin/stdout until stdin closes."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(trace_dir, query_db)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
