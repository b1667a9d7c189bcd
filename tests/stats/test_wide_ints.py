"""A call whose `method_id` is an integer past 64 bits names one function on every path: `stats`
read from the files (the C scan declines such a file; msgspec, whole or streamed), `stats` from
the index (orjson), `stats -a`, `inspect` with and without the index, and the sequence diagram.
The name is orjson's reading of the number (`tracetool.trace.checks.orjson_ints`): a float past
[-2**63, 2**64), as AppMap's JSON.parse reads it (`C#1.2345678901234568e+29`)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from tracetool.cli import cli
from tracetool.index.indexer import IndexOptions, index_directory
from tracetool.trace import stream

WIDE = 123456789012345678901234567890
# the edges of orjson's integers (2**63 .. 2**64-1 stays an int) and past them
EDGES = [WIDE, 2**63, -(2**63) - 1, 2**64, 2**64 - 1, 2**63 - 1]


def _recording(path: Path, method_ids: list[int], quoted: bool = False) -> bytes:
    """Under an HTTP request, one call per id, each at its own line and in the classMap under
    the same number as its name (so the diagram shows it), returning with some overhead;
    `quoted`: the calls' ids are strings of the same digits."""
    events = [
        b'{"id":1,"event":"call","thread_id":1,"http_server_request":{"request_method":'
        b'"GET","path_info":"/x"}}'
    ]
    functions = []
    for number, method_id in enumerate(method_ids):
        call = 2 * number + 2
        events.append(
            b'{"id":%d,"event":"call","thread_id":1,"defined_class":"app.C","method_id":%d,'
            b'"path":"app/c.py","lineno":%d,"static":false}' % (call, method_id, number + 1)
        )
        if quoted:
            events[-1] = events[-1].replace(b":%d," % method_id, b':"%d",' % method_id)
        events.append(
            b'{"id":%d,"event":"return","thread_id":1,"parent_id":%d,"elapsed":0.5,'
            b'"elapsed_instrumentation":0.%d}' % (call + 1, call, number + 1)
        )
        functions.append(
            b'{"name":%d,"type":"function","location":"app/c.py:%d","static":false}'
            % (method_id, number + 1)
        )
    last = 2 * len(method_ids) + 2
    events.append(
        b'{"id":%d,"event":"return","thread_id":1,"parent_id":1,"elapsed":1.5,'
        b'"http_server_response":{"status":200}}' % last
    )
    class_map = (
        b'[{"name":"app","type":"package","children":[{"name":"C","type":"class",'
        b'"children":[' + b",".join(functions) + b"]}]}]"
    )
    raw = (
        b'{"version":"1.12","metadata":{"name":"wide"},"classMap":'
        + class_map
        + b',"events":['
        + b",".join(events)
        + b"]}"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw)
    return raw


def _names(raw: bytes) -> set[str]:
    """`function:app/C#<id>` with each id as orjson reads it (the referee)."""
    calls = [e for e in orjson.loads(raw)["events"] if "method_id" in e]
    return {f"function:app/C#{e['method_id']}" for e in calls}


def _run(*argv: str) -> str:
    result = CliRunner().invoke(cli, list(argv))
    assert result.exit_code == 0, result.output
    return result.stdout


def _stats_names(*argv: str) -> set[str]:
    rows = json.loads(_run("stats", "-f", "json", "-l", "50", *argv))
    return {row["name"] for row in rows["functions"]}


@pytest.mark.parametrize("method_id", EDGES)
def test_one_name_with_and_without_the_index(tmp_path: Path, method_id: int) -> None:
    trace_dir = tmp_path / "trace"
    raw = _recording(trace_dir / "a.appmap.json", [method_id])
    (expected,) = _names(raw)
    if not -(2**63) <= method_id < 2**64:
        assert expected == f"function:app/C#{float(method_id)!r}"
    assert _stats_names(str(trace_dir)) == {expected}
    sizes = json.loads(_run("stats", "-f", "json", "-a", str(trace_dir / "a.appmap.json")))
    assert [row["function"] for row in sizes["functions"]] == [expected]
    found = json.loads(_run("inspect", "--trace-dir", str(trace_dir), expected))
    assert found["codeObject"] == expected and found["matches"]

    db = tmp_path / "q.db"
    index_directory(trace_dir, IndexOptions(query_db=db, workers=1))
    assert _stats_names(str(trace_dir), "--query-db", str(db)) == {expected}
    found = json.loads(
        _run("inspect", "--trace-dir", str(trace_dir), "--query-db", str(db), expected)
    )
    assert found["codeObject"] == expected and found["matches"]


def test_the_edges_together_streamed_and_in_the_diagram(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace_dir = tmp_path / "trace"
    raw = _recording(trace_dir / "a.appmap.json", EDGES)
    expected = _names(raw)
    assert f"function:app/C#{float(WIDE)!r}" in expected
    assert _stats_names(str(trace_dir)) == expected
    monkeypatch.setattr(stream, "STREAM_THRESHOLD", 256)  # (read a few events at a time)
    assert _stats_names(str(trace_dir)) == expected
    monkeypatch.undo()

    out = tmp_path / "out"
    _run(
        "sequence-diagram", "-f", "json", "--output-dir", str(out), str(trace_dir / "a.appmap.json")
    )
    diagram = json.loads((out / "a.sequence.json").read_bytes())
    shown = set()
    work = list(diagram["rootActions"])
    while work:
        action = work.pop()
        work.extend(action.get("children", []))
        if action.get("nodeType") == 3:  # (a function call)
            shown.add(f"function:app/C#{action['name']}")
            assert action["stableProperties"]["id"] == f"app/C#{action['name']}"
    assert shown == expected


def test_a_number_named_in_the_classmap_only(tmp_path: Path) -> None:
    """The classMap names the function with the number, the call with a string of its digits:
    the name is the same with and without the index (each path reads the classMap's number as
    orjson does)."""
    trace_dir = tmp_path / "trace"
    _recording(trace_dir / "a.appmap.json", [WIDE, 2**64], quoted=True)
    plain = _stats_names(str(trace_dir))
    sizes = json.loads(_run("stats", "-f", "json", "-a", str(trace_dir / "a.appmap.json")))
    assert {row["function"] for row in sizes["functions"]} == plain
    db = tmp_path / "q.db"
    index_directory(trace_dir, IndexOptions(query_db=db, workers=1))
    assert _stats_names(str(trace_dir), "--query-db", str(db)) == plain
    assert len(plain) == 2
