"""tree(), related() and hotspots()."""

from __future__ import annotations

import importlib
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import CORPUS, DocBuilder
from tests.index.shop import write
from tests.query.conftest import NOW
from tracetool.errors import NotFoundError, UsageError
from tracetool.index import IndexOptions, index_directory
from tracetool.query import hotspots, open_db, parse_filters, related, resolve_recording, tree


def test_tree_of_a_recording(db: sqlite3.Connection) -> None:
    rows = tree(db, "main/users_show.trace.json")
    assert [(r["depth"], r["kind"], r["label"], r["count"], r["elapsed_ms"]) for r in rows] == [
        (0, "http_server", "GET /users/42", 1, 7.813),
        (1, "function", "UsersController#show", 1, 3.906),
        (2, "function", "User.find", 1, 1.953),
        (3, "sql", "SELECT * FROM users WHERE id = ?", 1, 0.977),
        (2, "function", "logging.Logger#info", 1, 0.0),
        (0, "http_server", "GET /users/7", 1, 31.25),
        (1, "function", "UsersController#show", 1, 25.0),
        (2, "function", "User.find", 1, 12.5),
        (3, "sql", "SELECT * FROM users WHERE id = ?", 1, 7.813),
    ]
    assert (rows[0]["route"], rows[0]["status"], rows[0]["event_id"]) == ("/users/{id}", 200, 1)
    assert [r["label"] for r in tree(db, "users show", depth=0)] == [
        "GET /users/42",
        "GET /users/7",
    ]
    assert len(tree(db, "users_show", limit=3)) == 3


def test_tree_folds_repeated_siblings(tmp_path: Path, builder: DocBuilder) -> None:
    job = builder.function("Report", "run", "report.py", 1)
    for user in range(3):
        find = builder.function("User", "find", "user.py", 5, static=True)
        q = builder.call(
            sql_query={"database_type": "sqlite", "sql": f"SELECT * FROM users WHERE id = {user}"}
        )
        builder.ret(q, elapsed=0.25)
        builder.ret(find, elapsed=0.5)
    other = builder.function("User", "save", "user.py", 9)
    builder.ret(other, elapsed=0.125)
    builder.ret(job, elapsed=2.0)
    write(tmp_path / "t" / "loop.trace.json", builder.doc())
    qdb = tmp_path / "q.db"
    index_directory(tmp_path / "t", IndexOptions(query_db=qdb, workers=1))
    conn = open_db(query_db=qdb)
    assert [(r["depth"], r["label"], r["count"], r["elapsed_ms"]) for r in tree(conn, "loop")] == [
        (0, "Report#run", 1, 2000.0),
        (1, "User.find", 3, 1500.0),
        (2, "SELECT * FROM users WHERE id = ?", 3, 750.0),
        (1, "User#save", 1, 125.0),
    ]
    unfolded = tree(conn, str(tmp_path / "t" / "loop.trace.json"), fold=False)
    assert [(r["depth"], r["label"], r["count"]) for r in unfolded][:3] == [
        (0, "Report#run", 1),
        (1, "User.find", 1),
        (2, "SELECT * FROM users WHERE id = ?", 1),
    ]
    assert len(unfolded) == 8
    (tmp_path / "t" / "loop.trace.json").unlink()
    with pytest.raises(NotFoundError, match="recording file is gone"):
        tree(conn, "loop")


def test_tree_labels_functions_by_what_they_record(tmp_path: Path, builder: DocBuilder) -> None:
    """Calls of one function at two places keep their own location, and a call without a
    class is not labelled as one whose class is null (rows' facts are computed once per
    function and place)."""
    for line in (3, 3, 7):
        builder.ret(builder.function("Cart", "total", "cart.py", line), elapsed=0.5)
    builder.ret(builder.call(method_id="tick"), elapsed=0.5)
    builder.ret(builder.call(method_id="tick", defined_class=None), elapsed=0.5)
    write(tmp_path / "t" / "labels.trace.json", builder.doc())
    qdb = tmp_path / "q.db"
    index_directory(tmp_path / "t", IndexOptions(query_db=qdb, workers=1))
    rows = tree(open_db(query_db=qdb), "labels", fold=False)
    assert [(r["label"], r.get("location")) for r in rows] == [
        ("Cart#total", "cart.py:3"),
        ("Cart#total", "cart.py:3"),
        ("Cart#total", "cart.py:7"),
        ("#tick", None),
        ("None#tick", None),
    ]


def test_resolving_recordings(db: sqlite3.Connection) -> None:
    for ref in ("main/users_show.trace.json", "main/users_show", "users_show", "users show"):
        assert resolve_recording(db, ref)["path"] == "main/users_show.trace.json"
    with pytest.raises(NotFoundError, match="no such recording in the index"):
        resolve_recording(db, "nothing_like_it")


def test_related(db: sqlite3.Connection) -> None:
    rows = related(db, "main/users_show.trace.json")
    assert rows == [
        {
            "recording": "feature/users_index.trace.json",
            "name": "users index",
            "score": 0.385,
            "shared": 5,
            "functions": 1,
            "classes": 2,
            "routes": 1,
            "queries": 0,
            "tables": 1,
            "external_routes": 0,
            "examples": [
                "class:app/controllers/UsersController",
                "class:app/models/User",
                "function:app/controllers/UsersController#show",
                "route:GET /users/{id}",
                "table:users",
            ],
        },
        {
            "recording": "main/orders_create.trace.json",
            "name": "orders create",
            "score": 0.125,
            "shared": 2,
            "functions": 0,
            "classes": 0,
            "routes": 0,
            "queries": 1,
            "tables": 1,
            "external_routes": 0,
            "examples": ["query:SELECT * FROM users WHERE id = ?", "table:users"],
        },
    ]
    assert [r["recording"] for r in related(db, "report job")] == ["main/orders_create.trace.json"]
    assert len(related(db, "users show", limit=1)) == 1


def test_hotspots_functions(db: sqlite3.Connection) -> None:
    rows = hotspots(db, "functions", parse_filters(limit=3))
    assert [
        (r["name"], r["count"], r["total_ms"], r["self_ms"], r["recordings"]) for r in rows
    ] == [
        ("ReportJob#perform", 1, 250.0, 78.125, 1),
        ("app/controllers/OrdersController#create", 1, 93.75, 31.25, 1),
        ("OrderService#place", 1, 62.5, 52.734, 1),
    ]
    by_self = hotspots(db, sort="self", filters=parse_filters(class_="UsersController"))
    assert [
        (
            r["name"],
            r["count"],
            r["self_ms"],
            r["total_ms"],
            r["avg_ms"],
            r["max_ms"],
            r["recordings"],
            r["top_recordings"],
        )
        for r in by_self
    ] == [
        (
            "app/controllers/UsersController#show",
            3,
            18.359,
            32.813,
            10.938,
            25.0,
            2,
            ["main/users_show.trace.json", "feature/users_index.trace.json"],
        ),
        (
            "app/controllers/UsersController#index",
            1,
            7.813,
            46.875,
            46.875,
            46.875,
            1,
            ["feature/users_index.trace.json"],
        ),
    ]
    recursive = hotspots(db, filters=parse_filters(method="walk"))
    assert [(r["name"], r["count"], r["total_ms"], r["self_ms"]) for r in recursive] == [
        ("Tree#walk", 2, 46.875, 46.875)
    ]
    feature = hotspots(db, filters=parse_filters(branch="feature", since="30d", now=NOW))
    assert {r["top_recordings"][0] for r in feature} == {"feature/users_index.trace.json"}


def test_hotspots_queries(db: sqlite3.Connection) -> None:
    rows = hotspots(db, "queries")
    assert [
        (
            r["name"],
            r["count"],
            r["total_ms"],
            r["avg_ms"],
            r["max_ms"],
            r["recordings"],
            r["top_recordings"],
        )
        for r in rows
    ] == [
        ("SELECT count(*) FROM orders", 1, 125.0, 125.0, 125.0, 1, ["jobs/report_job.trace.json"]),
        ("SELECT * FROM users", 1, 31.25, 31.25, 31.25, 1, ["feature/users_index.trace.json"]),
        (
            "SELECT * FROM users WHERE id = ?",
            3,
            10.742,
            3.581,
            7.813,
            2,
            ["main/users_show.trace.json", "main/orders_create.trace.json"],
        ),
        (
            "INSERT INTO orders (user_id, total) VALUES (?, ?)",
            1,
            7.813,
            7.813,
            7.813,
            1,
            ["main/orders_create.trace.json"],
        ),
    ]
    assert [r["name"] for r in hotspots(db, "queries", parse_filters(table="orders"))] == [
        "SELECT count(*) FROM orders",
        "INSERT INTO orders (user_id, total) VALUES (?, ?)",
    ]
    users_in_post = hotspots(db, "queries", parse_filters(route="POST /orders", table="users"))
    assert [(r["name"], r["count"], r["total_ms"], r["top_recordings"]) for r in users_in_post] == [
        ("SELECT * FROM users WHERE id = ?", 1, 1.953, ["main/orders_create.trace.json"])
    ]
    by_caller = hotspots(db, "queries", parse_filters(class_="User", method="find"))
    assert [(r["name"], r["count"]) for r in by_caller] == [("SELECT * FROM users WHERE id = ?", 2)]


def test_hotspots_refuses_unknown_kind_and_filters(db: sqlite3.Connection) -> None:
    with pytest.raises(UsageError, match="unknown hotspot kind"):
        hotspots(db, "tables")
    with pytest.raises(UsageError, match="--table does not apply"):
        hotspots(db, "functions", parse_filters(table="users"))
    with pytest.raises(UsageError, match="unknown sort"):
        hotspots(db, sort="median")


def test_tree_reads_what_the_whole_recording_says(tmp_path: Path) -> None:
    """`tree` reads a slim document (`load_slim`, messages kept) and builds the call tree in C:
    on every recording of the shared corpus (Ruby, Java, JS and Python agents), folded or not,
    its rows are those of the whole document and the plain call-tree builder."""
    from tracetool.trace import build_call_tree, load
    from tracetool.trace.normalize import apply_event_updates

    rows_of = importlib.import_module("tracetool.query.tree")._rows
    trace = tmp_path / "trace"
    for path in sorted(CORPUS.rglob("*.appmap.json")):
        target = trace / path.relative_to(CORPUS)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    qdb = tmp_path / "query.db"
    index_directory(trace, IndexOptions(query_db=qdb, workers=1))
    db = open_db(query_db=qdb)
    checked = 0
    for rel, rid in db.execute("SELECT path, id FROM recordings ORDER BY path").fetchall():
        labels = dict(
            db.execute(
                "SELECT q.event_id, co.name FROM sql_queries q JOIN code_objects co "
                "ON co.id = q.code_object_id WHERE q.recording_id = ?",
                (rid,),
            ).fetchall()
        )
        doc = load(trace / rel)
        apply_event_updates(doc)
        roots = build_call_tree(doc.events).roots
        for fold in (True, False):
            assert tree(db, rel, fold=fold) == rows_of(roots, None, fold, 1000, labels), rel
        checked += 1
    assert checked >= 40
