"""The few git questions archive, restore and compare ask.

Every call runs `git` with an argument list (no shell, no string interpolation into a command
line) and a `--` before paths, so revision names and file names are never parsed as options.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tracetool.errors import NotFoundError, UsageError


def _git(args: list[str], cwd: Path | None, *, check: bool = True) -> str | None:
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            check=False,
        )
    except FileNotFoundError:
        raise UsageError("git is not installed (archive, restore and compare need it)") from None
    if proc.returncode != 0:
        if check:
            message = (proc.stderr.strip().splitlines() or ["failed"])[-1]
            raise UsageError(f"git {args[0]}: {message}")
        return None
    return proc.stdout


def is_repository(cwd: Path | None = None) -> bool:
    out = _git(["rev-parse", "--is-inside-work-tree"], cwd, check=False)
    return out is not None and out.strip() == "true"


def toplevel(cwd: Path | None = None) -> Path | None:
    out = _git(["rev-parse", "--show-toplevel"], cwd, check=False)
    return Path(out.strip()) if out else None


def current_revision(cwd: Path | None = None) -> str:
    """`git rev-parse HEAD`, or a UsageError saying why there is none."""
    here = cwd or Path.cwd()
    if not is_repository(cwd):
        raise UsageError(f"{here} is not in a git repository; pass the revision explicitly")
    out = _git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], cwd, check=False)
    if not out:
        raise UsageError(f"{here}: the git repository has no commits yet; pass the revision")
    return out.strip()


def resolve(revision: str, cwd: Path | None = None) -> str | None:
    """The commit SHA a revision name stands for, or None when git does not know it."""
    if revision.startswith("-"):
        return None
    out = _git(["rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"], cwd, check=False)
    return out.strip() if out else None


def ancestry(revision: str, cwd: Path | None = None) -> list[str]:
    """`git rev-list <revision>`: the revision and its ancestors, newest first.

    Outside a repository, or for a revision git does not know, just `[revision]` (an archive
    may still exist under that name).
    """
    if revision.startswith("-"):
        raise UsageError(f"not a revision: {revision!r}")
    out = _git(["rev-list", revision, "--"], cwd, check=False)
    if not out:
        return [revision]
    revs = out.split()
    if revs and revs[0] != revision and not revision.startswith(revs[0]):
        # a branch or tag name: keep the name too, archives may be stored under it
        revs.insert(0, revision)
    return revs


def diff(base: str, head: str, paths: list[str], cwd: Path) -> str | None:
    """`git diff base head -- paths`, or None when git cannot answer (unknown revisions...)."""
    if not paths or base.startswith("-") or head.startswith("-"):
        return None
    out = _git(["diff", "--no-color", "--no-ext-diff", base, head, "--", *paths], cwd, check=False)
    return out or None


def require_revision(revision: str, cwd: Path | None = None) -> str:
    sha = resolve(revision, cwd)
    if sha is None:
        raise NotFoundError(f"git does not know revision {revision!r}")
    return sha
