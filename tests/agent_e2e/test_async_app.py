"""The async FastAPI example (examples/fastapi_async) recorded by the pytest plugin against a
real PostgreSQL: every request's handler, dependencies and SQL nest under it, the middleware's
self time excludes the handler, a `yield` dependency is one call, the schema set-up is its own
recording — then `tracetool index`, `query endpoints`, `inspect route:` and `query tree` on it,
and AppMap's validator on every file written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from tests.realparts.postgres import PgServer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fastapi_async"
TESTS = ("add_and_list_authors", "books_of_an_author", "missing_author_is_404", "stats_and_health")

pytest.importorskip("asyncpg", reason="the example needs asyncpg (dev dependency)")


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=240
    )


@pytest.fixture(scope="module")
def recorded(
    pg_server: PgServer, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, str]]:
    base = tmp_path_factory.mktemp("async_app")
    project = base / "fastapi_async"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("tmp", "__pycache__"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACETOOL")}
    env.update(
        BOOKSHOP_DATABASE_URL=pg_server.create_database("bookshop"),
        TRACETOOL_TRACE_DIR=str(project / "tmp" / "trace"),
        HOME=str(base / "home"),  # the index's query.db goes under ~/.trace
    )
    result = _run(
        [
            *(
                "-m",
                "pytest",
                "-q",
                "--trace-record",
                "-p",
                "no:randomly",
                "-p",
                "no:cacheprovider",
            ),
            # unrelated plugins of the dev venv cost seconds of start-up
            *("-p", "no:hypothesispytest", "-p", "no:pytest-lsp"),
        ],
        project,
        env,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "4 passed" in result.stdout
    return project, env


def _docs(project: Path) -> dict[str, dict[str, Any]]:
    return {
        p.name: json.loads(p.read_text(encoding="utf-8"))
        for p in (project / "tmp" / "trace" / "pytest").glob("*.trace.json")
    }


def _test_doc(docs: dict[str, dict[str, Any]], test: str) -> dict[str, Any]:
    (doc,) = [d for name, d in docs.items() if name.endswith(f"test_{test}.trace.json")]
    return doc


class Node:
    def __init__(self, call: dict[str, Any]) -> None:
        self.call = call
        self.children: list[Node] = []
        self.elapsed = 0.0

    @property
    def label(self) -> str:
        c = self.call
        if "http_server_request" in c:
            return "HTTP " + c["http_server_request"]["path_info"]
        if "sql_query" in c:
            return "SQL " + c["sql_query"]["sql"]
        if "http_client_request" in c:
            return "CLIENT"
        return f"{c.get('defined_class')}.{c.get('method_id')}"

    def walk(self) -> Iterable[Node]:
        yield self
        for child in self.children:
            yield from child.walk()


def roots(doc: dict[str, Any]) -> list[Node]:
    """The call trees of a document, nested per thread_id the way AppMap readers do."""
    out: list[Node] = []
    stacks: dict[int, list[Node]] = {}
    for e in doc["events"]:
        stack = stacks.setdefault(e["thread_id"], [])
        if e["event"] == "call":
            node = Node(e)
            (stack[-1].children if stack else out).append(node)
            stack.append(node)
        else:
            assert stack and stack[-1].call["id"] == e["parent_id"], "a return out of order"
            stack.pop().elapsed = e["elapsed"]
    return out


def requests_of(doc: dict[str, Any]) -> list[Node]:
    return [n for r in roots(doc) for n in r.walk() if "http_server_request" in n.call]


def test_handlers_dependencies_and_sql_nest_under_their_request(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    docs = _docs(recorded[0])
    for test in TESTS:
        doc = _test_doc(docs, test)
        for root in roots(doc):
            # nothing of a request lives outside it: no handler, dependency or SQL at the top
            assert not root.label.startswith(("bookshop.routes", "bookshop.deps", "SQL")), (
                test,
                root.label,
            )
        for request in requests_of(doc):
            labels = [n.label for n in request.walk()]
            (dispatch,) = [n for n in request.children if n.label.endswith(".dispatch")]
            # the handler runs below the middleware (in a task of BaseHTTPMiddleware's own; a
            # dependency that ended before the response wraps it there)
            assert any(n.label.startswith("bookshop.routes.") for n in dispatch.walk()), labels
            own = dispatch.elapsed - sum(c.elapsed for c in dispatch.children)
            assert 0 <= own < dispatch.elapsed
            # a yield dependency is one call per request
            assert labels.count("bookshop.deps.get_session") <= 1
    add = _test_doc(docs, "add_and_list_authors")
    post = requests_of(add)[0]
    labels = [n.label for n in post.walk()]
    assert labels.count("bookshop.deps.get_session") == 1
    assert labels.count("bookshop.deps.request_id") == 1  # sync: set-up and tear-down in threads
    (rid,) = [n for n in post.walk() if n.label == "bookshop.deps.request_id"]
    assert [c.label for c in rid.children] == ["bookshop.deps.audit"]  # its tear-down
    assert any(n.label.startswith("SQL INSERT INTO authors") for n in post.walk())
    # the task group of /stats: both counts and their SQL under the handler
    stats = _test_doc(docs, "stats_and_health")
    (handler,) = [n for r in requests_of(stats) for n in r.walk() if n.label.endswith(".stats")]
    counts = [c for c in handler.children if c.label == "bookshop.routes.count"]
    assert len(counts) == 2 and all(
        any(g.label.startswith("SQL") for g in c.walk()) for c in counts
    )
    assert "bookshop.routes.score" in [c.label for c in handler.children]  # anyio worker thread


def test_schema_set_up_is_its_own_recording(recorded: tuple[Path, dict[str, str]]) -> None:
    docs = _docs(recorded[0])
    setups = [d for d in docs.values() if "fixture.setup" in d["metadata"]["labels"]]
    (setup,) = [d for d in setups if d["metadata"]["fixture"]["name"] == "database_url"]
    assert setup["metadata"]["fixture"]["scope"] == "session"
    sql = [e["sql_query"]["sql"] for e in setup["events"] if "sql_query" in e]
    assert any("CREATE TABLE authors" in s for s in sql)
    for test in TESTS:
        events = _test_doc(docs, test)["events"]
        assert not any("CREATE TABLE" in e.get("sql_query", {}).get("sql", "") for e in events)
        assert not any("DROP TABLE" in e.get("sql_query", {}).get("sql", "") for e in events)
    teardowns = [d for d in docs.values() if "fixture.teardown" in d["metadata"]["labels"]]
    assert any(
        "DROP TABLE" in e.get("sql_query", {}).get("sql", "")
        for d in teardowns
        for e in d["events"]
    )


def test_recordings_pass_appmaps_validator(
    recorded: tuple[Path, dict[str, str]], appmap_validate: Callable[[Iterable[Path]], int]
) -> None:
    files = sorted((recorded[0] / "tmp" / "trace").rglob("*.trace.json"))
    assert len(files) >= 6
    appmap_validate(files)


def test_index_endpoints_inspect_and_tree(recorded: tuple[Path, dict[str, str]]) -> None:
    project, env = recorded
    cli = ["-m", "tracetool"]
    indexed = _run([*cli, "index"], project, env)
    assert indexed.returncode == 0, indexed.stderr
    endpoints = _run([*cli, "query", "endpoints", "--json"], project, env)
    assert endpoints.returncode == 0, endpoints.stderr
    sql = {(r["method"], r["route"]): r["sql_per_request"] for r in json.loads(endpoints.stdout)}
    assert sql == {
        ("GET", "/authors"): 1.0,
        ("POST", "/authors"): 1.0,
        ("POST", "/authors/{author_id}/books"): 2.0,  # the author, the insert
        ("GET", "/authors/{author_id}/books"): 1.5,  # 2 for the 200, 1 for the 404
        ("GET", "/stats"): 2.0,
        ("GET", "/health"): 0.0,
    }
    inspected = _run([*cli, "inspect", "route:GET /authors/{author_id}/books"], project, env)
    assert inspected.returncode == 0, inspected.stderr
    tables = {t for m in json.loads(inspected.stdout)["matches"] for t in m["sqlTables"]}
    assert tables == {"authors", "books"}
    tree = _run([*cli, "query", "tree", "add and list authors", "--json"], project, env)
    assert tree.returncode == 0, tree.stderr
    rows = json.loads(tree.stdout)
    servers = [r for r in rows if r["kind"] == "http_server"]
    assert [r["label"] for r in servers] == ["POST /authors", "GET /authors"]
    handlers = [r for r in rows if r["label"].startswith("bookshop.routes.")]
    assert [r["label"] for r in handlers] == [
        "bookshop.routes.add_author",
        "bookshop.routes.list_authors",
    ]
    assert all(h["depth"] > servers[0]["depth"] for h in handlers)
    assert all(r["depth"] > 0 for r in rows if r["kind"] == "sql")
