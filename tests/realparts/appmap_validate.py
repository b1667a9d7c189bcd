"""AppMap's own validator (@appland/appmap-validate, npm) on the files we write.

Found in TRACETOOL_APPMAP_VALIDATE_DIR, else ~/.cache/tracetool-e2e/appmap-validate (scripts/test
installs it there on CI), else /tmp/peer (shared/README.md's peer install). Off CI it is installed
with npm on first use when node and npm are present.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from tests.realparts import need

PACKAGE = "@appland/appmap-validate@2"
HERE = Path(__file__).resolve().parent


def _dirs() -> list[Path]:
    env = os.environ.get("TRACETOOL_APPMAP_VALIDATE_DIR")
    base = [Path(env)] if env else []
    return [*base, Path.home() / ".cache" / "tracetool-e2e" / "appmap-validate", Path("/tmp/peer")]


def _lib(folder: Path) -> Path:
    return folder / "node_modules" / "@appland" / "appmap-validate" / "lib" / "index.js"


def validator_lib() -> Path:
    """The validator's lib/index.js; installs it off CI; skips (or fails on CI) without it."""
    node = shutil.which("node")
    if not node:
        need("node", "AppMap's validator runs on Node.js")
    for folder in _dirs():
        if _lib(folder).is_file():
            return _lib(folder)
    npm = shutil.which("npm")
    if not npm:
        need("npm", "needed to install @appland/appmap-validate")
    target = _dirs()[0]
    target.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [npm, "install", "--prefix", str(target), "--no-audit", "--no-fund", PACKAGE],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0 or not _lib(target).is_file():
        need("@appland/appmap-validate", f"npm install failed: {result.stderr[-300:]}")
    return _lib(target)


def validate_files(paths: Iterable[Path]) -> dict[Path, str | None]:
    """Each file's validator error, or None when AppMap's validator accepts it."""
    files = [Path(p).resolve() for p in paths]
    if not files:
        return {}
    lib = validator_lib()
    node = shutil.which("node") or "node"
    out: dict[Path, str | None] = {}
    for start in range(0, len(files), 200):
        chunk = files[start : start + 200]
        result = subprocess.run(
            [node, str(HERE / "validate_many.js"), str(lib), *map(str, chunk)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if result.returncode != 0:
            raise RuntimeError(f"validator did not run: {result.stderr[-500:]}")
        out.update({Path(k): v for k, v in json.loads(result.stdout).items()})
    return out


def assert_valid(paths: Iterable[Path]) -> int:
    """Asserts AppMap's validator accepts every file; returns how many were checked."""
    results = validate_files(paths)
    bad = {p.name: e for p, e in results.items() if e}
    assert not bad, "AppMap's validator rejects:\n" + "\n".join(
        f"  {name}: {err}" for name, err in sorted(bad.items())
    )
    return len(results)
