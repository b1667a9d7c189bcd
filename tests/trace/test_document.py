"""Loading, saving and finding trace documents."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from tests.conftest import CORPUS, corpus_recordings
from tracetool.errors import NotFoundError, TraceFormatError
from tracetool.trace import (
    build_call_tree,
    find_trace_files,
    load,
    normalize,
    parse,
    recording_stem,
    save,
)

RECORDINGS = corpus_recordings()


def test_corpus_has_all_53_recordings() -> None:
    if not CORPUS.is_dir():
        pytest.skip("shared corpus missing")
    assert len(RECORDINGS) == 53


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: str(p.relative_to(CORPUS)))
def test_every_corpus_recording_loads_normalizes_and_builds_a_tree(path: Path) -> None:
    doc = load(path)
    raw = orjson.loads(path.read_bytes())
    calls_before = sum(1 for e in raw.get("events", []) if e.get("event") == "call")
    normalize(doc)
    events = doc.events
    # ids are 1..N, every return points at an earlier call, and calls and returns balance
    assert [e["id"] for e in events] == list(range(1, len(events) + 1))
    calls = {e["id"] for e in events if e["event"] == "call"}
    returns = [e for e in events if e["event"] == "return"]
    assert len(calls) == calls_before
    assert len(returns) == len(calls)
    assert {r["parent_id"] for r in returns} == calls
    tree = build_call_tree(events)
    assert len(tree) == len(calls)
    assert all(node.ret is not None for node in tree)


def test_malformed_parent_id_recording_is_tolerated(corpus: Path) -> None:
    path = (
        corpus
        / "packages/cli/tests/unit/fixtures/malformedParentId/parent_id_49_does_not_exist.appmap.json"
    )
    doc = load(path)
    assert sum(1 for e in doc.events if "id" not in e) == 1  # the defect: a return with no id
    normalize(doc)
    assert all(isinstance(e["id"], int) for e in doc.events)
    assert not doc.warnings


def test_event_updates_replace_whole_events(corpus: Path) -> None:
    doc = load(corpus / "packages/models/tests/unit/fixtures/event_updates.json")
    updates = {int(k): v for k, v in doc.event_updates.items()}
    normalize(doc)
    assert "eventUpdates" not in doc.data
    for old_id, update in updates.items():
        replaced = [
            e
            for e in doc.events
            if e.get("http_server_request") == update.get("http_server_request")
        ]
        assert replaced, old_id


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"[1, 2]", "top level is an array"),
        (b'{"foo": 1}', "no events, classMap or metadata"),
        (b'{"events": {}}', "events is an object, expected an array"),
        (b'{"events": [', "not valid JSON"),
    ],
)
def test_not_a_trace_document_fails_with_one_line(raw: bytes, message: str) -> None:
    with pytest.raises(TraceFormatError) as info:
        parse(raw, "x.trace.json")
    text = str(info.value)
    assert text.startswith("x.trace.json: ")
    assert message in text
    assert "\n" not in text


def test_load_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="missing.trace.json: no such file"):
        load(tmp_path / "missing.trace.json")
    (tmp_path / "empty.trace.json").write_bytes(b"  \n")
    with pytest.raises(TraceFormatError, match="empty file"):
        load(tmp_path / "empty.trace.json")
    with pytest.raises(TraceFormatError, match="is a directory"):
        load(tmp_path)


def test_tolerant_reading_of_partial_documents() -> None:
    doc = parse(b'{"events": [{"id": 1, "event": "call", "thread_id": 1}, 7]}')
    assert doc.version is None
    assert doc.class_map == []
    assert doc.metadata == {}
    assert len(doc.events) == 1
    assert "dropped 1 non-object events" in doc.warnings[0]


def test_save_is_atomic_and_round_trips(tmp_path: Path, builder) -> None:
    c = builder.function("app.User", "save", "app/user.py", 3)
    builder.ret(c)
    target = tmp_path / "sub" / "one.trace.json"
    save(builder.doc(), target)
    assert orjson.loads(target.read_bytes()) == builder.doc()
    # overwriting keeps permissions and leaves no temp files behind
    os.chmod(target, 0o600)
    save(builder.doc(), target)
    assert (target.stat().st_mode & 0o777) == 0o600
    assert [p.name for p in target.parent.iterdir()] == ["one.trace.json"]


def test_find_trace_files_recurses_and_skips_noise(tmp_path: Path) -> None:
    for rel in [
        "a.trace.json",
        "deep/b.appmap.json",
        "node_modules/x.trace.json",
        ".git/y.trace.json",
        "notes.json",
        "deep/.c.trace.json.tmp",
    ]:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("{}")
    found = [p.relative_to(tmp_path).as_posix() for p in find_trace_files(tmp_path)]
    assert found == ["a.trace.json", "deep/b.appmap.json"]
    with pytest.raises(NotFoundError):
        find_trace_files(tmp_path / "nope")


def test_recording_stem() -> None:
    assert recording_stem("x/y/My_test.trace.json") == "My_test"
    assert recording_stem("a.appmap.json") == "a"
    assert recording_stem("b.json") == "b"


def test_dispose_frees_at_once_or_keeps_for_the_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracetool.trace import document

    released: list[str] = []
    document.dispose("a", released.append)  # no free_at_exit: released at once
    assert released == ["a"]
    monkeypatch.setattr(document, "_KEPT", None)
    document.free_at_exit()
    document.dispose("b", released.append)
    document.dispose("c")
    assert released == ["a"]  # kept for the exit
    document.dispose_kept()  # the next recording: the kept ones are released first
    assert released == ["a", "b"] and document._KEPT == []


def test_a_one_shot_diagram_command_exits_at_once_with_its_output(tmp_path: Path) -> None:
    import subprocess
    import sys

    recordings = corpus_recordings()[:2]
    argv = ["sequence-diagram", *map(str, recordings), "-f", "json", "--output-dir", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-m", "tracetool", *argv],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 2  # flushed before the exit
    for path in tmp_path.iterdir():
        orjson.loads(path.read_bytes())


@pytest.mark.parametrize("command", ["stats", "prune"])
def test_one_shot_stats_and_prune_exit_at_once_with_their_output(
    command: str, tmp_path: Path
) -> None:
    import subprocess
    import sys

    recording = corpus_recordings()[0]
    argv = {
        "stats": ["stats", "-a", str(recording), "-f", "json"],
        "prune": ["prune", str(recording), "-s", "1kb", "-o", str(tmp_path), "--format", "json"],
    }[command]
    done = subprocess.run(
        [sys.executable, "-m", "tracetool", *argv], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)  # whole: flushed before the exit
    if command == "prune":
        orjson.loads((tmp_path / recording.name).read_bytes())
