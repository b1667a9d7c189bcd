"""Issue 15 on real-app-shaped recordings: the analysis commands agree with each other.

Every route `query endpoints` prints is found by `inspect route:`, `query find --route` and is
listed once in openapi; dotted identifiers and any parameter name work; one statement under
five paramstyles is one row in hotspots; diagram lifelines are unique; a compare of two runs
that differ only in ephemeral ports reports no change.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from tests.analysis import realapps
from tracetool.cli import cli
from tracetool.cli.common import run_cli
from tracetool.index import IndexOptions, index_directory
from tracetool.query import endpoints, hotspots, open_db, parse_filters
from tracetool.query.source import function_detail, repeated_queries


@pytest.fixture(scope="module")
def apps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("realapps")
    realapps.write_all(root / "trace")
    result = index_directory(root / "trace", IndexOptions(query_db=root / "query.db", workers=1))
    assert len(result.added) == 5 and not result.skipped
    return root


@pytest.fixture
def db(apps: Path) -> Iterator[sqlite3.Connection]:
    conn = open_db(query_db=apps / "query.db")
    yield conn
    conn.close()


def tool(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run `tracetool <args>` in process; (exit code, stdout, stderr)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        run_cli(cli, list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def compare_v1_v2(capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`tracetool compare` of the recordings under rep/base (v1) and rep/head (v2), as JSON."""
    return tool(
        capsys,
        "compare",
        "-b",
        "v1",
        "-h",
        "v2",
        "--output-dir",
        "rep",
        "--json",
        "--no-delete-unreferenced",
    )


def inspect(capsys: pytest.CaptureFixture[str], apps: Path, ref: str) -> dict[str, Any]:
    code, out, err = tool(
        capsys,
        "inspect",
        ref,
        "--trace-dir",
        str(apps / "trace"),
        "--query-db",
        str(apps / "query.db"),
    )
    assert code == 0, err
    data: dict[str, Any] = orjson.loads(out)
    return data


# ---------------------------------------------------------------- 1. one route model


def test_endpoints_of_an_app_without_route_templates_are_one_row_per_route(
    db: sqlite3.Connection,
) -> None:
    rows = {(r["method"], r["route"]): r["count"] for r in endpoints(db)}
    assert rows == {
        ("GET", "/api/v1/users/{user_id}"): 2,
        ("GET", "/api/v1/users/{user_id}/orders"): 1,
        ("GET", "/confirm/{confirm_id}"): 3,  # a hex id, letters-only hex and a token: one route
        ("GET", "/health"): 1,
        ("GET", "/catalog/book/{pk}"): 2,
        ("POST", "/catalog/book/{pk}/renew/"): 1,
        ("GET", "/items/{item_id}"): 1,
    }


def test_every_route_endpoints_prints_is_found_by_inspect_find_and_openapi(
    db: sqlite3.Connection, apps: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = tool(capsys, "openapi", "--trace-dir", str(apps / "trace"))
    assert code == 0, err
    paths = yaml.safe_load(out)["paths"]
    listed = [(m.upper(), p) for p, ops in paths.items() for m in ops if m != "parameters"]
    for row in endpoints(db):
        route = (row["method"], row["route"])
        data = inspect(capsys, apps, f"route:{row['method']} {row['route']}")
        assert len(data["matches"]) == row["count"], route
        found = json.loads(
            tool(
                capsys,
                "query",
                "find",
                "requests",
                "--route",
                f"{row['method']} {row['route']}",
                "--query-db",
                str(apps / "query.db"),
                "--json",
            )[1]
        )
        assert len(found) == row["count"], route
        assert listed.count(route) == 1, (route, listed)
    # no concrete path leaks into the API description
    assert not any(any(c.isdigit() for c in p.replace("v1", "")) for p in paths), list(paths)
    assert "/confirm/ffffffffffffffff" not in paths


@pytest.mark.parametrize(
    "spelling",
    [
        "route:GET /catalog/book/:id",
        "route:GET /catalog/book/{pk}",
        "route:GET /catalog/book/<int:pk>",
        "route:get /catalog/book/{book_id}",
    ],
)
def test_any_parameter_name_and_dialect_is_the_same_route(
    spelling: str, apps: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = inspect(capsys, apps, spelling)
    assert [m["eventId"] for m in data["matches"]] == [1, 59]
    assert data["httpServerRequests"] == ["GET /catalog/book/{pk} (200)"]


# ---------------------------------------------------------------- 2. forgiving identifiers


@pytest.mark.parametrize(
    ("spelling", "count"),
    [
        ("function:catalog/models/BookInstance#is_overdue", 24),
        ("function:catalog.models.BookInstance.is_overdue", 24),
        ("function:catalog.views.book_detail", 2),
        ("function:catalog/views.book_detail", 2),
        ("class:catalog.models.BookInstance", 24),
        ("package:catalog.models", 26),
    ],
)
def test_dotted_and_slashed_identifiers(
    spelling: str, count: int, apps: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert len(inspect(capsys, apps, spelling)["matches"]) == count


def test_not_found_suggests_the_closest_identifiers(
    apps: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = tool(
        capsys,
        "inspect",
        "function:catalog.models.BookInstance.is_overdu",
        "--trace-dir",
        str(apps / "trace"),
    )
    assert code != 0
    assert "did you mean: function:catalog/models/BookInstance#is_overdue" in err
    code, _, err = tool(
        capsys, "inspect", "route:GET /catalog/books/:id", "--trace-dir", str(apps / "trace")
    )
    assert "did you mean: route:GET /catalog/book/{pk}" in err
    assert err.count("\n") == 1  # one line


def test_query_find_class_and_lsp_function_lookup_take_dotted_names(
    db: sqlite3.Connection, apps: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = tool(
        capsys,
        "query",
        "find",
        "calls",
        "--class",
        "catalog.models.BookInstance",
        "--query-db",
        str(apps / "query.db"),
        "--json",
    )
    assert code == 0, err
    assert {r["function"] for r in json.loads(out)} == {"catalog/models/BookInstance#is_overdue"}
    detail = function_detail(db, "catalog.models.BookInstance.is_overdue")
    assert detail["fqid"] == "function:catalog/models/BookInstance#is_overdue"
    with pytest.raises(Exception, match="did you mean: function:catalog/views.book_detail"):
        function_detail(db, "catalog.views.book_detial")


def test_query_identifiers_take_keywords_in_any_case(
    apps: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = inspect(
        capsys,
        apps,
        'query:select "auth_user"."id" from "auth_user" where "auth_user"."id" = $1 limit 5',
    )
    assert len(data["matches"]) == 24


# ---------------------------------------------------------------- 3. paramstyles


def test_one_statement_under_five_paramstyles_is_one_hotspot(db: sqlite3.Connection) -> None:
    rows = hotspots(db, "queries", parse_filters(table="catalog_book"))
    assert len(rows) == 1, rows
    (row,) = rows
    assert row["count"] == 1 + 1 + 1 + 1 + 3  # pyformat, numeric, qmark, named, format ×3
    assert row["name"].endswith('WHERE "catalog_book"."id" = ? LIMIT ?')
    assert row["recordings"] == 4


def test_n_plus_one_is_found_on_django_percent_s_sql(db: sqlite3.Connection) -> None:
    (found,) = repeated_queries(db, ["function:catalog/views.book_detail"], threshold=10)
    assert found["max_count"] == 12 and found["route"] == "GET /catalog/book/{pk}"
    assert found["sql"].endswith('WHERE "auth_user"."id" = ? LIMIT ?')


# ---------------------------------------------------------------- 4. diagrams


def test_lifelines_are_unique_and_a_module_is_one_lifeline(apps: Path) -> None:
    from tracetool.diagram.service import diagram_of

    (flask,) = (apps / "trace" / "flask").glob("*.appmap.json")
    names = {a.id: a.name for a in diagram_of(flask).actors}
    assert names["package:shop/users/api"] == "users/api"
    assert names["package:shop/admin/api"] == "admin/api"
    assert names["package:shop/config"] == "config"
    # a module's functions and its classes share one lifeline: `shop.config.load` and
    # `shop.config.Settings.get`, `shop.users.api._serialize` and `...UserResource.get`
    assert "package:shop" not in names
    assert len(set(names.values())) == len(names)


def test_png_collapses_deep_calls_and_says_how_to_expand(
    apps: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (flask,) = (apps / "trace" / "flask").glob("*.appmap.json")
    code, out, err = tool(capsys, "sequence-diagram", str(flask), "--output-dir", str(tmp_path))
    assert code == 0, err
    assert "nested calls within a lifeline hidden; --no-collapse shows every call" in out
    code, out, err = tool(
        capsys, "sequence-diagram", str(flask), "--output-dir", str(tmp_path), "--no-collapse"
    )
    assert code == 0 and "hidden" not in out


# ---------------------------------------------------------------- 5. compare


def test_runs_differing_only_in_ephemeral_ports_compare_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    realapps.flask_shop(tmp_path / "rep" / "base", quote_port=33025)
    realapps.flask_shop(tmp_path / "rep" / "head", quote_port=42319)
    # control: the same ports, another client route is a change
    realapps.flask_shop(tmp_path / "rep" / "base", quote_port=33025, name="other")
    realapps.flask_shop(tmp_path / "rep" / "head", 33025, name="other", quote_path="/quotes/5")
    code, out, err = compare_v1_v2(capsys)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["changed"] == ["other"], summary
    report = json.loads((tmp_path / "rep" / "change-report.json").read_text())
    assert [c["appmap"] for c in report["changedAppMaps"]] == ["other"]
    code, out, err = tool(capsys, "compare-report", "rep")
    assert code == 0, err


def test_inspect_names_routes_as_endpoints_does(
    apps: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = inspect(capsys, apps, "function:catalog.views.book_detail")
    assert data["callers"] == ["route:GET /catalog/book/{pk}"]
    flask = inspect(capsys, apps, "function:shop.users.api.UserResource.get")
    assert set(flask["callers"]) == {
        "route:GET /api/v1/users/{user_id}",
        "route:GET /api/v1/users/{user_id}/orders",
        "route:GET /confirm/{confirm_id}",
        "route:GET /health",
    }


def test_query_find_with_nothing_found_suggests_routes_and_classes(
    apps: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qdb = str(apps / "query.db")
    code, _, err = tool(
        capsys, "query", "find", "requests", "--route", "GET /catalog/books/:id", "--query-db", qdb
    )
    assert code == 0
    assert "--route 'GET /catalog/books/:id': did you mean: GET /catalog/book/{pk}" in err
    code, _, err = tool(
        capsys, "query", "find", "calls", "--class", "catalog.models.BookInstanc", "--query-db", qdb
    )
    assert "did you mean: catalog/models/BookInstance" in err


def test_a_big_request_fits_one_png_page_when_collapsed() -> None:
    """AppMap's corpus checkout test: 3 PNG pages in full, one collapsed, no query lost."""
    from tests.conftest import CORPUS
    from tracetool.diagram.collapse import collapse
    from tracetool.diagram.layout import layout
    from tracetool.diagram.model import QUERY
    from tracetool.diagram.png import _pages, font_measure
    from tracetool.diagram.service import diagram_of

    path = CORPUS / "packages/models/tests/unit/fixtures/checkout_update_payment.appmap.json"
    if not path.is_file():
        pytest.skip("shared corpus not found")
    diagram = diagram_of(path)
    queries = sum(1 for a, _ in diagram.walk() if a.node_type == QUERY)
    assert len(_pages(layout(diagram, font_measure()))) == 3
    assert collapse(diagram) > 300
    assert len(_pages(layout(diagram, font_measure()))) == 1
    assert sum(1 for a, _ in diagram.walk() if a.node_type == QUERY) == queries == 100


def test_diagram_expand_takes_dotted_names(apps: Path) -> None:
    from tracetool.diagram.builder import DiagramOptions
    from tracetool.diagram.service import diagram_of

    (flask,) = (apps / "trace" / "flask").glob("*.appmap.json")
    options = DiagramOptions(expand=("package:shop.users.api",))
    ids = {a.id for a in diagram_of(flask, options=options).actors}
    assert "class:shop/users/api/UserResource" in ids and "package:shop/users/api" not in ids
