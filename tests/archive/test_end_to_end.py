"""archive → restore → compare → compare-report on a real git project with two commits."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import orjson

from tests.archive.conftest import Project, ok, recording, run
from tracetool.archive.manifest import MANIFEST_NAME, sha256_file

SHOW = 'SELECT * FROM "users" WHERE "id" = 1'
POSTS = 'SELECT * FROM "posts" WHERE "user_id" = 1'
HAS_OPENAPI = importlib.util.find_spec("tracetool.openapi") is not None


def _base_recordings() -> dict[str, dict]:
    return {
        "pytest/test_show.trace.json": recording("test show"),
        "pytest/test_list.trace.json": recording("test list", route="/users", path="/users"),
        "pytest/test_gone.trace.json": recording("test gone", route="/old", path="/old"),
        "requests/1700000000_GET_users.trace.json": {
            **recording("GET /users"),
            "metadata": {
                "name": "GET /users",
                "recorder": {"name": "requests", "type": "requests"},
            },
        },
    }


def _head_recordings() -> dict[str, dict]:
    return {
        # unchanged
        "pytest/test_show.trace.json": recording("test show"),
        # changed: a helper call and an N+1 loop over posts, a new table
        "pytest/test_list.trace.json": recording(
            "test list",
            route="/users",
            path="/users",
            queries=(SHOW, POSTS),
            repeat=5,
            helper=True,
        ),
        # new, with a new status code for the API
        "pytest/test_missing.trace.json": recording(
            "test missing", path="/users/9", status_code=404
        ),
    }


def _members(path: Path) -> list[str]:
    with tarfile.open(path) as tar:
        return tar.getnames()


def test_archive_restore_compare_report(project: Project) -> None:
    c1 = project.commit("first")
    project.record(_base_recordings())
    (project.trace_dir / "notes.txt").write_text("not a recording")
    out = ok("archive", "--json")
    result = json.loads(out.stdout)
    archive1 = Path(result["path"])
    assert archive1 == Path(".trace/archive/full") / f"{c1}.tar"
    assert result["type"] == "full" and result["recordings"] == 4 and result["analyzed"] == 4

    members = _members(archive1)
    assert members[0] == MANIFEST_NAME
    assert "notes.txt" not in members  # recordings and derived files only
    assert "pytest/test_show.trace.json" in members
    assert ".analysis/pytest/test_show/sequence.json" in members
    assert ".analysis/pytest/test_show/index.json" in members
    assert (".analysis/openapi.yml" in members) == HAS_OPENAPI
    with tarfile.open(archive1) as tar:
        handle = tar.extractfile(MANIFEST_NAME)
        assert handle is not None
        manifest = orjson.loads(handle.read())
    assert manifest["format"] == "tracetool-archive" and manifest["revision"] == c1
    assert (
        manifest["files"]["pytest/test_show.trace.json"]["sha256"]
        == sha256_file(project.trace_dir / "pytest/test_show.trace.json")[0]
    )
    assert manifest["recordings"]["pytest/test_show.trace.json"]["test_status"] == "succeeded"

    project.write_source(2)
    c2 = project.commit("second")
    project.record(_head_recordings())
    out = ok("archive")
    assert f"Wrote .trace/archive/full/{c2}.tar" in out.stdout

    report_dir = Path(".trace/change-report") / f"{c1}-{c2}"
    restored = ok("restore", "-r", c1, "--output-dir", str(report_dir / "base"))
    assert "Restored" in restored.stdout
    ok("restore", "-r", c2, "--output-dir", str(report_dir / "head"))
    assert (report_dir / "base" / "pytest/test_gone.trace.json").is_file()
    assert (report_dir / "base" / ".analysis/pytest/test_gone/sequence.json").is_file()

    out = ok("compare", "-b", c1, "--json")  # head defaults to the current commit
    summary = json.loads(out.stdout)
    assert Path(summary["output_dir"]) == report_dir
    report = json.loads((report_dir / "change-report.json").read_text())
    assert report["headRevision"] == c2
    assert report["newAppMaps"] == ["pytest/test_missing"]
    assert report["removedAppMaps"] == ["pytest/test_gone"]  # request recordings not classified
    assert [c["appmap"] for c in report["changedAppMaps"]] == ["pytest/test_list"]
    changed = report["changedAppMaps"][0]
    diff_file = report_dir / "diff" / changed["sequenceDiagramDiff"]
    assert orjson.loads(diff_file.read_bytes())["rootActions"]
    assert "app/views.py" in changed["sourceDiff"]  # git diff of the recording's sources
    assert any("added function call" in text for text in report["sequenceDiagramDiff"])
    assert report["testFailures"] == []
    new_queries = {q["query"]: q for q in report["sqlDiff"]["newQueries"]}
    assert len(new_queries) == 1
    (posts,) = new_queries.values()
    assert posts["appmaps"] == ["pytest/test_list"]
    assert posts["sourceLocations"] == ["app/views.py:2"]
    assert report["sqlDiff"]["newTables"] == ["posts"]
    # N+1: the users query runs five times per request now (a digest only says "changed")
    growth = report["countDiff"]["queries"]
    assert [(g["appmap"], g["baseCount"], g["headCount"]) for g in growth] == [
        ("pytest/test_list", 1, 5)
    ]
    assert report["countDiff"]["requests"][0]["headSqlCount"] == 10
    # unreferenced recordings are deleted from base/ and head/, referenced ones kept
    assert not (report_dir / "head" / "pytest/test_show.trace.json").exists()
    assert not (report_dir / "head" / ".analysis/pytest/test_show").exists()
    assert not (report_dir / "base" / "requests").exists()
    assert (report_dir / "head" / "pytest/test_missing.trace.json").is_file()
    assert (report_dir / "base" / "pytest/test_gone.trace.json").is_file()
    head_manifest = orjson.loads((report_dir / "head" / MANIFEST_NAME).read_bytes())
    assert "pytest/test_show.trace.json" not in head_manifest["files"]

    ok(
        "compare-report",
        str(report_dir),
        "--source-url",
        "https://git.example/shop/blob/main",
        "--appmap-url",
        "https://viewer.example/open",
    )
    md = (report_dir / "report.md").read_text()
    assert md.startswith("# Runtime code review\n")
    assert "| [New recordings](#new-appmaps) | :star: 1 new pytest test |" in md
    assert '<h2 id="removed-appmaps">' in md and '<h2 id="changed-appmaps">' in md
    assert "https://viewer.example/open?path=head%2Fpytest%2Ftest_missing.trace.json" in md
    assert "(https://git.example/shop/blob/main/tests/test_app.py#L3)" in md
    assert "`posts`" in md  # new table
    assert "| [SQL changes](#sql-changes) | :floppy_disk: 1 new query, 1 new table |" in md
    assert ":chart_with_upwards_trend: 1 query runs more often, 1 request issues more SQL" in md
    if HAS_OPENAPI:
        assert ":warning: 1 breaking :wrench: 1 non-breaking" in md
        assert "- Add response status code `404 GET /users/{id}`" in md
        assert "are <b>not</b> backwards-compatible" in md
        assert "- Remove path `/old`" in md  # only the removed test requested it


def test_archive_through_a_real_process(project: Project) -> None:
    project.commit("first")
    project.record({"pytest/test_show.trace.json": recording("test show")})
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracetool",
            "archive",
            "--no-index",  # alias of --no-analyze
            "-f",
            "snap.tar",
            "--output-dir",
            "out",
        ],
        cwd=project.root,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert _members(project.root / "out" / "snap.tar") == [
        MANIFEST_NAME,
        "pytest/test_show.trace.json",
    ]


def test_oversized_recordings_are_archived_not_analyzed(project: Project) -> None:
    project.commit("first")
    project.record(
        {
            "pytest/small.trace.json": recording("small"),
            "pytest/big.trace.json": recording("big", repeat=200),
        }
    )
    limit = (project.trace_dir / "pytest/big.trace.json").stat().st_size / 1024 / 1024 * 0.9
    out = ok("archive", "--max-size", f"{limit:.6f}", "--json")
    result = json.loads(out.stdout)
    assert result["oversized"] == ["pytest/big.trace.json"]
    assert "larger than" in out.stderr
    members = _members(Path(result["path"]))
    assert "pytest/big.trace.json" in members
    assert ".analysis/pytest/big/sequence.json" not in members
    assert ".analysis/pytest/small/sequence.json" in members


def test_archive_errors(project: Project, tmp_path: Path, monkeypatch) -> None:
    result = run("archive")  # a repository without commits and no recordings
    assert result.code != 0 and "no recordings" in result.stderr
    project.record({"pytest/a.trace.json": recording("a")})
    result = run("archive")
    assert result.code == 2 and "no commits yet" in result.stderr
    result = run("archive", "-t", "incremental", "-r", "abc")
    assert result.code == 2 and "no restored archive" in result.stderr
    elsewhere = tmp_path / "no-config"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = run("archive", "-r", "abc")
    assert result.code == 1 and "no trace.yml found" in result.stderr
    assert result.stderr.count("\n") == 1  # one line, no traceback


def test_golden_set_a_through_archives(project: Project, golden_a: Path) -> None:
    """AppMap's compare fixture recorded at two commits, through our whole pipeline."""
    expected = json.loads((golden_a / "change-report.json").read_text())
    revisions = []
    for side in ("base", "head"):
        revisions.append(project.commit(side))
        project.record({})
        for source in (golden_a / side / "minitest").glob("*.appmap.json"):
            target = project.trace_dir / "minitest" / source.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
        ok("archive", "-t", "full", "--thread-count", "2")
    c1, c2 = revisions
    report_dir = Path(".trace/change-report") / f"{c1}-{c2}"
    for side, rev in (("base", c1), ("head", c2)):
        ok("restore", "-r", rev, "--output-dir", str(report_dir / side))
    ok("compare", "-b", c1, "-h", c2)
    report = json.loads((report_dir / "change-report.json").read_text())
    assert report["newAppMaps"] == expected["newAppMaps"]
    assert report["removedAppMaps"] == expected["removedAppMaps"]
    assert [c["appmap"] for c in report["changedAppMaps"]] == [
        c["appmap"] for c in expected["changedAppMaps"]
    ]
    assert report["sqlDiff"] == expected["sqlDiff"]
    if HAS_OPENAPI:
        added = [d["description"] for d in report["apiDiff"]["nonBreakingDifferences"]]
        assert "Add response status code `302 GET /users/{id}`" in added
        assert report["apiDiff"]["breakingDifferencesFound"] is False


def test_pool_and_inline_analysis_agree(project: Project, golden_a: Path, monkeypatch) -> None:
    project.commit("one")
    for source in (golden_a / "base" / "minitest").glob("*.appmap.json"):
        target = project.trace_dir / "minitest" / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
    ok("archive", "--thread-count", "1", "-f", "inline.tar")
    monkeypatch.setattr("tracetool.archive.analysis.POOL_MIN_BYTES", 0)
    ok("archive", "--thread-count", "2", "-f", "pool.tar")
    manifests = []
    for name in ("inline.tar", "pool.tar"):
        with tarfile.open(Path(".trace/archive/full") / name) as tar:
            handle = tar.extractfile(MANIFEST_NAME)
            assert handle is not None
            manifests.append(orjson.loads(handle.read()))
    assert manifests[0]["files"] == manifests[1]["files"]
    assert len(manifests[0]["files"]) == 6 * 3 + (1 if HAS_OPENAPI else 0)
