"""inspect: every code-object type, JSON output, not-found, and an interactive session."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from tests.conftest import CORPUS
from tracetool.cli import cli
from tracetool.errors import UsageError
from tracetool.inspect import parse_code_object

RUBY = CORPUS / "packages/cli/tests/unit/fixtures/ruby"
MODELS = CORPUS / "packages/models/tests/unit/fixtures"

pytestmark = pytest.mark.skipif(not RUBY.is_dir(), reason="shared corpus not found")


def _inspect(code_object: str, trace_dir: Path = RUBY) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["inspect", code_object, "--trace-dir", str(trace_dir)])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = orjson.loads(result.output)
    return data


def test_function() -> None:
    data = _inspect("function:app/models/ApiKey.authenticate")
    assert data["codeObject"] == "function:app/models/ApiKey.authenticate"
    assert data["events"] == ["revoke_api_key.appmap.json#8", "revoke_api_key.appmap.json#40"]
    assert data["httpServerRequests"] == [
        "DELETE /api/api_keys (200)",
        "DELETE /api/api_keys (401)",
    ]
    assert data["callers"] == ["route:DELETE /api/api_keys"]
    assert "api_keys" in data["sqlTables"] and "users" in data["sqlTables"]
    assert 'SELECT * FROM "api_keys" WHERE ("login" = ?)' in data["sqlQueries"]
    assert (
        "route:DELETE /api/api_keys -> function:app/models/ApiKey.authenticate -> "
        "function:app/models/ApiKey.decode"
    ) in data["functionTrigrams"]
    assert (
        "http:HTTP server requests -> class:app/models/ApiKey -> database:Database"
        in data["classTrigrams"]
    )
    assert len(data["matches"]) == 2 and data["matches"][0]["eventId"] == 8


def test_class_and_package() -> None:
    cls = _inspect("class:app/models/ApiKey")
    functions = {t.split(" -> ")[1] for t in cls["functionTrigrams"]}
    assert "function:app/models/ApiKey.issue" in functions
    assert "function:app/models/ApiKey.decode" in functions
    pkg = _inspect("package:app")  # a package matches the packages below it
    assert len(pkg["matches"]) >= len(cls["matches"])
    assert "package:app/controllers" in {t.split(" -> ")[1] for t in pkg["packageTrigrams"]}


def test_database_table_query() -> None:
    db = _inspect("database:")
    assert db["matches"] and all("sqlQueries" in m for m in db["matches"])
    table = _inspect("table:api_keys")
    assert table["sqlTables"] and all("api_keys" in m["sqlTables"] for m in table["matches"])
    assert len(table["matches"]) < len(db["matches"])
    query = _inspect('query:SELECT * FROM "api_keys" WHERE ("login" = \'root\')')
    assert len({m["events"][0].split("#")[0] for m in query["matches"]}) == 1
    assert query["sqlQueries"] == ['SELECT * FROM "api_keys" WHERE ("login" = ?)']
    assert len(query["matches"]) == 3


def test_route_compares_normalized_templates() -> None:
    route = _inspect("route:DELETE /microposts/:id", MODELS)
    assert route["matches"]
    assert all(r.startswith("DELETE /microposts/{id}") for r in route["httpServerRequests"])
    assert _inspect("route:delete /api/api_keys")["returnValues"] == ["200", "401"]


def test_not_found_exits_1_with_one_line() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracetool",
            "inspect",
            "function:app/models/Nope#x",
            "--trace-dir",
            str(RUBY),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    # one line, with the closest recorded functions (tracetool.identifiers)
    assert done.stderr.strip().startswith(
        f"tracetool: function:app/models/Nope#x not found in any recording under {RUBY}; "
        "did you mean: function:app/models/"
    )
    assert done.stderr.count("\n") == 1
    assert done.stdout == ""


@pytest.mark.parametrize("bad", ["nothing", "widget:x", "function:", "route:/users"])
def test_bad_code_object(bad: str) -> None:
    with pytest.raises(UsageError):
        parse_code_object(bad)


def test_trace_dir_default_is_tmp_trace(tmp_path: Path) -> None:
    (tmp_path / "tmp/trace").mkdir(parents=True)
    (tmp_path / "tmp/trace/r.appmap.json").write_bytes(
        (RUBY / "revoke_api_key.appmap.json").read_bytes()
    )
    done = subprocess.run(
        [sys.executable, "-m", "tracetool", "inspect", "database:", "-d", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "TRACETOOL_TRACE_DIR": ""},
    )
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["recordings"] == 1


def test_interactive_session_with_filters_and_undo() -> None:
    script = "\n".join(["f", "6", "1", "p", "2", "u", "f", "2", "2", "r", "x", "q"]) + "\n"
    result = CliRunner().invoke(
        cli, ["inspect", "class:app/models/ApiKey", "--trace-dir", str(RUBY), "-i"], input=script
    )
    assert result.exit_code == 0, result.output
    out = result.output
    homes = out.split("class:app/models/ApiKey: ")
    counts = [int(h.split(" matching events")[0]) for h in homes[1:]]
    # home, filtered by caller, back after undo, filtered by return value, reset
    assert counts[0] > counts[1] and counts[2] == counts[0] and counts[-1] == counts[0]
    assert "Filters:\n  Callers = " in out
    assert " 1  Events" in out and "11  Function trigrams" in out
    assert "Return values:" in out  # the (p)rint of field 2
    assert out.count("Command (h)ome, (p)rint, (f)ilter, (u)ndo, (r)eset, (q)uit") >= 5


def test_interactive_through_a_real_terminal() -> None:
    pid, fd = pty.fork()
    if pid == 0:  # child: run the command on the pty
        os.execv(
            sys.executable,
            [
                sys.executable,
                "-m",
                "tracetool",
                "inspect",
                "function:app/models/ApiKey.decode",
                "--trace-dir",
                str(RUBY),
                "--interactive",
            ],
        )
    output = b""

    def read_until(marker: bytes, deadline: float) -> None:
        nonlocal output
        while marker not in output:
            assert time.monotonic() < deadline, output.decode(errors="replace")[-2000:]
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    output += os.read(fd, 65536)
                except OSError:
                    return

    try:
        read_until(b"(q)uit", time.monotonic() + 60)
        os.write(fd, b"f\n")
        read_until(b"Filter on field", time.monotonic() + 30)
        os.write(fd, b"6\n")
        read_until(b"Value (1-", time.monotonic() + 30)
        os.write(fd, b"1\n")
        read_until(b"Filters:", time.monotonic() + 30)
        os.write(fd, b"q\n")
        read_until(b"\x00never", time.monotonic() + 30)
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0
    assert b"Callers = " in output


@pytest.mark.parametrize(
    "code_object",
    [
        "function:app/models/ApiKey.authenticate",
        "class:app/models/User",
        "package:app/models",
        "database:",
        "table:users",
        "http:",
        "route:GET /api/api_keys",
    ],
)
def test_streamed_recordings_give_the_same_matches(
    code_object: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recording over the stream threshold is read block by block, its finished call trees
    searched and dropped on the way: the same matches in the same order as a whole read."""
    from tracetool.inspect import find
    from tracetool.inspect import scan as inspect_search
    from tracetool.trace import stream

    ref = parse_code_object(code_object)
    whole = [m.to_json() for m in find(ref, CORPUS, use_index=False)]
    monkeypatch.setattr(stream, "STREAM_THRESHOLD", 0)
    monkeypatch.setattr(stream, "_CHUNK", 4096)
    monkeypatch.setattr(inspect_search, "HELD_CALLS", 1)
    streamed = [m.to_json() for m in find(ref, CORPUS, use_index=False)]
    assert streamed == whole
