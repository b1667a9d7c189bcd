"""Diagram diffs: added, removed, changed call, changed SQL, identical; files and directories."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from tests.diagram.conftest import GOLD, REVOKE, app
from tracetool.cli import cli
from tracetool.diagram import build_diagram, from_json, to_json
from tracetool.diagram import text as text_fmt
from tracetool.diagram.diff import changes, diff
from tracetool.diagram.model import CHANGE, DELETE, INSERT
from tracetool.trace import from_data, load


def _marks(diagram: Any) -> list[tuple[str, int | None]]:
    return [(a.display_name, a.diff_mode) for a, _ in diagram.walk()]


def test_identical_diagrams_give_none() -> None:
    d = build_diagram(load(REVOKE))
    assert diff(d, build_diagram(load(REVOKE))) is None


def test_user_found_vs_not_found() -> None:
    base = build_diagram(load(app("user_not_found")))
    head = build_diagram(load(app("show_user")))
    result = diff(base, head)
    assert result is not None
    find = next(a for a, _ in result.walk() if a.display_name == "find")
    assert (find.diff_mode, find.former_name, find.former_result) == (CHANGE, "find", "exception!")
    # the query below `find` exists on both sides: unchanged (AppMap's grid search calls it added)
    assert [c.diff_mode for c in find.children] == [None]
    summary = text_fmt.render(result)
    assert summary.splitlines() == [
        "changed function call `models.find` to return User instead of exception!",
        "added function call `users#show`",
        "  added function call `models#posts`",
        "    added function call `models.find_for_user`",
        "      added function call `database.query`",
        "  added loop",
        "    added function call `posts#show`",
    ]
    golden = (GOLD / "userFoundVsNotFound.sequence.txt").read_text().splitlines()
    assert summary.splitlines()[0] == golden[0]


def test_removed_and_added_calls_in_a_loop() -> None:
    base = build_diagram(load(app("list_users")))
    head = build_diagram(load(app("list_users_prefetch")))
    result = diff(base, head)
    assert result is not None
    summary = text_fmt.render(result).splitlines()
    assert "added function call `models.find_for_users`" in summary
    assert "removed function call `models.find_for_user`" in summary
    removed = [a for a, _ in result.walk() if a.diff_mode == DELETE]
    assert all(a.digest.startswith("delete:") for a in removed)
    assert {a.display_name for a in removed} == {"find_for_user", "query"}


def _doc_with_sql(sql: str, method: str = "find") -> dict[str, Any]:
    return {
        "classMap": [
            {
                "name": "app",
                "type": "package",
                "children": [
                    {
                        "name": "Repo",
                        "type": "class",
                        "children": [
                            {
                                "name": method,
                                "type": "function",
                                "location": "app/repo.py:3",
                                "static": True,
                            }
                        ],
                    }
                ],
            }
        ],
        "events": [
            {
                "id": 1,
                "event": "call",
                "thread_id": 1,
                "defined_class": "Repo",
                "method_id": method,
                "path": "app/repo.py",
                "lineno": 3,
                "static": True,
            },
            {
                "id": 2,
                "event": "call",
                "thread_id": 1,
                "sql_query": {"sql": sql, "database_type": "sqlite"},
            },
            {"id": 3, "event": "return", "thread_id": 1, "parent_id": 2, "elapsed": 0.001},
            {"id": 4, "event": "return", "thread_id": 1, "parent_id": 1, "elapsed": 0.002},
        ],
    }


def test_changed_sql_is_a_change_and_literals_are_not() -> None:
    base = build_diagram(from_data(_doc_with_sql("SELECT * FROM users WHERE id = 1")))
    same = build_diagram(from_data(_doc_with_sql("SELECT * FROM users WHERE id = 42")))
    assert diff(base, same) is None
    head = build_diagram(from_data(_doc_with_sql("SELECT * FROM accounts WHERE id = 1")))
    result = diff(base, head)
    assert result is not None
    query = result.root_actions[0].children[0]
    assert query.diff_mode == CHANGE and query.former_name == "SELECT * FROM users WHERE id = 1"
    assert text_fmt.render(result) == (
        "changed SQL `SELECT * FROM users WHERE id = 1` to SQL `SELECT * FROM accounts WHERE id = 1`"
    )


def test_changed_function_call() -> None:
    base = build_diagram(from_data(_doc_with_sql("SELECT 1", "find")))
    head = build_diagram(from_data(_doc_with_sql("SELECT 1", "lookup")))
    result = diff(base, head)
    assert result is not None
    root = result.root_actions[0]
    assert (root.diff_mode, root.former_name, root.display_name) == (CHANGE, "find", "lookup")
    assert changes(result) == 1


def test_added_root() -> None:
    base = build_diagram(load(REVOKE))
    head_json = to_json(base)
    extra = copy.deepcopy(head_json["rootActions"][1])
    extra["route"] = "POST /api/api_keys"
    extra["digest"] = "x" * 64
    extra["subtreeDigest"] = "y" * 64
    head_json["rootActions"].append(extra)
    result = diff(base, from_json(head_json))
    assert result is not None
    assert result.root_actions[-1].diff_mode == INSERT
    assert text_fmt.render(result).startswith("added HTTP server request `POST /api/api_keys`")


def test_cli_files_and_directories(tmp_path: Path) -> None:
    runner = CliRunner()
    base, head = tmp_path / "base", tmp_path / "head"
    for side, name in ((base, "user_not_found"), (head, "show_user")):
        (side / "sub").mkdir(parents=True)
        data = to_json(build_diagram(load(app(name))))
        (side / "sub" / "user.sequence.json").write_bytes(orjson.dumps(data))
    (base / "gone.sequence.json").write_bytes(orjson.dumps(to_json(build_diagram(load(REVOKE)))))
    (head / "same.sequence.json").write_bytes(orjson.dumps(to_json(build_diagram(load(REVOKE)))))
    (base / "same.sequence.json").write_bytes(orjson.dumps(to_json(build_diagram(load(REVOKE)))))
    out = tmp_path / "out"
    result = runner.invoke(
        cli, ["sequence-diagram-diff", str(base), str(head), "--output-dir", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "gone.sequence.json exists only in" in result.output
    assert "same.diff: identical" in result.output
    assert "changed function call `models.find`" in result.output
    uml = (out / "sub" / "user.diff.sequence.uml").read_text()
    assert uml.startswith("@startuml") and "[#CA9C3F]" in uml
    assert not (out / "same.diff.sequence.uml").exists()

    result = runner.invoke(
        cli,
        [
            "sequence-diagram-diff",
            str(base / "sub/user.sequence.json"),
            str(head / "sub/user.sequence.json"),
            "--output-dir",
            str(out),
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = orjson.loads((out / "diff.sequence.json").read_bytes())
    modes = [a.get("diffMode") for a in data["rootActions"][0]["children"]]
    assert modes == [CHANGE, INSERT]


def test_cli_identical_and_bad_input(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["sequence-diagram-diff", str(REVOKE), str(REVOKE)])
    assert result.exit_code == 0 and "identical" in result.output
    bogus = tmp_path / "x.json"
    bogus.write_text('{"hello": 1}')
    done = subprocess.run(
        [sys.executable, "-m", "tracetool", "sequence-diagram-diff", str(bogus), str(bogus)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("tracetool: ") and "not a sequence diagram" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
