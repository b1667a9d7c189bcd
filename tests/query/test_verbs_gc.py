"""The query verbs run with the cyclic GC paused (`tracetool.trace.gc_paused_call`): the rows
they read would otherwise set off collections that walk every object of a long-lived process
(the daemon's), which made `compare` and `endpoints` take twice as long from call to call."""

from __future__ import annotations

import gc
import importlib
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from tracetool import query as q
from tracetool.errors import NotFoundError
from tracetool.query import parse_filters

# What the module exports that is not a verb (helpers, filters, the database opener)
_NOT_VERBS = {
    "TYPES",
    "Filters",
    "open_db",
    "parse_filters",
    "percentile",
    "query_db_path",
    "resolve_recording",
}


def test_every_verb_is_paused() -> None:
    verbs = sorted(set(q.__all__) - _NOT_VERBS)
    assert len(verbs) >= 15
    unpaused = [name for name in verbs if not hasattr(getattr(q, name), "__wrapped__")]
    assert unpaused == []


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """Collections started while a test runs, with a threshold that starts one at the first
    allocation of a container (restored after)."""
    started: list[int] = []

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(info["generation"])

    threshold = gc.get_threshold()
    gc.collect()
    gc.callbacks.append(callback)
    gc.set_threshold(1, 1, 1)
    try:
        yield started
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(callback)


def _calls(db: sqlite3.Connection) -> list[tuple[Any, Any]]:
    """(verb, its arguments) pairs, each a call that reads rows."""
    branch = db.execute("SELECT branch FROM recordings WHERE branch IS NOT NULL").fetchone()[0]
    largest = db.execute("SELECT path FROM recordings ORDER BY size DESC LIMIT 1").fetchone()[0]
    return [
        (q.endpoints, (db,)),
        (q.compare, (db, branch, branch)),
        (q.find, (db, "queries", parse_filters())),
        (q.hotspots, (db, "queries")),
        (q.related, (db, largest)),
        (q.tree, (db, largest)),
        (q.summary, (db,)),
        (q.recording_groups, (db,)),
    ]


def test_no_collection_runs_inside_a_verb(db: sqlite3.Connection, collections: list[int]) -> None:
    """With a threshold of one allocation, the verb itself starts at most the collection its
    call's own arguments set off; the same function unwrapped starts one per few rows."""
    for verb, args in _calls(db):
        collections.clear()
        rows = verb(*args)
        paused = len(collections)
        collections.clear()
        assert verb.__wrapped__(*args) == rows
        unpaused = len(collections)
        assert paused <= 2 and unpaused >= 10, (verb.__name__, paused, unpaused)
        assert gc.isenabled()


def test_the_collector_is_back_after_an_error(db: sqlite3.Connection) -> None:
    with pytest.raises(NotFoundError, match="no indexed recordings on branch"):
        q.compare(db, "no-such-branch", "main")
    assert gc.isenabled()
    gc.disable()
    try:  # (paused already: a verb leaves it paused)
        q.endpoints(db)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_paused_inside_the_verb(db: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    module = importlib.import_module("tracetool.query.endpoints")
    seen: list[bool] = []
    rows_of = module._branch_rows

    def spy(*args: Any) -> Any:
        seen.append(gc.isenabled())
        return rows_of(*args)

    monkeypatch.setattr(module, "_branch_rows", spy)
    branch = db.execute("SELECT branch FROM recordings WHERE branch IS NOT NULL").fetchone()[0]
    assert q.compare(db, branch, branch)
    assert seen == [False, False] and gc.isenabled()
