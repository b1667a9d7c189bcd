"""Hostile input never crashes or hangs (issues 14 and 19): special files, poison values, deep
trees, and a short seeded fuzz run over every reading command (tests/fuzz/harness.py)."""

from __future__ import annotations

import os
import random
import sqlite3
import time
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from tests.conftest import CORPUS
from tests.fuzz.harness import (
    Runner,
    deep_document,
    good_document,
    mutate,
    run_case,
    seeds,
    special_files,
)
from tracetool.cli import cli
from tracetool.errors import TraceFormatError
from tracetool.index import IndexOptions, index_directory
from tracetool.trace import load
from tracetool.trace.reader import find_trace_files, open_regular

posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and symlinks")


def _nested(depth: int) -> bytes:
    return (
        b'{"metadata":{"name":"deep"},"events":[],"classMap":['
        + b"[" * depth
        + b"]" * depth
        + b"]}"
    )


def _recordings(db: Path) -> set[str]:
    con = sqlite3.connect(db)
    try:
        return {row[0] for row in con.execute("SELECT path FROM recordings")}
    finally:
        con.close()


@posix_only
def test_index_over_a_fifo_a_symlink_loop_and_a_2000_deep_file_indexes_the_good_files(
    tmp_path: Path,
) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "good.trace.json").write_bytes(orjson.dumps(good_document()))
    (traces / "sub").mkdir()
    (traces / "sub" / "also_good.appmap.json").write_bytes(orjson.dumps(good_document(1)))
    (traces / "deep.trace.json").write_bytes(_nested(2000))
    special_files(traces)
    started = time.monotonic()
    result = index_directory(traces, IndexOptions(query_db=tmp_path / "q.db", workers=1))
    assert time.monotonic() - started < 30
    assert _recordings(tmp_path / "q.db") == {"good.trace.json", "sub/also_good.appmap.json"}
    reasons = {skip.path: skip.reason for skip in result.skipped}
    assert "nested deeper than 1024 levels" in reasons["deep.trace.json"]
    assert "FIFO" in reasons["fifo.trace.json"]
    assert "directory" in reasons["dir.appmap.json"]
    assert "dangling" in reasons["dangling.trace.json"]


@posix_only
def test_the_reader_never_opens_what_is_not_a_regular_file(tmp_path: Path) -> None:
    special_files(tmp_path)
    fifo = tmp_path / "fifo.trace.json"
    with pytest.raises(TraceFormatError, match="is a FIFO, not a trace document"):
        open_regular(fifo)  # would block forever if it were opened
    with pytest.raises(TraceFormatError, match="is a FIFO"):
        load(fifo)
    skipped: list[tuple[Path, str]] = []
    assert find_trace_files(tmp_path, skipped) == []  # the loop ends; nothing is opened
    named = {p.name for p, _ in skipped}
    assert {"fifo.trace.json", "dir.appmap.json", "dangling.trace.json"} <= named


def test_an_unreadable_subdirectory_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traces = tmp_path / "traces"
    locked = traces / "locked"
    locked.mkdir(parents=True)
    (locked / "hidden.trace.json").write_bytes(orjson.dumps(good_document()))
    (traces / "good.trace.json").write_bytes(orjson.dumps(good_document()))
    if os.geteuid() == 0:  # root reads any directory: make this one fail as for a user
        import tracetool.trace.reader as reader

        real = os.scandir

        def scandir(path: str | Path) -> object:
            if Path(path) == locked:
                raise PermissionError(13, "Permission denied", str(path))
            return real(path)

        monkeypatch.setattr(reader.os, "scandir", scandir)
    else:
        locked.chmod(0)
    try:
        runner = CliRunner()
        out = runner.invoke(cli, ["sanitize", "-r", str(traces), "-o", str(tmp_path / "o")])
        assert out.exit_code == 1, out.output
        assert "locked: cannot read directory (Permission denied)" in out.output
        assert (tmp_path / "o" / "good.trace.json").is_file()
        out = runner.invoke(cli, ["trim", "-r", str(traces), "-o", str(tmp_path / "t")])
        assert out.exit_code == 1 and "locked: cannot read directory" in out.output
        for argv in (["stats", str(traces)], ["openapi", "--trace-dir", str(traces)]):
            out = runner.invoke(cli, argv)
            assert out.exit_code == 0 and "locked: cannot read directory" in out.output, argv
        db = tmp_path / "q.db"
        result = index_directory(traces, IndexOptions(query_db=db, workers=1))
        assert [(s.path, s.reason) for s in result.skipped] == [
            ("locked", "cannot read directory (Permission denied)")
        ]
        assert _recordings(db) == {"good.trace.json"}
    finally:
        locked.chmod(0o755)


@pytest.mark.parametrize(
    "poison",
    [
        pytest.param(lambda d: d["metadata"].__setitem__("test_status", []), id="test_status=[]"),
        pytest.param(lambda d: d["events"][0].__setitem__("id", None), id="http event id null"),
        pytest.param(lambda d: d["events"][0].__setitem__("id", {"x": 1}), id="id is an object"),
    ],
)
def test_index_skips_a_poisoned_recording_and_indexes_the_others(
    tmp_path: Path, poison: object
) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    bad = good_document()
    poison(bad)  # type: ignore[operator]
    (traces / "a_good.trace.json").write_bytes(orjson.dumps(good_document()))
    (traces / "b_bad.trace.json").write_bytes(orjson.dumps(bad))
    (traces / "c_good.trace.json").write_bytes(orjson.dumps(good_document(2)))
    result = index_directory(traces, IndexOptions(query_db=tmp_path / "q.db", workers=1))
    assert _recordings(tmp_path / "q.db") == {"a_good.trace.json", "c_good.trace.json"}
    assert [s.path for s in result.skipped] == ["b_bad.trace.json"]
    # the next run still works, and a fixed file is indexed then
    (traces / "b_bad.trace.json").write_bytes(orjson.dumps(good_document(1)))
    index_directory(traces, IndexOptions(query_db=tmp_path / "q.db", workers=1))
    assert len(_recordings(tmp_path / "q.db")) == 3


def test_a_bad_file_among_good_ones_leaves_every_good_file_sanitized(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    bad = {
        "invalid_utf8.trace.json": b'{"events":[{"id":1,"event":"call","x":"\xff"}]}',
        "deep.trace.json": _nested(1500),
        "object_id.trace.json": orjson.dumps(
            {"events": [{"id": {"a": 1}, "event": "call", "parameters": [{"value": "x"}]}]}
        ),
    }
    for name, raw in bad.items():
        (traces / name).write_bytes(raw)
    for i in range(3):
        (traces / f"good{i}.trace.json").write_bytes(orjson.dumps(good_document()))
    out = CliRunner().invoke(cli, ["sanitize", "-r", str(traces)])
    assert out.exit_code == 1
    assert "internal error" not in out.output
    for i in range(3):
        assert b"s3cret-token" not in (traces / f"good{i}.trace.json").read_bytes()
    for name in bad:
        assert name in out.output


@pytest.mark.parametrize("command", ["tree", "diagram", "prune", "inspect", "stats", "index"])
def test_deep_call_trees(tmp_path: Path, command: str) -> None:
    """A call chain far deeper than Python's recursion limit (100,000 levels were checked by
    hand: each command takes seconds; 20,000 keeps this test fast)."""
    traces = tmp_path / "traces"
    traces.mkdir()
    deep = traces / "deep.trace.json"
    deep.write_bytes(orjson.dumps(deep_document(20_000)))
    db = str(tmp_path / "q.db")
    run = Runner("deep", seconds=60)
    if command in ("tree", "index"):
        r = run("index", "--trace-dir", str(traces), "--query-db", db)
        assert r.exit_code == 0, r.output
        if command == "tree":
            r = run("query", "tree", str(deep), "--query-db", db, "--json", "--limit", "3")
            assert r.exit_code == 0, r.output
    elif command == "diagram":
        r = run("sequence-diagram", "-f", "json", "--output-dir", str(tmp_path), str(deep))
        assert r.exit_code == 0 and "20000 actions" in r.output, r.output
        written = (tmp_path / "deep.sequence.json").read_bytes()  # compact: too deep to indent
        assert written.startswith(b'{"actors":[') and b'"rootActions":[{' in written
    elif command == "prune":
        r = run("prune", str(deep), "-s", "500kb", "-o", str(tmp_path / "p"))
        assert r.exit_code == 0, r.output
        r = run(
            "prune",
            str(deep),
            "--filter",
            '{"hideName":["class:app/C3"]}',
            "-o",
            str(tmp_path / "f"),
        )
        assert r.exit_code == 0, r.output
    elif command == "inspect":
        r = run("inspect", "function:app/C1#m1", "--trace-dir", str(traces))
        assert r.exit_code == 0, r.output
    else:
        assert run("stats", str(traces)).exit_code == 0
        assert run("stats", "-a", str(deep)).exit_code == 0
    assert not run.failures, "\n".join(map(str, run.failures))


@posix_only
def test_every_reading_command_with_special_files_beside_the_recordings(tmp_path: Path) -> None:
    failures = run_case(tmp_path / "w", orjson.dumps(good_document()), "specials", specials=True)
    assert not failures, "\n".join(map(str, failures))


def test_fuzz_short(tmp_path: Path) -> None:
    """A seeded run over every mutation kind; `benchmarks/fuzz.py` runs the long one."""
    rng = random.Random(int(os.environ.get("TRACETOOL_FUZZ_SEED", "14")))
    pool = seeds(CORPUS if CORPUS.is_dir() else None)
    budget = float(os.environ.get("TRACETOOL_FUZZ_SECONDS", "15"))
    started = time.monotonic()
    failures = []
    cases = 0
    while time.monotonic() - started < budget:
        kind, bad = mutate(rng.choice(pool), rng)
        failures += run_case(tmp_path / "w", bad, kind)
        cases += 1
    assert cases >= 5
    assert not failures, "\n".join(map(str, failures[:20]))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d["events"][1].__setitem__("defined_class", ["x"]),
            "event 2: defined_class is an array",
        ),
        (
            lambda d: d["events"][0].__setitem__("http_server_request", "GET /"),
            "event 1: http_server_request is a string, expected an object",
        ),
        (
            lambda d: d["events"][0]["http_server_request"].__setitem__("headers", []),
            "event 1: http_server_request.headers is an array",
        ),
        (
            lambda d: d["events"][1].__setitem__("parameters", {"a": 1}),
            "event 2: parameters is an object, expected an array",
        ),
        (
            lambda d: d["metadata"].__setitem__("test_status", []),
            "metadata.test_status is an array, expected a string",
        ),
        (lambda d: d["classMap"][0].__setitem__("children", {}), "classMap: children is an object"),
        (lambda d: d["events"][0].__setitem__("id", None), "event 1: id is null"),
    ],
)
def test_a_wrong_type_is_named_in_the_warning(change: object, message: str) -> None:
    from tracetool.trace.reader import type_defect

    doc = good_document()
    assert type_defect(doc) is None
    change(doc)  # type: ignore[operator]
    assert message in (type_defect(doc) or "")


def test_metadata_nested_deeper_than_orjson_writes_is_indexed(tmp_path: Path) -> None:
    """Found by benchmarks/fuzz.py: the sidecar of a 300-deep metadata value (orjson reads 1024
    levels but writes 255) aborted the whole index run."""
    traces = tmp_path / "traces"
    traces.mkdir()
    raw = orjson.dumps(good_document()).replace(
        b'"app":"demo"', b'"app":"demo","extra":' + b"[" * 300 + b"]" * 300, 1
    )
    (traces / "deep_metadata.trace.json").write_bytes(raw)
    (traces / "good.trace.json").write_bytes(orjson.dumps(good_document()))
    result = index_directory(traces, IndexOptions(query_db=tmp_path / "q.db", workers=1))
    assert not result.skipped
    assert _recordings(tmp_path / "q.db") == {"deep_metadata.trace.json", "good.trace.json"}


def test_stats_with_a_sql_query_that_is_not_an_object(tmp_path: Path) -> None:
    """Found by benchmarks/fuzz.py: naming SQL keys after all files were summed crashed."""
    doc = good_document()
    doc["events"][2]["sql_query"] = "SELECT 1"
    doc["events"][3]["elapsed_instrumentation"] = 0.5
    (tmp_path / "a.trace.json").write_bytes(orjson.dumps(doc))
    run = Runner("sql string")
    assert run("stats", str(tmp_path)).exit_code == 0
    assert not run.failures, "\n".join(map(str, run.failures))
