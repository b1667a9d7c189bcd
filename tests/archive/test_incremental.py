"""Incremental archives, restore order along history, --exact, restore errors."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import orjson
import pytest

from tests.archive.conftest import Project, ok, recording, run
from tracetool.archive.manifest import MANIFEST_NAME, sha256_file


def _manifest(path: Path) -> dict:
    with tarfile.open(path) as tar:
        handle = tar.extractfile(MANIFEST_NAME)
        assert handle is not None
        return orjson.loads(handle.read())


def _state(directory: Path) -> dict[str, str]:
    """relpath → sha256 of every recording below `directory`."""
    return {
        p.relative_to(directory).as_posix(): sha256_file(p)[0]
        for p in sorted(directory.rglob("*.trace.json"))
    }


def _commit_sorting_before(project: Project, other: str, message: str) -> str:
    """Commit, re-wording the message until the SHA sorts before `other` (AppMap applies
    incrementals in alphabetical SHA order; history order must win)."""
    sha = project.commit(message)
    attempt = 0
    while sha > other:
        attempt += 1
        project.git("commit", "-q", "--amend", "-m", f"{message} ({attempt})")
        sha = project.git("rev-parse", "HEAD")
    return sha


def _restore_into_trace_dir(project: Project, revision: str) -> None:
    if project.trace_dir.exists():
        import shutil

        shutil.rmtree(project.trace_dir)
    ok("restore", "-r", revision, "--output-dir", str(project.trace_dir))


def test_incremental_chain_restores_in_history_order(project: Project) -> None:
    c1 = project.commit("one")
    project.record(
        {
            "t/a.trace.json": recording("a"),
            "t/b.trace.json": recording("b"),
            "t/c.trace.json": recording("c"),
        }
    )
    ok("archive")  # full: no restored manifest in trace_dir

    # CI run for c2: restore the base into trace_dir, tests rewrite some recordings
    project.write_source(2)
    c2 = project.commit("two")
    _restore_into_trace_dir(project, c1)
    project.record(
        {"t/b.trace.json": recording("b", repeat=2), "t/d.trace.json": recording("d")},
        clear=False,
    )
    (project.trace_dir / "t/c.trace.json").unlink()
    out = ok("archive", "--json")
    result = json.loads(out.stdout)
    assert result["type"] == "incremental" and result["base_revision"] == c1
    assert result["analyzed"] == 2 and result["reused"] == 1  # only b and d were analyzed
    inc2 = Path(result["path"])
    assert inc2 == Path(".trace/archive/incremental") / f"{c2}.tar"
    manifest = _manifest(inc2)
    assert manifest["baseRevision"] == c1
    assert sorted(m for m in manifest["members"] if m.endswith(".trace.json")) == [
        "t/b.trace.json",
        "t/d.trace.json",
    ]
    assert "t/c.trace.json" in manifest["deleted"]
    assert ".analysis/t/c/sequence.json" in manifest["deleted"]
    with tarfile.open(inc2) as tar:
        names = tar.getnames()
    assert "t/a.trace.json" not in names  # unchanged: not stored again
    assert set(names) == {MANIFEST_NAME, *manifest["members"]}
    # a full archive of the same state reuses a's restored analysis (elsewhere: not in the store)
    full = json.loads(ok("archive", "-t", "full", "--output-dir", "side", "--json").stdout)
    assert (full["analyzed"], full["reused"], full["type"]) == (2, 1, "full")
    side = _manifest(Path(full["path"]))
    assert ".analysis/t/a/index.json" in side["members"]
    assert (
        side["files"][".analysis/t/a/index.json"] == manifest["files"][".analysis/t/a/index.json"]
    )

    # c3 sorts before c2 alphabetically: AppMap would apply c3's increment first
    project.write_source(3)
    c3 = _commit_sorting_before(project, c2, "three")
    _restore_into_trace_dir(project, c2)
    project.record({"t/b.trace.json": recording("b", repeat=3)}, clear=False)
    (project.trace_dir / "t/d.trace.json").unlink()
    result = json.loads(ok("archive", "--json").stdout)
    assert result["type"] == "incremental" and result["base_revision"] == c2
    expected = _state(project.trace_dir)

    # a later, unarchived commit restores c3's state through full c1 + inc c2 + inc c3
    c4 = project.commit("four")
    out = ok("restore", "-r", c4, "--json")
    restored = json.loads(out.stdout)
    assert [(a["type"], a["revision"]) for a in restored["applied"]] == [
        ("full", c1),
        ("incremental", c2),
        ("incremental", c3),
    ]
    assert restored["revision"] == c3 and restored["requested"] == c4
    target = Path(restored["output_dir"])
    assert target == Path(".trace/work") / c4
    assert _state(target) == expected
    assert not (target / ".analysis/t/d").exists()  # deleted in c3
    state_manifest = orjson.loads((target / MANIFEST_NAME).read_bytes())
    assert set(state_manifest["files"]) == {
        p.relative_to(target).as_posix()
        for p in target.rglob("*")
        if p.is_file() and p.name != MANIFEST_NAME
    }

    # --exact: c4 itself was never archived
    result = run("restore", "-r", c4, "--exact", "--output-dir", "exact")
    assert result.code == 1 and "exactly revision" in result.stderr
    assert not Path("exact").exists()
    ok("restore", "-r", c3, "--exact", "--output-dir", "exact")
    assert _state(Path("exact")) == expected


def test_restore_errors(project: Project) -> None:
    c1 = project.commit("one")
    result = run("restore", "-r", c1)
    assert result.code == 1 and "no archive directory" in result.stderr
    project.record({"t/a.trace.json": recording("a")})
    ok("archive")
    Path("taken").mkdir()
    result = run("restore", "-r", c1, "--output-dir", "taken")
    assert result.code == 2 and "already exists" in result.stderr
    result = run("restore", "-r", "0" * 40, "--output-dir", "x")
    assert result.code == 1 and "no archive of revision" in result.stderr


def test_corrupt_archive_fails_and_leaves_nothing(project: Project) -> None:
    c1 = project.commit("one")
    project.record({"t/a.trace.json": recording("a")})
    archive = Path(json.loads(ok("archive", "--no-analyze", "--json").stdout)["path"])
    data = bytearray(archive.read_bytes())
    needle = b'"name":"a"'
    at = data.find(needle)
    assert at > 0
    data[at + 8 : at + 9] = b"z"  # same size, other content
    archive.write_bytes(bytes(data))
    result = run("restore", "-r", c1, "--output-dir", "out")
    assert result.code == 1 and "does not match its manifest hash" in result.stderr
    assert not Path("out").exists()
    assert not any(p.name.startswith(".out.") for p in Path(".").iterdir())


@pytest.mark.parametrize("name", ["../evil.trace.json", "/abs.trace.json"])
def test_unsafe_member_names_are_refused(project: Project, name: str) -> None:
    import io

    from tracetool.archive.manifest import Manifest

    c1 = project.commit("one")
    body = b"{}"
    manifest = Manifest(
        {
            "format": "tracetool-archive",
            "version": "1",
            "type": "full",
            "revision": c1,
            "files": {name: {"sha256": "0", "size": 2, "kind": "recording"}},
        }
    ).to_bytes()
    target = Path(".trace/archive/full") / f"{c1}.tar"
    target.parent.mkdir(parents=True)
    with tarfile.open(target, "w") as tar:
        for member, payload in ((MANIFEST_NAME, manifest), (name, body)):
            info = tarfile.TarInfo(member)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    result = run("restore", "-r", c1, "--output-dir", "out")
    assert result.code == 1 and "unsafe path" in result.stderr
    assert not Path("out").exists()
