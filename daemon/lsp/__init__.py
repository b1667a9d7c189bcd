"""tracetool's language server: runtime facts from the index next to Python source (LSP).

Run it with `tracetool-lsp` (or `python -m tracetool_daemon.lsp`); it speaks LSP on stdin/stdout.
Features, commands and initialization options are described in `tracetool_daemon.lsp.server`
and editors/README.md. pygls is imported only when the server starts.

Options: `--stdio` (the default, accepted because clients pass it), `--log-file PATH` and
`--log-level LEVEL` (logs never go to stdout, which carries the protocol), `--version`.
A message whose `Content-Length` is over 64 MiB is skipped with one error line
(`tracetool_daemon.lsp.stdio`); the server keeps running.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from tracetool import __version__
    from tracetool.cli.common import missing_module_message

    parser = argparse.ArgumentParser(
        prog="tracetool-lsp",
        description="tracetool language server (LSP over stdio): recorded calls, timings, SQL "
        "and exceptions next to Python source.",
    )
    parser.add_argument("--stdio", action="store_true", help="talk LSP on stdin/stdout (default)")
    parser.add_argument("--log-file", help="write the server's log to this file")
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="log level (default WARNING)",
    )
    parser.add_argument("--version", action="version", version=f"tracetool-lsp {__version__}")
    args = parser.parse_args(argv)
    handler: logging.Handler = (
        logging.FileHandler(args.log_file, encoding="utf-8")
        if args.log_file
        else logging.StreamHandler(sys.stderr)
    )
    logging.basicConfig(
        level=getattr(logging, args.log_level),
        handlers=[handler],
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        from tracetool_daemon.lsp.server import create_server
    except ImportError as exc:
        print(
            "tracetool-lsp: " + missing_module_message(exc.name or str(exc)),
            file=sys.stderr,
        )
        return 1
    from tracetool_daemon.lsp.stdio import BoundedStdin

    create_server().start_io(stdin=BoundedStdin(sys.stdin.buffer))  # type: ignore[arg-type]
    return 0
