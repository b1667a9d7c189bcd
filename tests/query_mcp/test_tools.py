"""The query tools (tracetool_daemon.query_tools): schemas mirror the CLI, results are the verbs'."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from tracetool_daemon.query_tools import (
    BY_NAME,
    TOOLS,
    arguments_from_strings,
    call_tool,
    get_tool,
)

from tests.query_mcp.shop_index import ShopIndex
from tracetool.cli.query import command as query_group
from tracetool.errors import IndexMissingError, NotFoundError, UsageError
from tracetool.query import (
    compare,
    endpoints,
    find,
    hotspots,
    open_db,
    parse_filters,
    recording,
    related,
    search,
    summary,
    tree,
)

CLI_VERBS = ("endpoints", "find", "tree", "related", "hotspots", "compare")
# CLI parameter name -> tool argument name, where they differ.
RENAMED = {"class_": "class", "kind": "by", "no_fold": "fold", "type_": "type"}
NOT_ARGUMENTS = {"as_json", "verbose", "directory", "version", "help"}


def test_tool_list() -> None:
    assert [t.name for t in TOOLS] == [
        "summary",
        "recording",
        "endpoints",
        "find",
        "tree",
        "related",
        "hotspots",
        "compare",
        "search",
    ]
    for tool in TOOLS:
        Draft202012Validator.check_schema(tool.input_schema)
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
        assert {"trace_dir", "query_db"} <= set(tool.input_schema["properties"])
        assert tool.description and tool.title


@pytest.mark.parametrize("verb", CLI_VERBS)
def test_schema_mirrors_the_cli_options(verb: str) -> None:
    cli = query_group.commands[verb]
    params = {p.name: p for p in cli.params if p.name not in NOT_ARGUMENTS}
    props = BY_NAME[verb].input_schema["properties"]
    assert {RENAMED.get(name, name) for name in params} == set(props)
    for name, param in params.items():
        prop = props[RENAMED.get(name, name)]
        if name == "limit":
            assert prop.get("default") == param.default
        if name == "no_fold":
            assert prop["default"] is True  # --no-fold absent = fold
        if param.param_type_name == "argument" and param.required:
            assert RENAMED.get(name, name) in BY_NAME[verb].input_schema["required"]
    choices = getattr(params.get("kind"), "type", None)
    if choices is not None:
        assert props["by"]["enum"] == list(choices.choices)


def test_results_are_the_query_functions_rows(shop: ShopIndex) -> None:
    q = str(shop.query_db)
    db = open_db(query_db=shop.query_db)
    try:
        expected: list[tuple[str, dict[str, Any], Any]] = [
            ("summary", {}, summary(db)),
            ("recording", {"appmap": "users_show"}, recording(db, "users_show")),
            ("endpoints", {"status": 500}, endpoints(db, parse_filters(status="500"))),
            (
                "find",
                {"type": "recordings", "branch": "main", "limit": 2},
                find(db, "appmaps", parse_filters(branch="main", limit=2)),
            ),
            (
                "find",
                {"type": "queries", "table": "users", "text": "where"},
                find(db, "queries", parse_filters(table="users", text="where", limit=100)),
            ),
            ("tree", {"appmap": "orders_create"}, tree(db, "orders_create")),
            (
                "tree",
                {"appmap": "users_show", "depth": 0, "fold": False},
                tree(db, "users_show", depth=0, fold=False),
            ),
            ("related", {"appmap": "users_show"}, related(db, "users_show")),
            (
                "hotspots",
                {"by": "queries", "sort": "total", "limit": 3},
                hotspots(db, "queries", parse_filters(limit=3)),
            ),
            (
                "compare",
                {"branch_a": "main", "branch_b": "feature"},
                compare(db, "main", "feature", parse_filters()),
            ),
            ("search", {"text": "orders"}, search(db, "orders")),
        ]
    finally:
        db.close()
    for name, args, rows in expected:
        result = call_tool(name, args, query_db=q)
        if BY_NAME[name].rows:
            assert result == {"count": len(rows), "rows": rows}, name
            assert rows, f"{name} found nothing in the shop"
        else:
            assert result == rows, name
    routes = {r["route"] for r in call_tool("endpoints", query_db=q)["rows"]}
    assert routes == {"/users/{id}", "/orders", "/users"}


def test_which_index(shop: ShopIndex, home: Path, tmp_path: Path) -> None:
    # The arguments' query_db wins over the server's; a trace_dir argument means its default db.
    assert call_tool("summary", {"query_db": str(shop.query_db)})["recordings"] == 4
    with pytest.raises(IndexMissingError, match="run `tracetool index`"):
        call_tool("summary", {"trace_dir": str(tmp_path)}, query_db=str(shop.query_db))
    with pytest.raises(IndexMissingError, match="run `tracetool index`"):
        call_tool("summary", trace_dir=str(tmp_path))


@pytest.mark.parametrize(
    ("name", "args", "error", "message"),
    [
        ("nope", {}, UsageError, "unknown tool 'nope': use one of summary, recording"),
        ("find", {}, UsageError, "find: 'type' is a required property"),
        ("find", {"type": "nope"}, UsageError, "find: type: 'nope' is not one of"),
        ("find", {"type": "calls", "bogus": 1}, UsageError, "'bogus' was unexpected"),
        ("find", {"type": "calls", "limit": 0}, UsageError, "limit: 0 is less than"),
        ("find", {"type": "requests", "class": "User"}, UsageError, "does not apply"),
        ("endpoints", {"status": "abc"}, UsageError, "bad --status 'abc'"),
        ("tree", {"appmap": "nope"}, NotFoundError, "nope: no such recording"),
        ("compare", {"branch_a": "main"}, UsageError, "'branch_b' is a required property"),
    ],
)
def test_errors_are_one_line(
    shop: ShopIndex, name: str, args: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        call_tool(name, args, query_db=str(shop.query_db))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_arguments_from_strings() -> None:
    assert arguments_from_strings(
        "tree", {"appmap": "a", "depth": "2", "fold": "false", "limit": ""}
    ) == {"appmap": "a", "depth": 2, "fold": False}
    assert arguments_from_strings("endpoints", {"status": "500"}) == {"status": "500"}
    with pytest.raises(UsageError, match="tree: depth must be an integer"):
        arguments_from_strings("tree", {"depth": "x"})
    with pytest.raises(UsageError, match="fold must be true or false"):
        arguments_from_strings("tree", {"fold": "maybe"})
    assert get_tool("find").default("limit") == 100


def test_nothing_found_gets_the_clis_did_you_mean_hints(shop: ShopIndex) -> None:
    # Issue 15.2: MCP and the UI suggest the closest routes / classes, as `tracetool query` does.
    q = str(shop.query_db)
    result = call_tool("find", {"type": "requests", "route": "GET /user/{id}"}, query_db=q)
    assert result["count"] == 0
    assert result["hints"] == [
        "--route 'GET /user/{id}': did you mean: GET /users/{id}, GET /users?"
    ]
    result = call_tool("endpoints", {"route": "GET /order"}, query_db=q)
    assert result["count"] == 0 and "POST /orders" in result["hints"][0]
    # a hit, or a miss with nothing close, has no hints key
    assert "hints" not in call_tool("find", {"type": "requests", "route": "/users"}, query_db=q)
    miss = call_tool("find", {"type": "calls", "class": "Zzqx"}, query_db=q)
    assert miss == {"count": 0, "rows": []}
