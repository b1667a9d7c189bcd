"""`tracetool query <verb>` on the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.index.shop import make_shop
from tracetool.cli import cli
from tracetool.cli.common import run_cli
from tracetool.index import IndexOptions, index_directory
from tracetool.query import (
    compare,
    endpoints,
    find,
    hotspots,
    open_db,
    parse_filters,
    related,
    tree,
)

VERBS = ["endpoints", "find", "tree", "related", "hotspots", "compare"]


def q(*args: str) -> list[str]:
    return ["query", *args]


@pytest.mark.parametrize("verb", VERBS)
def test_every_verb_has_help_and_the_common_db_options(verb: str) -> None:
    result = CliRunner().invoke(cli, q(verb, "--help"))
    assert result.exit_code == 0
    for option in ("--trace-dir", "--query-db", "--json", "--help"):
        assert option in result.output


def test_query_group_lists_exactly_the_built_verbs() -> None:
    result = CliRunner().invoke(cli, ["query", "--help"])
    listed = [
        line.split()[0] for line in result.output.split("Commands:")[1].splitlines() if line.strip()
    ]
    assert listed == sorted([*VERBS, "mcp", "ui"])


def test_json_output_is_the_function_output(shop_db: Path) -> None:
    db = open_db(query_db=shop_db)
    qdb = ["--query-db", str(shop_db), "--json"]
    cases = [
        (q("endpoints", *qdb), endpoints(db)),
        (
            q("find", "requests", "--status", ">=400", *qdb),
            find(db, "requests", parse_filters(status=">=400", limit=100)),
        ),
        (
            q("find", "recordings", "payment", *qdb),
            find(db, "appmaps", parse_filters(text="payment", limit=100)),
        ),
        (
            q("find", "calls", "--class", "User", "--method", "find", *qdb),
            find(db, "calls", parse_filters(class_="User", method="find", limit=100)),
        ),
        (q("tree", "users show", "--depth", "1", *qdb), tree(db, "users show", depth=1)),
        (q("related", "users_show", *qdb), related(db, "users_show")),
        (
            q("hotspots", "--by", "queries", "--table", "users", *qdb),
            hotspots(db, "queries", parse_filters(table="users")),
        ),
        (
            q("hotspots", "--sort", "self", "--limit", "2", *qdb),
            hotspots(db, "functions", parse_filters(limit=2), sort="self"),
        ),
        (q("compare", "main", "feature", *qdb), compare(db, "main", "feature")),
    ]
    for args, expected in cases:
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, (args, result.output)
        assert json.loads(result.stdout) == expected, args


def test_tables(shop_db: Path) -> None:
    wide = {"COLUMNS": "200"}  # rich reads the width from COLUMNS when not on a terminal
    result = CliRunner().invoke(cli, q("endpoints", "--query-db", str(shop_db)), env=wide)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert any("/users/{id}" in line and "200×2 404×1" in line for line in lines)
    result = CliRunner().invoke(cli, q("find", "exceptions", "--query-db", str(shop_db)))
    assert "PaymentError" in result.stdout and "card declined" in result.stdout
    result = CliRunner().invoke(cli, q("tree", "report job", "--query-db", str(shop_db)))
    assert result.stdout.splitlines() == [
        "ReportJob#perform  250.00 ms",
        "  SELECT count(*) FROM orders  125.00 ms",
        "  Tree#walk  46.88 ms",
        "    Tree#walk  15.62 ms",
    ]
    empty = CliRunner().invoke(
        cli, q("find", "logs", "--route", "/nowhere", "--query-db", str(shop_db))
    )
    assert empty.exit_code == 0 and empty.stdout == ""
    assert empty.stderr == "No matching rows.\n"


def test_default_database_from_trace_dir(tmp_path: Path, home: Path) -> None:
    trace = make_shop(tmp_path / "trace")
    index_directory(trace, IndexOptions(workers=1))
    result = CliRunner().invoke(cli, q("find", "requests", "--trace-dir", str(trace), "--json"))
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)) == 5
    (tmp_path / "trace.yml").write_text("trace_dir: trace\n")
    result = CliRunner().invoke(cli, q("endpoints", "-d", str(tmp_path), "--json"))
    assert len(json.loads(result.stdout)) == 3


def test_missing_database_tells_to_run_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for verb in (
        ["endpoints"],
        ["find", "requests"],
        ["tree", "x"],
        ["related", "x"],
        ["hotspots"],
        ["compare", "a", "b"],
    ):
        with pytest.raises(SystemExit) as exit_info:
            run_cli(cli, q(*verb, "--trace-dir", str(tmp_path)))
        assert exit_info.value.code == 1
        err = capsys.readouterr().err
        assert err.startswith("tracetool: no query database at ")
        assert err.rstrip().endswith("run `tracetool index` to build it")
        assert len(err.splitlines()) == 1


def test_missing_database_e2e(tmp_path: Path, home: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tracetool", "query", "endpoints", "--trace-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode != 0
    assert "run `tracetool index`" in out.stderr
    assert out.stdout == ""


def test_bad_filters_are_usage_errors(shop_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [
        (q("find", "requests", "--status", "teapot"), "bad --status 'teapot'"),
        (q("find", "calls", "--table", "users"), "--table does not apply to `find calls`"),
        (q("find", "widgets"), "unknown type 'widgets'"),
        (q("find", "requests", "--since", "last tuesday"), "bad --since"),
        (q("compare", "main", "nope"), "no indexed recordings on branch 'nope'"),
        (q("tree", "nothing"), "nothing: no such recording in the index"),
    ]
    for args, message in cases:
        with pytest.raises(SystemExit) as exit_info:
            run_cli(cli, [*args, "--query-db", str(shop_db)])
        err = capsys.readouterr().err
        assert message in err, (args, err)
        assert exit_info.value.code in (1, 2)
    with pytest.raises(SystemExit) as exit_info:
        run_cli(cli, q("find", "requests", "--limit", "0", "--query-db", str(shop_db)))
    assert exit_info.value.code == 2
