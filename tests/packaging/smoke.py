"""Runs every tracetool command from an installed copy (a tool venv or the PyInstaller binary).

`smoke(tracetool, lsp, project)` takes the two executables and a project directory whose
trace.yml points at recordings (the example shop, recorded by the agent distribution). It runs
`--version`, `--help` of every command, the commands that read or write recordings, the servers
(`index --port`, `rpc`, `query ui`, `query mcp`, `tracetool-lsp`) up to their first answer, and a
PNG sequence diagram. Each failure names the command and its output. Used by
tests/packaging/test_dists.py and by scripts/build-binary's smoke test.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path
from typing import IO

TIMEOUT = 60


def _env(project: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    env["HOME"] = str(project / "home")  # query.db under <project>/home/.trace
    env["NO_COLOR"] = "1"
    (project / "home").mkdir(exist_ok=True)
    return env


def run(cmd: list[str], project: Path, stdin: str | None = None) -> str:
    out = subprocess.run(
        cmd,
        cwd=project,
        env=_env(project),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert out.returncode == 0, (
        f"{' '.join(cmd)} exited {out.returncode}:\n{out.stdout}{out.stderr}"
    )
    assert "internal error" not in out.stderr, f"{' '.join(cmd)}:\n{out.stderr}"
    return out.stdout


def _first_line(proc: subprocess.Popen[str], cmd: list[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.kill()
        _, err = proc.communicate(timeout=TIMEOUT)
        raise AssertionError(f"{' '.join(cmd)} printed nothing:\n{err}")
    return line


def _server(cmd: list[str], project: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        cmd,
        cwd=project,
        env=_env(project),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


def _lsp_message(stream: IO[str]) -> dict[str, object]:
    length = 0
    while True:
        header = stream.readline()
        if header in ("\r\n", "\n", ""):
            break
        if header.lower().startswith("content-length:"):
            length = int(header.split(":", 1)[1])
    assert length, "tracetool-lsp sent no Content-Length"
    body: dict[str, object] = json.loads(stream.read(length))
    return body


def smoke(tracetool: list[str], lsp: list[str], project: Path) -> None:
    # help of every command (each imports its module and the libraries it needs at start)
    assert run([*tracetool, "--version"], project).strip()
    listing = run([*tracetool, "--help"], project)
    commands = [
        line.split()[0]
        for line in listing.split("Commands:", 1)[1].splitlines()
        if line.startswith("  ") and line.split()
    ]
    assert {"index", "query", "install", "sequence-diagram", "rpc"} <= set(commands), listing
    for name in commands:
        run([*tracetool, name, "--help"], project)
    for verb in ("endpoints", "find", "tree", "related", "hotspots", "compare", "mcp", "ui"):
        run([*tracetool, "query", verb, "--help"], project)

    recordings = sorted((project / "tmp" / "trace").rglob("*.trace.json"))
    assert recordings, f"no recordings under {project}/tmp/trace"
    first, second = recordings[0], recordings[1]
    run([*tracetool, "index"], project)
    assert json.loads(run([*tracetool, "query", "endpoints", "--json"], project))
    assert json.loads(run([*tracetool, "query", "find", "recordings", "--json"], project))
    run([*tracetool, "query", "hotspots"], project)
    run([*tracetool, "query", "tree", str(first)], project)
    run([*tracetool, "stats", "tmp/trace"], project)
    assert "openapi" in run([*tracetool, "openapi"], project)
    run([*tracetool, "inspect", "package:shop"], project)
    out = project / "out"
    run(
        [*tracetool, "sequence-diagram", "-f", "png", "--output-dir", str(out), str(first)], project
    )
    pngs = list(out.glob("*.png"))
    assert pngs and pngs[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", pngs
    run(
        [*tracetool, "sequence-diagram", "-f", "plantuml", "--output-dir", str(out), str(second)],
        project,
    )
    run(
        [*tracetool, "sequence-diagram-diff", "--output-dir", str(out), str(first), str(second)],
        project,
    )
    run([*tracetool, "sanitize", "-r", "tmp/trace", "-o", str(project / "shared")], project)
    run(
        [*tracetool, "trim", "--max-length", "40", "-o", str(project / "trimmed"), str(first)],
        project,
    )
    run([*tracetool, "rpc-client", "system.listMethods"], project)

    # the daemon and the servers, up to their first answer
    for cmd in ([*tracetool, "index", "--port", "0"], [*tracetool, "rpc"]):
        proc = _server(cmd, project)
        try:
            port = json.loads(_first_line(proc, cmd))["port"]
            assert isinstance(port, int) and port > 0
        finally:
            _stop(proc)
    cmd = [*tracetool, "query", "ui", "--no-open"]
    proc = _server(cmd, project)
    try:
        url = _first_line(proc, cmd).strip()
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
            assert response.status == 200
    finally:
        _stop(proc)

    cmd = [*tracetool, "query", "mcp"]
    proc = _server(cmd, project)
    try:
        assert proc.stdin is not None
        proc.stdin.write(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "smoke", "version": "0"},
                    },
                }
            )
            + "\n"
        )
        proc.stdin.flush()
        answer = json.loads(_first_line(proc, cmd))
        assert answer.get("id") == 1 and "result" in answer, answer
    finally:
        _stop(proc)

    proc = _server(lsp, project)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"processId": None, "rootUri": project.as_uri(), "capabilities": {}},
            }
        )
        proc.stdin.write(f"Content-Length: {len(body.encode())}\r\n\r\n{body}")
        proc.stdin.flush()
        answer = _lsp_message(proc.stdout)
        assert answer.get("id") == 1 and "capabilities" in answer.get("result", {}), answer  # type: ignore[operator]
    finally:
        _stop(proc)
