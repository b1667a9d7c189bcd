"""Where an index run's recordings come from (tracetool.index.source): git is asked only inside
a repository, in as few processes as it takes, and a repository URL never keeps a credential."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

import orjson
import pytest

from tracetool.index import source
from tracetool.index.indexer import IndexOptions, index_directory
from tracetool.routes import without_credentials

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture(autouse=True)
def _no_ci_or_git_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The source comes from git here, not from a CI job's variables or a GIT_DIR."""
    for names in source._ENV.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("GIT_DIR", raising=False)


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=a@b", "-c", "user.name=a", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def _recording(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"version": "1.12", "metadata": {"name": "t"}, "classMap": [], "events": []}
    (folder / "t.trace.json").write_bytes(orjson.dumps(doc))


def _count_git(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    calls: list[list[str]] = []
    real = subprocess.run

    def run(args, *a, **k):  # type: ignore[no-untyped-def]
        if args and args[0] == "git":
            calls.append(list(args))
        return real(args, *a, **k)

    monkeypatch.setattr(subprocess, "run", run)
    return calls


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://deploy:ghp_abc123@github.com/o/r.git", "https://github.com/o/r.git"),
        ("HTTPS://user:pw@Example.com/o/r", "HTTPS://Example.com/o/r"),
        ("https://u:p@ss@host/o/r.git", "https://host/o/r.git"),  # "@" inside a password
        ("https://token@host:8443/r.git", "https://host:8443/r.git"),
        ("https://host/o/r.git", "https://host/o/r.git"),
        ("https://host/a@b/r.git", "https://host/a@b/r.git"),  # an "@" in the path stays
        ("git@github.com:o/r.git", "git@github.com:o/r.git"),  # scp-like: user, no secret
        ("ssh://git@host/r.git", "ssh://host/r.git"),
        ("", ""),
    ],
)
def test_without_credentials(url: str, expected: str) -> None:
    assert without_credentials(url) == expected


def test_outside_a_repository_no_git_process_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if any((p / ".git").exists() for p in (tmp_path, *tmp_path.parents)):
        pytest.skip("the temporary folder is inside a git repository")
    calls = _count_git(monkeypatch)
    got = source.detect(tmp_path)
    assert calls == []
    assert (got.repository, got.branch, got.commit) == (None, None, None)


@needs_git
def test_in_a_repository_two_git_processes_and_no_credential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "app"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "trunk")
    _git(repo, "remote", "add", "origin", "https://deploy:s3cret-token@git.example.com/o/app.git")
    traces = repo / "tmp" / "traces"
    _recording(traces)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "init")
    head = _git(repo, "rev-parse", "HEAD")

    calls = _count_git(monkeypatch)
    got = source.detect(traces)
    assert len(calls) == 2
    assert (got.repository, got.branch, got.commit) == (
        "https://git.example.com/o/app.git",
        "trunk",
        head,
    )

    # end to end: the index stores the source without the credential, anywhere
    db = tmp_path / "q.db"
    index_directory(traces, IndexOptions(query_db=db, workers=1))
    with sqlite3.connect(db) as conn:
        row = conn.execute(
            "SELECT repository, source_branch, source_commit FROM recordings"
        ).fetchone()
    assert row == ("https://git.example.com/o/app.git", "trunk", head)
    assert b"s3cret-token" not in db.read_bytes()

    # a detached HEAD has a commit but no branch
    _git(repo, "checkout", "-q", "--detach")
    got = source.detect(traces)
    assert (got.branch, got.commit) == (None, head)


@needs_git
def test_unborn_repository_and_worktree_file(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    got = source.detect(repo)  # no commit yet
    assert (got.repository, got.branch, got.commit) == (None, None, None)

    (repo / "f").write_text("x")
    _git(repo, "add", "f")
    _git(repo, "commit", "-qm", "one")
    worktree = tmp_path / "wt"
    _git(repo, "worktree", "add", "-q", "-b", "side", str(worktree))
    assert (worktree / ".git").is_file()  # a worktree's .git is a file
    got = source.detect(worktree)
    assert (got.branch, got.commit) == ("side", _git(repo, "rev-parse", "HEAD"))


def test_given_repository_is_stored_without_credentials(tmp_path: Path) -> None:
    got = source.detect(tmp_path, repository="https://ci:tok@host/o/r.git", branch="b", commit="c")
    assert (got.repository, got.branch, got.commit) == ("https://host/o/r.git", "b", "c")
    assert got.forced == frozenset({"branch", "commit"})
