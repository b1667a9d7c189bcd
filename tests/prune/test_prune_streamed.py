"""Size-mode prune of a big recording in two passes (`tracetool.transform.prune_streamed`) gives
the whole prune's result and bytes: forced on every corpus recording, on generated ones (threads
interleaved) and their variants, at several targets."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import corpus_recordings, make_corpus
from tracetool.errors import TraceToolError
from tracetool.transform import prune_streamed
from tracetool.transform.prune import prune_file

SHARED = Path(__file__).resolve().parents[3] / "shared"
if not (SHARED / "tools").is_dir():
    SHARED = Path("/work/shared")


def _run(path: Path, size: int) -> tuple[Any, ...]:
    try:
        result = prune_file(path, size=size)
    except TraceToolError as exc:
        return ("error", str(exc))
    return (result.summary(), b"".join(result.chunks()))


def _compare(paths: list[Path], monkeypatch: pytest.MonkeyPatch, *, small: bool = True) -> int:
    """Compares both ways at a few targets; returns how many were streamed."""
    streamed = 0
    real = prune_streamed.prune_streamed

    def spy(*args: Any, **kwargs: Any) -> Any:
        nonlocal streamed
        result = real(*args, **kwargs)
        streamed += result is not None
        return result

    for path in paths:
        size = path.stat().st_size
        for target in (size // 2, size * 9 // 10, size + 1000, 2000):
            whole = _run(path, target)
            with monkeypatch.context() as m:
                m.setattr(prune_streamed, "STREAM_THRESHOLD", 0)
                m.setattr(prune_streamed, "prune_streamed", spy)
                m.setattr("tracetool.trace.tree.HELD_CALLS", 3 if small else 10_000)
                m.setattr(prune_streamed, "BLOCK", 5 if small else 0)
                assert _run(path, target) == whole, (path, target)
    return streamed


def test_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    recordings = [p for p in corpus_recordings() if p.stat().st_size < 2_500_000]
    # (the others: the block reader leaves their events to ijson — the events array is not
    # the last member of a small file — and those are pruned whole)
    # (and those with eventUpdates: only a whole read has their exact texts)
    assert _compare(recordings, monkeypatch) >= 56


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("gen")
    return make_corpus(out, 2, 1.5, 7, "--ext", ".appmap.json")


def test_generated(generated: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    assert _compare(generated, monkeypatch) == 8
    assert _compare(generated, monkeypatch, small=False) == 8  # the reader's own blocks


def _variant(source: Path, target: Path, change: Any) -> Path:
    data = orjson.loads(source.read_bytes())
    change(data)
    target.write_bytes(orjson.dumps(data))
    return target


def test_variants(generated: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = generated[0]

    def drop_returns(data: dict[str, Any]) -> None:
        events = data["events"]
        returns = [i for i, e in enumerate(events) if e.get("event") == "return"]
        drop = set(returns[::7])
        data["events"] = [e for i, e in enumerate(events) if i not in drop]

    def updates_and_extras(data: dict[str, Any]) -> None:
        events = data["events"]
        data["eventUpdates"] = {
            str(e["id"]): {**e, "return_value": {"class": "Updated"}}
            for e in events[1::9]
            if e.get("event") == "return"
        }
        data["pruneFilter"] = {"hideName": ["class:Old"]}
        data["vendor"] = {"x": 1}
        data = {"zeta": [1], **data}

    def no_return_ids(data: dict[str, Any]) -> None:
        for e in data["events"]:
            if e.get("event") == "return":
                e.pop("parent_id", None)

    def late_return(data: dict[str, Any]) -> None:  # a nested call returns after its caller
        events = data["events"]
        victim = next(
            b["id"]
            for a, b in zip(events, events[1:])
            if a.get("event") == b.get("event") == "call"
            and a.get("thread_id") == b.get("thread_id")
        )
        moved = [e for e in events if e.get("parent_id") == victim]
        data["events"] = [e for e in events if e.get("parent_id") != victim] + moved

    paths = [
        _variant(source, tmp_path / f"{change.__name__}.appmap.json", change)
        for change in (drop_returns, updates_and_extras, no_return_ids)
    ]
    # eventUpdates: pruned whole (their exact texts are not read by the streamed passes)
    assert _compare(paths, monkeypatch) == 8
    late = _variant(source, tmp_path / "late.appmap.json", late_return)
    assert _compare([late], monkeypatch) == 0  # pruned whole


def test_extra_members_after_events(
    generated: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = orjson.loads(generated[1].read_bytes())
    events = data.pop("events")
    ordered = {"zeta": [1], **data, "events": events, "tail": {"k": "v"}, "pruneFilter": {}}
    path = tmp_path / "ordered.appmap.json"
    path.write_bytes(orjson.dumps(ordered, option=orjson.OPT_INDENT_2))
    assert _compare([path], monkeypatch) == 4


def test_malformed(generated: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = generated[0].read_bytes()
    bad = [
        (tmp_path / "truncated.appmap.json", raw[: len(raw) // 2]),
        (tmp_path / "badbyte.appmap.json", raw.replace(b'"event"', b'"event\xff"', 1)),
        (tmp_path / "notobject.appmap.json", raw.replace(b'"events":[', b'"events":[1,', 1)),
    ]
    for path, content in bad:
        path.write_bytes(content)
    _compare([p for p, _ in bad], monkeypatch)


def test_file_changed_between_the_passes(
    generated: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second pass copies by the first pass's cuts and lengths: a file whose size or
    modification time changed in between is refused, not copied from."""
    path = tmp_path / "changing.appmap.json"
    monkeypatch.setattr(prune_streamed, "STREAM_THRESHOLD", 0)
    for change in ("touched", "removed"):
        path.write_bytes(generated[0].read_bytes())
        result = prune_file(path, size=path.stat().st_size // 2)
        if change == "touched":
            info = path.stat()
            os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
        else:
            path.unlink()
        with pytest.raises(TraceToolError, match="changed while it was read"):
            b"".join(result.chunks())
