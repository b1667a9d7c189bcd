"""The two distributions: the agent alone in an app's environment, the tool isolated, both working.

- the agent distribution lists exactly the import closure of the agent and the pytest plugin;
- a fresh venv with only the agent wheel holds orjson and pyyaml and nothing that can clash with
  an app's pins, and `pytest --trace-record` records the example shop there;
- a venv with the tool wheel runs every command (tests/packaging/smoke.py) on those recordings;
- a command whose library is missing names the package to install.
"""

from __future__ import annotations

import ast
import zipfile
from pathlib import Path

import pytest
import tomllib

from tests.packaging.conftest import ROOT, bin_dir, wheel
from tests.packaging.smoke import smoke

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

AGENT_ROOTS = ("tracetool/agent", "pytest_tracetool")
NEVER_IN_APP = {"pydantic", "pydantic-core", "starlette", "attrs", "cattrs", "pillow", "mcp"}


def _module_file(name: str) -> Path | None:
    path = ROOT.joinpath(*name.split("."))
    if (path / "__init__.py").exists():
        return path / "__init__.py"
    if path.with_suffix(".py").exists():
        return path.with_suffix(".py")
    return None


def _optional_imports(tree: ast.Module) -> set[int]:
    """ids of the import statements inside a `try` whose handler catches ImportError."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
            for h in node.handlers
        ):
            found.update(
                id(stmt) for stmt in node.body if isinstance(stmt, (ast.Import, ast.ImportFrom))
            )
    return found


def agent_closure() -> set[str]:
    """Every tracetool / pytest_tracetool module the agent and the plugin import, at any depth."""
    todo = []
    for root in AGENT_ROOTS:
        for file in (ROOT / root).rglob("*.py"):
            parts = list(file.relative_to(ROOT).with_suffix("").parts)
            todo.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        file = _module_file(name)
        if name in seen or file is None:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        package = parts if file.name == "__init__.py" else parts[:-1]
        tree = ast.parse(file.read_text(encoding="utf-8"))
        optional = _optional_imports(tree)
        for node in ast.walk(tree):
            if id(node) in optional:
                continue  # `try: import x / except ImportError:` — the tool's, not needed here
            if isinstance(node, ast.Import):
                todo += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(
                        [*package[: len(package) - node.level + 1], *filter(None, [base])]
                    )
                todo += [base, *(f"{base}.{a.name}" for a in node.names)]
    return {m for m in seen if m.split(".")[0] in ("tracetool", "pytest_tracetool")}


def test_agent_distribution_lists_exactly_the_agent_closure() -> None:
    cfg = tomllib.loads((ROOT / "packages/agent/pyproject.toml").read_text())
    listed_packages = set(cfg["tool"]["setuptools"]["packages"])
    listed = set(cfg["tool"]["setuptools"]["py-modules"])
    closure = agent_closure()
    in_packages = {
        m for m in closure if any(m == p or m.startswith(p + ".") for p in listed_packages)
    }
    package_inits = {".".join(m.split(".")[:i]) for m in listed for i in range(1, m.count(".") + 1)}
    assert closure - in_packages - package_inits == listed, (
        "packages/agent/pyproject.toml py-modules must be the agent's import closure"
    )
    assert cfg["project"]["dependencies"] == ["orjson>=3.9", "pyyaml>=6.0"]
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert tool["version"] == cfg["project"]["version"]
    assert f"tracetool-agent=={cfg['project']['version']}" in tool["dependencies"]
    # the C accelerator of stats is the tool's alone: the agent never imports it
    assert not {"tracetool._speedups", "tracetool.stats._scan"} & closure


def test_wheels_share_no_file(wheels: Path) -> None:
    agent = set(zipfile.ZipFile(wheel(wheels, "tracetool_agent")).namelist())
    tool = set(zipfile.ZipFile(wheel(wheels, "tracetool")).namelist())
    files = {n for n in agent | tool if ".dist-info/" not in n}
    assert not {n for n in agent & tool if ".dist-info/" not in n}
    assert "tracetool-agent.pth" in agent and "tracetool/agent/recorder.py" in agent
    assert "tracetool/cli/__init__.py" in tool and "tracetool_daemon/ui/index.html" in tool
    assert "tracetool/__init__.py" in agent and "tracetool/__init__.py" not in tool
    # the optional C accelerator (built here: the test machines have a compiler), tool only
    assert any(n.startswith("tracetool/_speedups.") for n in tool), sorted(tool)
    assert not any("_speedups" in n for n in agent)
    # together they hold every module of the tree
    sources = {
        str(p.relative_to(ROOT)).replace("daemon/", "tracetool_daemon/", 1)
        for base in ("tracetool", "daemon", "pytest_tracetool")
        for p in (ROOT / base).rglob("*.py")
    }
    assert sources <= files, sorted(sources - files)


def test_agent_only_venv_has_nothing_that_clashes_and_records(
    agent_env: Path, recorded_shop: Path
) -> None:
    listing = (agent_env / "pip-list-agent-only.txt").read_text().lower().replace("_", "-")
    names = {line.split("==")[0] for line in listing.split()}
    assert names - {"pip", "setuptools"} == {"tracetool-agent", "orjson", "pyyaml"}, names
    assert not names & NEVER_IN_APP
    recordings = sorted((recorded_shop / "tmp" / "trace" / "pytest").glob("*.trace.json"))
    assert len(recordings) == 13, recordings


# dozens of processes, each a cold start: allow for a loaded machine (default 300 s)
@pytest.mark.timeout(900)
def test_tool_install_runs_every_command(tool_env: Path, shop_copy: Path) -> None:
    smoke(
        [str(bin_dir(tool_env) / "tracetool")],
        [str(bin_dir(tool_env) / "tracetool-lsp")],
        shop_copy,
    )


def test_a_missing_library_names_the_package(capsys: pytest.CaptureFixture[str]) -> None:
    import click

    from tracetool.cli.common import run_cli

    @click.group()
    def group() -> None:
        pass

    @group.command()
    def png() -> None:
        raise ModuleNotFoundError("No module named 'PIL'", name="PIL")

    with pytest.raises(SystemExit) as exit_info:
        run_cli(group, ["png"])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert "internal error" not in err
    assert "the Python package pillow is not installed in tracetool's environment" in err
