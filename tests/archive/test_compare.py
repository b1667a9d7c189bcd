"""compare: option errors, golden set A (AppMap's own change report), failures, API diff, filter."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest

from tests.archive.conftest import Project, copy_tree, ok, recording, run
from tracetool.archive.apidiff import diff_openapi, without_removals
from tracetool.archive.compare_filter import load_compare_filter
from tracetool.errors import ConfigError, UsageError


def test_base_revision_is_required(project: Project) -> None:
    result = run("compare", "-h", "x")
    assert result.code == 2
    assert "Missing option '-b' / '--base-revision' / '--base'" in result.stderr


def test_missing_restored_data_is_named(project: Project) -> None:
    report_dir = Path("rep")
    (report_dir / "base").mkdir(parents=True)
    (report_dir / "base" / "a.trace.json").write_bytes(orjson.dumps(recording("a")))
    result = run("compare", "--base", "b1", "--head", "h1", "--output-dir", "rep")
    assert result.code == 1
    assert "rep/head" in result.stderr and "rep/base" not in result.stderr.split(";")[0]
    assert "tracetool restore" in result.stderr
    result = run("compare", "-b", "b1", "-h", "h1")
    assert ".trace/change-report/b1-h1/base and .trace/change-report/b1-h1/head" in result.stderr


def _dirs(root: Path, base: dict[str, dict], head: dict[str, dict]) -> Path:
    for side, docs in (("base", base), ("head", head)):
        for rel, doc in docs.items():
            target = root / side / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(orjson.dumps(doc))
    return root


def test_unarchived_directories_and_failed_tests(project: Project) -> None:
    """Plain directories of recordings (no analysis): compare computes what it needs."""
    _dirs(
        Path("rep"),
        {"a.trace.json": recording("a"), "b.appmap.json": recording("b")},
        {
            "a.trace.json": recording(
                "a", failure="AssertionError: 404 != 200", test_status="failed"
            ),
            "b.trace.json": recording("b"),  # same test, now written as .trace.json
        },
    )
    out = json.loads(ok("compare", "-b", "v1", "-h", "v2", "--output-dir", "rep", "--json").stdout)
    assert out["failed"] == ["a"] and out["new"] == [] and out["removed"] == []
    report = json.loads(Path("rep/change-report.json").read_text())
    (failure,) = report["testFailures"]
    assert failure["failureMessage"] == "AssertionError: 404 != 200"
    assert failure["failureLocation"] == "tests/test_app.py:4"
    assert failure["testSnippet"]["startLine"] == 1
    assert "assert r.status_code == 200" in failure["testSnippet"]["codeFragment"]
    # as AppMap: a failed run's recordings are incomplete, so no API/SQL/count diffs
    assert "sqlDiff" not in report and "apiDiff" not in report
    assert Path("rep/head/a.trace.json").exists()  # failed: referenced, kept
    assert not Path("rep/head/b.trace.json").exists()  # unchanged: deleted


def test_earlier_report_needs_clobber(project: Project) -> None:
    _dirs(Path("rep"), {"a.trace.json": recording("a")}, {"a.trace.json": recording("a", repeat=2)})
    args = ("compare", "-b", "v1", "-h", "v2", "--output-dir", "rep", "--no-delete-unreferenced")
    ok(*args)
    result = run(*args)
    assert result.code == 2 and "--clobber-output-dir" in result.stderr
    ok(*args, "--clobber-output-dir")
    assert Path("rep/base/a.trace.json").exists() and Path("rep/head/a.trace.json").exists()
    report = json.loads(Path("rep/change-report.json").read_text())
    assert [c["appmap"] for c in report["changedAppMaps"]] == ["a"]
    # the digest says "changed"; the counts say how much
    assert [(q["baseCount"], q["headCount"]) for q in report["countDiff"]["queries"]] == [(1, 2)]


def test_golden_set_a(project: Project, golden_a: Path, tmp_path: Path) -> None:
    """AppMap's own compare of sample_app_6th_ed: same new/removed/changed sets, API and SQL
    diffs — with AppMap's stored diagrams, and again with diagrams we build ourselves."""
    expected = json.loads((golden_a / "change-report.json").read_text())
    for variant in ("appmap-diagrams", "our-diagrams"):
        report_dir = tmp_path / variant
        report_dir.mkdir()
        for side in ("base", "head"):
            copy_tree(golden_a / side, report_dir / side)
            if variant == "our-diagrams":
                for diagram in (report_dir / side).rglob("sequence.json"):
                    diagram.unlink()
        ok("compare", "-b", "base", "-h", "head", "--output-dir", str(report_dir))
        report = json.loads((report_dir / "change-report.json").read_text())
        assert report["newAppMaps"] == expected["newAppMaps"], variant
        assert report["removedAppMaps"] == expected["removedAppMaps"], variant
        assert [c["appmap"] for c in report["changedAppMaps"]] == [
            c["appmap"] for c in expected["changedAppMaps"]
        ], variant
        assert [c["sequenceDiagramDiff"] for c in report["changedAppMaps"]] == [
            c["sequenceDiagramDiff"] for c in expected["changedAppMaps"]
        ]
        assert report["sqlDiff"] == expected["sqlDiff"], variant
        ours = report["apiDiff"]["nonBreakingDifferences"]
        theirs = expected["apiDiff"]["nonBreakingDifferences"]
        assert [(d["code"], d["destinationSpecEntityDetails"]) for d in ours] == [
            (d["code"], d["destinationSpecEntityDetails"]) for d in theirs
        ]
        assert report["apiDiff"]["breakingDifferencesFound"] is False
        assert set(report["appMapMetadata"]["head"]) == set(expected["appMapMetadata"]["head"])
        for name in expected["changedAppMaps"]:
            assert (report_dir / "diff" / name["sequenceDiagramDiff"]).is_file()
        # the route whose status changed is in the text of the diagram diff, as in AppMap's
        assert any(
            text.startswith("changed HTTP server request `GET /users/{id}` to return 302")
            for text in report["sequenceDiagramDiff"]
        )


def test_api_diff_classification() -> None:
    base = {
        "paths": {
            "/users": {"get": {"responses": {"200": {}}}, "delete": {"responses": {"204": {}}}},
            "/old": {"get": {"responses": {"200": {}}}},
            "/items/{id}": {
                "parameters": [{"name": "id", "in": "path", "required": True}],
                "get": {"responses": {"200": {}}, "parameters": [{"name": "q", "in": "query"}]},
            },
        }
    }
    head = {
        "paths": {
            "/users": {"get": {"responses": {"200": {}, "302": {}}}, "post": {"responses": {}}},
            "/items/{id}": {
                "parameters": [{"name": "id", "in": "path", "required": True}],
                "get": {
                    "responses": {"200": {}},
                    "parameters": [
                        {"name": "page", "in": "query"},
                        {"name": "X-Key", "in": "header", "required": True},
                    ],
                },
            },
        }
    }
    result = diff_openapi(base, head)
    breaking = {d["description"] for d in result["breakingDifferences"]}
    non_breaking = {d["description"] for d in result["nonBreakingDifferences"]}
    assert result["breakingDifferencesFound"] is True
    assert breaking == {
        "Remove path `/old`",
        "Remove operation `DELETE /users`",
        "Remove query parameter `q` from `GET /items/{id}`",
        "Add required header parameter `X-Key` to `GET /items/{id}`",
    }
    assert non_breaking == {
        "Add response status code `302 GET /users`",
        "Add operation `POST /users`",
        "Add query parameter `page` to `GET /items/{id}`",
    }
    codes = {d["code"] for d in result["breakingDifferences"] + result["nonBreakingDifferences"]}
    assert "request.parameter.query.remove" in codes and "method.add" in codes
    trimmed = without_removals(result)
    assert {d["action"] for d in trimmed["breakingDifferences"]} == {"add"}
    assert diff_openapi(base, base) == {
        "breakingDifferencesFound": False,
        "nonBreakingDifferences": [],
        "unclassifiedDifferences": [],
    }


def test_compare_filter_settings() -> None:
    cf = load_compare_filter(
        {
            "language": "java",
            "compare": {"filter": {"reveal": ["sql_pragma"], "hideName": ["/^x/"]}},
        },
        ("hide_external=true", "dependency_folders=lib,vendor"),
    )
    state = cf.state("ruby")
    assert state.hide_external is True  # --filter wins over the java default
    assert state.dependency_folders == ("lib", "vendor")
    assert "/^x/" in state.hide_name
    assert not any("PRAGMA" in p for p in state.hide_name)
    assert any("SAVEPOINT" in p for p in state.hide_name)
    hides = cf.query_hider("ruby")
    assert hides("SAVEPOINT active_record_1") and not hides("SELECT 1")
    assert load_compare_filter({}).state("python").hide_external is True
    assert load_compare_filter({}).state("java").hide_external is False
    merged = load_compare_filter({}, ('{"hideElapsedTimeUnder": 5}',)).state("python")
    assert merged.hide_elapsed_time_under == 5 and merged.hide_external is True
    with pytest.raises(ConfigError, match="unknown compare filter key 'hide_everything'"):
        load_compare_filter({"compare": {"filter": {"hide_everything": True}}})
    with pytest.raises(ConfigError, match="unknown hide option 'sql_bogus'"):
        load_compare_filter({}, ("hide=sql_bogus",))
    with pytest.raises(UsageError, match="neither key=value"):
        load_compare_filter({}, ("nonsense",))


def test_archive_filter_reaches_the_diagrams(project: Project) -> None:
    project.commit("one")
    project.record({"t/a.trace.json": recording("a", helper=True)})
    archive = json.loads(
        ok("archive", "--json", "--filter", "hide_name=function:app/views#helper").stdout
    )["path"]
    ok(
        "restore",
        "-r",
        project.git("rev-parse", "HEAD"),
        "--archive-dir",
        str(Path(archive).parents[1]),
        "--output-dir",
        "r",
    )
    diagram = json.loads(Path("r/.analysis/t/a/sequence.json").read_text())
    names = {a.get("name") for a in _walk(diagram["rootActions"])}
    assert "show" in names and "helper" not in names
    shutil.rmtree("r")


def _walk(actions: list[dict]) -> list[dict]:
    out, stack = [], list(actions)
    while stack:
        action = stack.pop()
        out.append(action)
        stack.extend(action.get("children") or [])
    return out


def test_differently_analyzed_sides_are_rebuilt(project: Project) -> None:
    """Stored diagrams made with different filters do not compare: both sides are rebuilt."""
    revisions = []
    for extra in ((), ("--filter", "hide_name=function:app/views#helper")):
        revisions.append(project.commit(f"commit {len(revisions)}"))
        project.record({"t/a.trace.json": recording("a", helper=True)})
        ok("archive", "-t", "full", *extra)
    c1, c2 = revisions
    for side, rev in (("base", c1), ("head", c2)):
        ok("restore", "-r", rev, "--output-dir", f"rep/{side}")
    out = ok("compare", "-b", c1, "-h", c2, "--output-dir", "rep")
    assert "analyzed with different settings" in out.stderr
    report = json.loads(Path("rep/change-report.json").read_text())
    assert report["changedAppMaps"] == []
    assert report["warnings"]["analysis"]
