"""Recording metadata: app, language, client, recorder, git, frameworks.

`base_metadata(recorder_name, recorder_type, name=None)` builds a fresh dict each call. Git facts
come from the `git` command run in the project root with short timeouts, once per process
(cached); no git, no repository, a hung or failing git — each simply leaves `git` out. Nothing
here raises into the app. Frameworks discovered by integrations are registered with
`add_framework(name, version)` and appear in every later recording.
"""

from __future__ import annotations

import os
import platform
import subprocess
import threading
from typing import Any

from tracetool import __version__
from tracetool.agent.config import active_config
from tracetool.routes import without_credentials

CLIENT_URL = "https://github.com/tracetool/tracetool"
GIT_TIMEOUT = 2.0  # seconds per git command
MAX_STATUS_LINES = 100

_git_lock = threading.Lock()
_git_cache: dict[str, Any] | None = None
_frameworks: dict[str, str] = {}


def _git(args: list[str], cwd: str) -> str | None:
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout


def git_info(root: str | None = None) -> dict[str, Any]:
    """`{repository, branch, commit, status}` of the project (cached; `{}` when unavailable)."""
    global _git_cache
    if _git_cache is not None:
        return _git_cache
    with _git_lock:
        if _git_cache is not None:
            return _git_cache
        cwd = root or str(active_config().root)
        info: dict[str, Any] = {}
        commit = _git(["rev-parse", "HEAD"], cwd)
        if commit:
            remote = _git(["config", "--get", "remote.origin.url"], cwd) or ""
            info["repository"] = without_credentials(remote.strip())
            branch = (_git(["rev-parse", "--abbrev-ref", "HEAD"], cwd) or "").strip()
            info["branch"] = branch
            info["commit"] = commit.strip()
            status = _git(["status", "--porcelain"], cwd)
            lines = [line for line in (status or "").splitlines() if line.strip()]
            info["status"] = lines[:MAX_STATUS_LINES]
        _git_cache = info
        return info


def reset_git_cache() -> None:
    global _git_cache
    with _git_lock:
        _git_cache = None


def add_framework(name: str, version: str | None = None) -> None:
    """Record that the app uses `name` (e.g. flask 3.0.2); listed in later recordings' metadata."""
    _frameworks[name] = version or ""


def frameworks() -> list[dict[str, str]]:
    return [{"name": n, "version": v} if v else {"name": n} for n, v in sorted(_frameworks.items())]


def base_metadata(recorder_name: str, recorder_type: str, name: str | None = None) -> dict:
    """The metadata every recording starts with (see module doc)."""
    try:
        app = active_config().name
    except Exception:  # active_config already reports problems; never fail here
        app = os.path.basename(os.getcwd())
    md: dict[str, Any] = {}
    if name:
        md["name"] = name
    md["app"] = app
    md["language"] = {
        "name": "python",
        "engine": platform.python_implementation(),
        "version": platform.python_version(),
    }
    md["client"] = {"name": "tracetool", "url": CLIENT_URL, "version": __version__}
    md["recorder"] = {"name": recorder_name, "type": recorder_type}
    md["frameworks"] = frameworks()
    try:
        git = git_info()
    except Exception:
        git = {}
    if git:
        md["git"] = {**git, "status": list(git.get("status", []))}
    return md
