"""The `tracetool-lsp` console script and `python -m tracetool_daemon.lsp`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tracetool import __version__


def test_console_script_version() -> None:
    script = Path(sys.executable).parent / "tracetool-lsp"
    result = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"tracetool-lsp {__version__}"


def test_module_help_and_lazy_import() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tracetool_daemon.lsp", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "--stdio" in result.stdout and "--log-file" in result.stdout
    # importing the entry point does not load pygls (editors start it; the CLI must stay fast)
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, tracetool_daemon.lsp; print('pygls' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.stdout.strip() == "False", check.stderr


def test_bad_option_exits_with_usage_error() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tracetool_daemon.lsp", "--tcp"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "unrecognized arguments: --tcp" in result.stderr


def _frame(body: bytes) -> bytes:
    return b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body


def test_an_absurd_content_length_is_refused_and_the_server_keeps_serving() -> None:
    """Issue 19.5: `Content-Length: 10^20` used to end the server with an OverflowError."""
    import json

    initialize = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "rootUri": None, "capabilities": {}},
        }
    ).encode()
    shutdown = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}).encode()
    exit_ = json.dumps({"jsonrpc": "2.0", "method": "exit"}).encode()
    stdin = (
        b'Content-Length: 99999999999999999999\r\n\r\n{"not": "read"}\r\n'
        + b"Content-Length: 70000000\r\n\r\n"  # over the 64 MiB limit too
        + _frame(initialize)
        + _frame(shutdown)
        + _frame(exit_)
    )
    script = Path(sys.executable).parent / "tracetool-lsp"
    result = subprocess.run([str(script)], input=stdin, capture_output=True, timeout=60)
    err = result.stderr.decode()
    assert "Traceback" not in err, err
    assert err.count("refused a message of") == 2, err
    assert b'"id": 1' in result.stdout and b'"capabilities"' in result.stdout
    assert b'"id": 2' in result.stdout  # still answering after the refusals
