"""Seeded mutation fuzzing of every command that reads recordings (issue 14).

`mutants(seed_bytes, rng)` yields hostile variants of a recording: truncation, a field of each
event/metadata/classMap swapped for a value of another type, deep nesting, huge numbers, invalid
UTF-8, NaN/Infinity, duplicate keys, byte flips, and a call chain thousands of levels deep.
`special_files(directory)` adds what is not a regular file but is named like a recording: a FIFO,
a socket, a directory, a dangling link, a symlink loop.

`run_case(workdir, bad, rng)` puts one good recording and `bad` in a fresh folder, runs every
reading command on them in this process (the CLI's click group, not a subprocess) under a time
bound, and returns the failures: an exception that is not the project's own error, a timeout
(hang), an "internal error" line, or a good file that was not processed (index, sanitize,
openapi). `benchmarks/fuzz.py` runs it long; tests/fuzz/test_fuzz.py short.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import shutil
import signal
import socket
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from tracetool.errors import TraceToolError

# -- seeds -------------------------------------------------------------------------------------


def good_document(calls: int = 3) -> dict[str, Any]:
    """A small, valid recording with a route, SQL, a client request, nested calls, classMap."""
    events: list[dict[str, Any]] = []

    def add(**fields: Any) -> int:
        events.append({"id": len(events) + 1, "thread_id": 1, **fields})
        return len(events)

    req = add(
        event="call",
        http_server_request={
            "request_method": "GET",
            "path_info": "/users/42",
            "normalized_path_info": "/users/{id}",
            "headers": {"Authorization": "Bearer s3cret-token"},
        },
        message=[{"name": "id", "class": "String", "value": "42"}],
    )
    for i in range(calls):
        call = add(
            event="call",
            defined_class="app.models.User",
            method_id="find",
            path="app/models.py",
            lineno=10 + i,
            static=False,
            receiver={"class": "User", "value": "<User alice@example.com>"},
            parameters=[{"name": "email", "class": "str", "value": "alice@example.com"}],
        )
        sql = add(event="call", sql_query={"sql": "SELECT * FROM users WHERE id = 42"})
        add(event="return", parent_id=sql, elapsed=0.001)
        add(
            event="return",
            parent_id=call,
            elapsed=0.002,
            return_value={"class": "User", "value": "<User>", "properties": [{"name": "id"}]},
        )
    cli = add(
        event="call",
        http_client_request={"request_method": "POST", "url": "http://api.example/pay"},
    )
    add(event="return", parent_id=cli, elapsed=0.01, http_client_response={"status_code": 201})
    add(
        event="return",
        parent_id=req,
        elapsed=0.05,
        http_server_response={"status_code": 200, "mime_type": "application/json"},
    )
    return {
        "version": "1.12",
        "metadata": {
            "name": "users find",
            "app": "demo",
            "labels": ["fuzz"],
            "language": {"name": "python"},
            "recorder": {"name": "pytest", "type": "tests"},
            "test_status": "succeeded",
            "git": {"branch": "main", "commit": "abc"},
        },
        "classMap": [
            {
                "type": "package",
                "name": "app",
                "children": [
                    {
                        "type": "class",
                        "name": "User",
                        "children": [
                            {"type": "function", "name": "find", "location": "app/models.py:10"}
                        ],
                    }
                ],
            }
        ],
        "events": events,
    }


def deep_document(depth: int) -> dict[str, Any]:
    """A call chain `depth` levels deep (one thread), each call returning in order."""
    events: list[dict[str, Any]] = []
    for i in range(depth):
        events.append(
            {
                "id": i + 1,
                "event": "call",
                "thread_id": 1,
                "defined_class": f"app.C{i % 7}",
                "method_id": f"m{i % 5}",
                "path": "app/c.py",
                "lineno": i % 50 + 1,
                "static": False,
            }
        )
    for i in range(depth, 0, -1):
        events.append({"id": 2 * depth - i + 1, "event": "return", "thread_id": 1, "parent_id": i})
    classes = [
        {
            "type": "class",
            "name": f"C{c}",
            "children": [
                {"type": "function", "name": f"m{m}", "location": "app/c.py:1"} for m in range(5)
            ],
        }
        for c in range(7)
    ]
    return {
        "version": "1.12",
        "metadata": {"name": f"deep {depth}"},
        "classMap": [{"type": "package", "name": "app", "children": classes}],
        "events": events,
    }


def seeds(corpus: Path | None = None, max_bytes: int = 64 * 1024) -> list[bytes]:
    """The good document plus the small recordings of the shared corpus (when present)."""
    out = [orjson.dumps(good_document())]
    if corpus is not None and corpus.is_dir():
        for path in sorted(corpus.rglob("*.json")):
            if path.stat().st_size <= max_bytes and path.name.endswith(".appmap.json"):
                out.append(path.read_bytes())
    return out


# -- mutations ---------------------------------------------------------------------------------

_HUGE_INT = "1" + "0" * 400
_SWAPS: list[Any] = [
    None,
    [],
    {},
    "text",
    "",
    0,
    -1,
    1.5,
    True,
    [1, [2]],
    {"a": {"b": None}},
    [None],
    [{}],
    {"class": 1, "value": [], "properties": "x"},
]


def _paths(data: Any, rng: random.Random, limit: int = 400) -> list[tuple[Any, Any]]:
    """(container, key) pairs of the parsed document, breadth first, at most `limit`."""
    out: list[tuple[Any, Any]] = []
    queue: list[Any] = [data]
    while queue and len(out) < limit:
        node = queue.pop(rng.randrange(len(queue)) if len(queue) > 8 else 0)
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            out.append((node, key))
            if isinstance(value, (dict, list)) and value:
                queue.append(value)
    return out


def _nest(depth: int, rng: random.Random) -> str:
    opener, closer = rng.choice([("[", "]"), ('{"a":', "}"), ('{"properties":[', "]}")])
    return opener * depth + "1" + closer * depth


def _swap_field(raw: bytes, rng: random.Random) -> bytes:
    data = orjson.loads(raw)
    paths = _paths(data, rng)
    if not paths:
        return raw
    for _ in range(rng.randint(1, 3)):
        node, key = rng.choice(paths)
        node[key] = rng.choice(_SWAPS)
    return orjson.dumps(data)


def _raw_replace(raw: bytes, rng: random.Random, text: str) -> bytes:
    """Put raw JSON text `text` in place of one value of the document (by a marker)."""
    data = orjson.loads(raw)
    paths = _paths(data, rng)
    if not paths:
        return raw
    node, key = rng.choice(paths)
    node[key] = "\x00MARK\x00"
    return orjson.dumps(data).replace(b'"\\u0000MARK\\u0000"', text.encode(), 1)


def _mutate_once(raw: bytes, rng: random.Random) -> tuple[str, bytes]:
    kind = rng.choice(
        [
            "truncate",
            "swap",
            "swap",
            "swap",
            "deep",
            "huge",
            "utf8",
            "nan",
            "dupkey",
            "flip",
            "toplevel",
            "deepcalls",
            "ids",
        ]
    )
    if kind == "truncate":
        return kind, raw[: rng.randrange(max(1, len(raw)))]
    if kind == "swap":
        return kind, _swap_field(raw, rng)
    if kind == "deep":
        depth = rng.choice([300, 1000, 1100, 2000, 5000])
        return kind, _raw_replace(raw, rng, _nest(depth, rng))
    if kind == "huge":
        text = rng.choice([_HUGE_INT, "-" + _HUGE_INT, "1e999", "18446744073709551616", "1e-999"])
        return kind, _raw_replace(raw, rng, text)
    if kind == "utf8":
        at = raw.find(b'"', rng.randrange(max(1, len(raw))))
        at = at if at >= 0 else len(raw) // 2
        junk = rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x00"])
        return kind, raw[: at + 1] + junk + raw[at + 1 :]
    if kind == "nan":
        return kind, _raw_replace(raw, rng, rng.choice(["NaN", "Infinity", "-Infinity", "nan"]))
    if kind == "dupkey":
        key = rng.choice([b'"events"', b'"metadata"', b'"classMap"', b'"id"', b'"event"'])
        at = raw.find(key)
        if at < 0:
            return kind, raw
        dup = rng.choice([b'"x",', b"[],", b"{},", b"null,", b"7,"])
        return kind, raw[:at] + key + b":" + dup + raw[at:]
    if kind == "flip":
        data = bytearray(raw)
        for _ in range(rng.randint(1, 8)):
            if data:
                data[rng.randrange(len(data))] = rng.randrange(256)
        return kind, bytes(data)
    if kind == "toplevel":
        return kind, rng.choice(
            [
                b"",
                b"   ",
                b"[]",
                b"null",
                b"42",
                b'"x"',
                b"{}",
                b'{"events":{}}',
                b'{"events":7}',
                b'{"metadata":[]}',
                b'{"classMap":{}}',
                b'{"events":[1,"a",null]}',
                b'{"events":[],"eventUpdates":[]}',
                b'{"events":[{"id":1}],"eventUpdates":{"1":7}}',
            ]
        )
    if kind == "deepcalls":
        return kind, orjson.dumps(deep_document(rng.choice([2000, 5000])))
    # ids: every id / parent_id / thread_id of a few events made odd
    data = orjson.loads(raw)
    events = data.get("events") if isinstance(data, dict) else None
    if isinstance(events, list) and events:
        for _ in range(rng.randint(1, 4)):
            event = rng.choice(events)
            if isinstance(event, dict):
                key = rng.choice(["id", "parent_id", "thread_id", "event"])
                event[key] = rng.choice([*_SWAPS, 2**64 - 1, -(2**63), 1e300])
        return kind, orjson.dumps(data)
    return kind, raw


def mutate(raw: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One hostile variant of `raw` (sometimes two mutations stacked)."""
    kind, out = _mutate_once(raw, rng)
    if rng.random() < 0.2:
        try:
            more, out = _mutate_once(out, rng)
            kind = f"{kind}+{more}"
        except (orjson.JSONDecodeError, TypeError, ValueError):
            pass  # the first mutation broke the JSON: stacking a structural one is moot
    return kind, out


def special_files(directory: Path) -> list[str]:
    """Recording-named entries that are not regular files (module doc); returns their names."""
    made = []
    fifo = directory / "fifo.trace.json"
    if hasattr(os, "mkfifo"):
        os.mkfifo(fifo)
        made.append(fifo.name)
    (directory / "dir.appmap.json").mkdir()
    made.append("dir.appmap.json")
    (directory / "dangling.trace.json").symlink_to(directory / "missing-target.json")
    made.append("dangling.trace.json")
    loop = directory / "loop"
    loop.mkdir()
    (loop / "again").symlink_to("..", target_is_directory=True)
    (directory / "self").symlink_to(".", target_is_directory=True)
    made.append("loop/again")
    if hasattr(socket, "AF_UNIX") and len(str(directory / "s.trace.json")) < 100:
        sock = socket.socket(socket.AF_UNIX)
        with contextlib.suppress(OSError):
            sock.bind(str(directory / "sock.trace.json"))
            made.append("sock.trace.json")
        sock.close()
    return made


# -- running -----------------------------------------------------------------------------------


class Hang(BaseException):
    """A command ran past its time bound (BaseException: no bulkhead may swallow it)."""


@contextlib.contextmanager
def time_bound(seconds: float) -> Iterator[None]:
    def on_alarm(signum: int, frame: Any) -> None:
        raise Hang(f"still running after {seconds:.0f} s")

    # pytest-timeout may have its own alarm running: keep it, and put it back afterwards
    outer, _ = signal.getitimer(signal.ITIMER_REAL)
    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, min(seconds, outer) if outer else seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(0.001, outer - (time.monotonic() - started)))


@dataclass
class Outcome:
    argv: list[str]
    exit_code: int
    output: str
    seconds: float


@dataclass
class Failure:
    case: str
    argv: list[str]
    problem: str
    output: str = ""

    def __str__(self) -> str:
        tail = " | ".join(self.output.strip().splitlines()[-3:])[:300]
        return f"[{self.case}] tracetool {' '.join(self.argv)}: {self.problem} :: {tail}"


@dataclass
class Runner:
    """Runs CLI commands in this process with a time bound, collecting failures."""

    case: str
    seconds: float = 20.0
    failures: list[Failure] = field(default_factory=list)

    def __call__(self, *argv: str) -> Outcome:
        from tracetool.cli import cli

        args = list(argv)
        # another test may have left tracetool's logger writing to a stream that is closed now
        logger = logging.getLogger("tracetool")
        logger.handlers.clear()
        logger.setLevel(logging.WARNING)
        runner = CliRunner()
        started = time.monotonic()
        try:
            with time_bound(self.seconds):
                result = runner.invoke(cli, args, catch_exceptions=True)
        except Hang as exc:
            self.failures.append(Failure(self.case, args, f"hang ({exc})"))
            return Outcome(args, -1, "", time.monotonic() - started)
        output = result.output + (result.stderr if _has_stderr(result) else "")
        exc = result.exception
        if exc is not None and not isinstance(exc, (SystemExit, TraceToolError)):
            import traceback

            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-4:])
            self.failures.append(Failure(self.case, args, f"{type(exc).__name__}: {exc}"[:300], tb))
        elif "internal error" in output or "Traceback" in output:
            self.failures.append(Failure(self.case, args, "internal error printed", output))
        return Outcome(args, result.exit_code, output, time.monotonic() - started)

    def expect(self, ok: bool, argv: list[str], problem: str, output: str = "") -> None:
        if not ok:
            self.failures.append(Failure(self.case, argv, problem, output))


def _has_stderr(result: Any) -> bool:
    try:
        return bool(result.stderr)
    except ValueError:  # click < 8.2 without mix_stderr=False
        return False


def run_case(
    workdir: Path, bad: bytes, case: str, *, specials: bool = False, seconds: float = 20.0
) -> list[Failure]:
    """Run every reading command over one good recording and `bad` (module doc)."""
    if workdir.exists():
        shutil.rmtree(workdir)
    traces = workdir / "traces"
    traces.mkdir(parents=True)
    good = traces / "good.trace.json"
    good.write_bytes(orjson.dumps(good_document()))
    bad_path = traces / "bad.appmap.json"
    bad_path.write_bytes(bad)
    if specials:
        special_files(traces)
    out = workdir / "out"
    db = workdir / "query.db"
    run = Runner(case, seconds)
    t, b, g = str(traces), str(bad_path), str(good)

    r = run("index", "--trace-dir", t, "--query-db", str(db))
    if r.exit_code >= 0:
        run.expect(_indexed(db, "good.trace.json"), r.argv, "good file not indexed", r.output)
        if _indexed(db, "bad.appmap.json"):
            with _streamed(len(bad) % 2 == 1):  # (streamed: folded as its calls close)
                run("query", "tree", b, "--trace-dir", t, "--query-db", str(db), "--json")
    # every other input also goes through the incremental (ijson) reader that big files take
    with _streamed(len(bad) % 2 == 1):
        run("stats", t)
        run("stats", "-a", b)
        r = run("openapi", "--trace-dir", t)
    run.expect(
        r.exit_code != 0 or "/users/{id}" in r.output, r.argv, "good route missing", r.output
    )
    run("inspect", "function:app/models/User#find", "--trace-dir", t)
    run("inspect", "route:GET /users/{id}", "--trace-dir", t)
    run("sequence-diagram", "-f", "json", "--output-dir", str(out / "diagrams"), b, g)
    run("prune", b, "-s", "1kb", "-o", str(out / "pruned"))
    run("prune", b, "--filter", '{"hideExternal":true}', "-o", str(out / "filtered"))
    run("trim", "-r", t, "-o", str(out / "trimmed"), "--max-length", "5")
    r = run("sanitize", "-r", t, "-o", str(out / "sanitized"))
    if r.exit_code >= 0:
        done = out / "sanitized" / "good.trace.json"
        run.expect(
            done.is_file() and b"s3cret-token" not in done.read_bytes(),
            r.argv,
            "good file not sanitized",
            r.output,
        )
    run("sanitize", b, "-o", str(out / "sanitized1"))
    if len(bad) % 2 == 1:  # rewritten a block at a time: the whole rewrite's bytes or words
        for argv in (("sanitize", b), ("trim", b, "--max-length", "5")):
            _same_streamed(run, argv, out / "rewritten", bad_path.name)
    return run.failures


def _same_streamed(run: Runner, argv: tuple[str, ...], out: Path, name: str) -> None:
    """`argv -o out` whole and streamed (`tracetool.transform.streamed`): the same exit code,
    the same output and the same file written."""
    found = []
    for on in (False, True):
        shutil.rmtree(out, ignore_errors=True)
        with _streamed(on):
            r = run(*argv, "-o", str(out))
        written = out / name
        found.append((r.exit_code, r.output, written.read_bytes() if written.exists() else None))
    run.expect(found[0] == found[1], [*argv, "-o", str(out)], "streamed differs", str(found[1]))


@contextlib.contextmanager
def _streamed(on: bool) -> Iterator[None]:
    import importlib

    import tracetool.trace.stream as stream
    import tracetool.transform.streamed as rewrite

    tree = importlib.import_module("tracetool.query.tree")  # (`query.tree` is the function)
    saved = stream.STREAM_THRESHOLD, tree.STREAM_THRESHOLD, rewrite.STREAM_THRESHOLD, stream._CHUNK
    if on:
        stream.STREAM_THRESHOLD = rewrite.STREAM_THRESHOLD = 0
        tree.STREAM_THRESHOLD = -1
        stream._CHUNK = 2048  # (blocks of a few events: cuts between blocks are read too)
    try:
        yield
    finally:
        stream.STREAM_THRESHOLD, tree.STREAM_THRESHOLD, rewrite.STREAM_THRESHOLD = saved[:3]
        stream._CHUNK = saved[3]


def _indexed(db: Path, name: str) -> bool:
    if not db.is_file():
        return False
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            rows = con.execute("SELECT path FROM recordings").fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return False
    return any(str(row[0]).endswith(name) for row in rows)


def dump_case(directory: Path, number: int, kind: str, bad: bytes) -> Path:
    """Keep a failing input for replay."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"case-{number:06d}-{kind.replace('+', '_')}.bin"
    target.write_bytes(bad)
    (directory / f"case-{number:06d}.txt").write_text(json.dumps({"kind": kind}))
    return target
