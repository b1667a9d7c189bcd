"""inspect with query.db takes its SQL names (normalized text, tables) from the index: the same
values as analyzing each call, without sqlglot, and the analysis wherever the index cannot say."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.inspect.conftest import RUBY
from tests.inspect.test_indexed import CODE_OBJECTS, _index, _json
from tracetool import sql
from tracetool.inspect import find, parse_code_object

pytestmark = pytest.mark.skipif(not RUBY.is_dir(), reason="shared corpus not found")


def _count_analyses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    original = sql.analyze

    def analyze(text: str, database_type: str | None = None) -> sql.SqlInfo:
        seen.append(text)
        return original(text, database_type)

    monkeypatch.setattr(sql, "analyze", analyze)
    return seen


@pytest.mark.parametrize("text", [t for t in CODE_OBJECTS if not t.startswith("query:")])
def test_indexed_recordings_are_not_analyzed_again(
    traces: Path, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = parse_code_object(text)
    scanned = _json(find(ref, traces, use_index=False))
    _index(traces)
    analyses = _count_analyses(monkeypatch)
    assert _json(find(ref, traces)) == scanned
    assert analyses == []


def _call(eid: int, thread: int, **fields: Any) -> dict[str, Any]:
    return {"id": eid, "event": "call", "thread_id": thread, **fields}


def _ret(eid: int, parent: int, thread: int) -> dict[str, Any]:
    return {"id": eid, "event": "return", "thread_id": thread, "parent_id": parent}


def _recording(statements: list[tuple[str, str | None]]) -> dict[str, Any]:
    """One `Shop#run` call per statement, each running it (with that database_type)."""
    events: list[dict[str, Any]] = []
    for n, (text, database_type) in enumerate(statements):
        base = n * 4 + 1
        query: dict[str, Any] = {"sql": text}
        if database_type is not None:
            query["database_type"] = database_type
        events += [
            _call(base, 1, defined_class="Shop", method_id="run", path="shop.rb", lineno=3),
            _call(base + 1, 1, sql_query=query),
            _ret(base + 2, base + 1, 1),
            _ret(base + 3, base, 1),
        ]
    class_map = [
        {
            "name": "app",
            "type": "package",
            "children": [
                {
                    "name": "Shop",
                    "type": "class",
                    "children": [{"name": "run", "type": "function", "location": "shop.rb:3"}],
                }
            ],
        }
    ]
    return {"version": "1.12", "metadata": {}, "classMap": class_map, "events": events}


def test_what_the_index_cannot_say_is_analyzed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A table named with a comma (the index keeps tables comma-joined), one statement run on
    two databases (the index keeps one database_type per query), eventUpdates (the index
    applies them, inspect does not) and a file changed since indexing (same size): each gives
    the scan's values."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = tmp_path / "traces"
    root.mkdir()
    statements = [
        ('SELECT * FROM "a,b" WHERE id = 1', "postgres"),
        ("SELECT * FROM `t` WHERE id = 2", "mysql"),
        ("SELECT * FROM `t` WHERE id = 3", "postgres"),
    ]
    (root / "commas.appmap.json").write_text(json.dumps(_recording(statements)))
    updated = _recording([("SELECT * FROM orders WHERE id = 1", None)])
    updated["eventUpdates"] = {"2": _call(2, 1, sql_query={"sql": "SELECT 1 FROM users"})}
    (root / "updated.appmap.json").write_text(json.dumps(updated))
    changed = root / "changed.appmap.json"
    changed.write_text(json.dumps(_recording([("SELECT * FROM aaaa WHERE id = 1", None)])))
    ref = parse_code_object("function:app/Shop#run")
    scanned = _json(find(ref, root, use_index=False))
    assert {t for m in scanned for t in m["sqlTables"]} >= {"a,b", "orders", "aaaa"}
    _index(root)
    assert _json(find(ref, root)) == scanned

    stat = changed.stat()
    changed.write_text(changed.read_text().replace("aaaa", "bbbb"))
    os.utime(changed, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    rescanned = _json(find(ref, root, use_index=False))
    assert "bbbb" in {t for m in rescanned for t in m["sqlTables"]}
    assert _json(find(ref, root)) == rescanned
