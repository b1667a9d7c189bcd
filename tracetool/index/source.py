"""Where an index run's recordings come from: repository, branch, commit, CI run, origin.

Several machines and CI jobs may index into one shared database (tracetool.store); every
recording row carries its source so `query compare <branch-a> <branch-b>` and the branch/commit
filters work across them, and so one run only ever adds, replaces or deletes the recordings of
its own `origin` (`<host>:<recordings directory>`), never another writer's.

Columns: `origin`, `repository`, `source_branch`, `source_commit`, `ci_run`. Precedence for
each: the `--source-*` flag > CI environment (GitHub Actions `GITHUB_REPOSITORY`,
`GITHUB_HEAD_REF`/`GITHUB_REF_NAME`, `GITHUB_SHA`, `GITHUB_RUN_ID`; GitLab `CI_PROJECT_PATH`,
`CI_COMMIT_REF_NAME`, `CI_COMMIT_SHA`, `CI_PIPELINE_ID`) > git in the recordings directory
(asked only inside a repository). The repository URL is stored without its credentials
(`https://user:token@host/…` → `https://host/…`; `routes.without_credentials`): the index can be
shared with a team.
`branch` and `git_commit` (what `compare` and the filters read) stay the recording's own
metadata, which the agent records; `--source-branch` / `--source-commit` override them (and fill
them for recordings made without git), since the index time checkout may not be the one that
recorded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_ENV = {
    "repository": ("GITHUB_REPOSITORY", "CI_PROJECT_PATH"),
    "branch": ("GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME"),
    "commit": ("GITHUB_SHA", "CI_COMMIT_SHA"),
    "ci_run": ("GITHUB_RUN_ID", "CI_PIPELINE_ID"),
}


@dataclass(frozen=True)
class Source:
    origin: str = ""
    repository: str | None = None
    branch: str | None = None
    commit: str | None = None
    ci_run: str | None = None
    # branch/commit given on the command line override the recordings' own metadata
    forced: frozenset[str] = frozenset()


def _git(root: Path, *args: str) -> list[str] | None:
    """The lines `git -C root args` prints, or None when it fails or prints nothing."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    return lines if done.returncode == 0 and lines else None


def _in_repository(root: Path) -> bool:
    """Whether git could find a repository for `root`: `$GIT_DIR` is set, or `root` or a parent
    holds a `.git` (a folder, or a worktree's or submodule's file) or is itself a bare
    repository. Outside one, no git process is started (each costs a re-index ~8 ms)."""
    if os.environ.get("GIT_DIR"):
        return True
    for folder in (root, *root.parents):
        if os.path.lexists(folder / ".git"):
            return True
        if os.path.isfile(folder / "HEAD") and os.path.isdir(folder / "objects"):
            return True
    return False


def origin_of(root: Path) -> str:
    return f"{_hostname()}:{root}"


def _hostname() -> str:
    """`socket.gethostname()`: on POSIX the kernel's node name, without importing socket."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


def detect(root: Path, **given: str | None) -> Source:
    """The source of recordings below `root` (see module doc); `given` = the flags' values."""
    values: dict[str, str | None] = {}
    for field, names in _ENV.items():
        value = given.get(field)
        if not value:
            value = next((os.environ[n] for n in names if os.environ.get(n)), None)
        values[field] = value or None
    if None in (values["branch"], values["commit"], values["repository"]) and _in_repository(root):
        _from_git(root, values)
    if values["repository"]:
        from tracetool.routes import without_credentials

        values["repository"] = without_credentials(values["repository"])
    forced = frozenset(f for f in ("branch", "commit") if given.get(f))
    return Source(
        origin=origin_of(root),
        repository=values["repository"],
        branch=values["branch"],
        commit=values["commit"],
        ci_run=values["ci_run"],
        forced=forced,
    )


def _from_git(root: Path, values: dict[str, str | None]) -> None:
    """Fill the branch, commit and repository `values` still missing from git: one process for
    the commit and branch (none on a detached or unborn HEAD), one for the remote's URL."""
    if values["branch"] is None or values["commit"] is None:
        lines = _git(root, "rev-parse", "HEAD", "--abbrev-ref", "HEAD")
        if lines is not None and len(lines) == 2:
            commit, branch = lines
            if values["commit"] is None:
                values["commit"] = commit
            if values["branch"] is None and branch != "HEAD":
                values["branch"] = branch
    if values["repository"] is None:
        lines = _git(root, "config", "--get", "remote.origin.url")
        values["repository"] = lines[0] if lines is not None and len(lines) == 1 else None


def apply(source: Source, recording: dict[str, object]) -> None:
    """Fill a recording row's source columns (in place)."""
    recording["origin"] = source.origin
    recording["repository"] = source.repository
    recording["source_branch"] = source.branch
    recording["source_commit"] = source.commit
    recording["ci_run"] = source.ci_run
    if "branch" in source.forced:
        recording["branch"] = source.branch
    if "commit" in source.forced:
        recording["git_commit"] = source.commit
