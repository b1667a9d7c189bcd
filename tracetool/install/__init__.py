"""`tracetool install`: detect a Python project and configure the agent in it.

The steps are pure functions over the project directory so the CLI can show each one and ask
before it writes anything:

- `detect(root)` → `Project`: type (pip, poetry, uv, pdm, pipenv), manifest and lock file, web
  frameworks, git remote, Python runtime, candidate packages to record.
- `plan(project)` → `Plan`: the edits, each a `FileEdit(path, before, after, why)`:
  trace.yml (only if absent), tracetool as a *development* dependency (never a production one),
  and the test configuration (`trace_record = true` for pytest) so the agent runs during tests.
- `apply(plan)` writes the edits atomically; `validate(project)` runs the project's Python with
  `TRACETOOL=true` to prove the agent loads and the configured packages import.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tracetool.trace.document import atomic_write_bytes

DEV_REQUIREMENT = "tracetool"
_SKIP = {"tests", "test", "docs", "build", "dist", "node_modules", "venv", "examples", "scripts"}
_FRAMEWORKS = ("flask", "django", "fastapi", "starlette")


@dataclass(frozen=True)
class Project:
    root: Path
    type: str  # pip | poetry | uv | pdm | pipenv
    manifest: Path | None
    lock_file: Path | None
    frameworks: tuple[str, ...]
    git_remote: str
    python: str
    python_version: str
    packages: tuple[str, ...]


@dataclass(frozen=True)
class FileEdit:
    path: Path
    before: str | None  # None: the file is new
    after: str
    why: str


@dataclass(frozen=True)
class Plan:
    project: Project
    edits: tuple[FileEdit, ...] = field(default_factory=tuple)

    @property
    def changed_files(self) -> list[Path]:
        return [e.path for e in self.edits]


def _run(args: list[str], cwd: Path, timeout: float = 10) -> str:
    try:
        out = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def project_python(root: Path) -> str:
    """The interpreter the project runs with: its active or local virtualenv, else ours."""
    env = os.environ.get("VIRTUAL_ENV")
    candidates = [Path(env)] if env else []
    candidates += [root / ".venv", root / "venv"]
    for venv in candidates:
        python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
        if python.exists():
            return str(python)
    return sys.executable


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def detect(root: Path) -> Project:
    root = root.resolve()
    pyproject = root / "pyproject.toml"
    text = _read(pyproject)
    lock: Path | None = None
    manifest: Path | None
    if (root / "poetry.lock").exists() or "[tool.poetry" in text:
        kind, manifest, lock = "poetry", pyproject, root / "poetry.lock"
    elif (root / "uv.lock").exists() or "[tool.uv" in text:
        kind, manifest, lock = "uv", pyproject, root / "uv.lock"
    elif (root / "pdm.lock").exists() or "[tool.pdm" in text:
        kind, manifest, lock = "pdm", pyproject, root / "pdm.lock"
    elif (root / "Pipfile").exists():
        kind, manifest, lock = "pipenv", root / "Pipfile", root / "Pipfile.lock"
    else:
        kind = "pip"
        manifest = next(
            (
                root / n
                for n in ("requirements-dev.txt", "requirements.txt", "pyproject.toml")
                if (root / n).exists()
            ),
            None,
        )
    if lock is not None and not lock.exists():
        lock = None
    deps_text = " ".join(
        _read(p).lower()
        for p in (
            pyproject,
            root / "requirements.txt",
            root / "requirements-dev.txt",
            root / "Pipfile",
        )
    )
    frameworks = tuple(f for f in _FRAMEWORKS if re.search(rf"(^|[^a-z]){f}([^a-z]|$)", deps_text))
    python = project_python(root)
    version = _run([python, "-c", "import platform; print(platform.python_version())"], root)
    return Project(
        root=root,
        type=kind,
        manifest=manifest,
        lock_file=lock,
        frameworks=frameworks,
        git_remote=_run(["git", "remote", "get-url", "origin"], root) or "(none)",
        python=python,
        python_version=version or "unknown",
        packages=tuple(find_packages(root)),
    )


def find_packages(root: Path) -> list[str]:
    """Top-level importable packages of the project (src/ layout too), excluding tests."""
    found: list[str] = []
    for base in (root / "src", root):
        if not base.is_dir():
            continue
        for child in sorted(base.iterdir()):
            if (
                child.is_dir()
                and (child / "__init__.py").exists()
                and child.name not in _SKIP
                and not child.name.startswith((".", "_"))
                and child.name.isidentifier()
            ):
                found.append(child.name)
        if found:
            break
    if not found and (root / "manage.py").exists():
        found = [p.parent.name for p in sorted(root.glob("*/settings.py"))]
    return found


def trace_yml(project: Project) -> str:
    lines = [f"name: {project.root.name}", "trace_dir: tmp/trace", "packages:"]
    packages = project.packages or ("app",)
    lines += [f"  - path: {p}" for p in packages]
    return "\n".join(lines) + "\n"


def _add_dev_dependency(project: Project) -> FileEdit | None:
    root = project.root
    pyproject = root / "pyproject.toml"
    if project.type == "pipenv":
        before = _read(root / "Pipfile")
        if re.search(r"^tracetool\s*=", before, re.M):
            return None
        if "[dev-packages]" in before:
            after = before.replace("[dev-packages]\n", '[dev-packages]\ntracetool = "*"\n', 1)
        else:
            after = before.rstrip("\n") + '\n\n[dev-packages]\ntracetool = "*"\n'
        return FileEdit(root / "Pipfile", before, after, "tracetool as a development package")
    if project.type == "poetry":
        before = _read(pyproject)
        if re.search(r"^tracetool\s*=", before, re.M):
            return None
        header = "[tool.poetry.group.dev.dependencies]"
        if header in before:
            after = before.replace(header + "\n", f'{header}\ntracetool = "*"\n', 1)
        else:
            after = before.rstrip("\n") + f'\n\n{header}\ntracetool = "*"\n'
        return FileEdit(pyproject, before, after, "tracetool in the dev dependency group")
    dev_req = root / "requirements-dev.txt"
    if project.type == "pip" and (dev_req.exists() or not pyproject.exists()):
        before_text = _read(dev_req) if dev_req.exists() else None
        existing = before_text or ""
        if re.search(r"^tracetool\b", existing, re.M):
            return None
        prefix = existing if not existing or existing.endswith("\n") else existing + "\n"
        if not existing and (root / "requirements.txt").exists():
            prefix = "-r requirements.txt\n"
        return FileEdit(
            dev_req,
            before_text,
            prefix + DEV_REQUIREMENT + "\n",
            "tracetool as a development requirement",
        )
    # PEP 735 dependency groups in pyproject.toml (uv, pdm, pip >= 25.1)
    before = _read(pyproject)
    if re.search(r"[\"']tracetool[\"'\s<>=~!;\[]", before):
        return None
    match = re.search(r"^\[dependency-groups\]\s*\n", before, re.M)
    if match:
        dev = re.search(r"^dev\s*=\s*\[", before[match.end() :], re.M)
        if dev:
            at = match.end() + dev.end()
            after = before[:at] + '\n    "tracetool",' + before[at:]
        else:
            after = before[: match.end()] + 'dev = ["tracetool"]\n' + before[match.end() :]
    else:
        after = before.rstrip("\n") + '\n\n[dependency-groups]\ndev = ["tracetool"]\n'
    return FileEdit(pyproject, before, after, "tracetool in the dev dependency group")


def _enable_in_tests(project: Project, pending: dict[Path, str]) -> FileEdit | None:
    """`trace_record = true` in the project's pytest configuration."""
    root = project.root
    for name, header in (
        ("pytest.ini", "[pytest]"),
        ("pyproject.toml", "[tool.pytest.ini_options]"),
        ("tox.ini", "[pytest]"),
        ("setup.cfg", "[tool:pytest]"),
    ):
        path = root / name
        before = pending.get(path, _read(path))
        if header in before:
            if re.search(r"^trace_record\s*=", before, re.M):
                return None
            # TOML needs a quoted value for pytest's ini-style option; ini files take it bare
            line = 'trace_record = "true"' if name == "pyproject.toml" else "trace_record = true"
            after = before.replace(header + "\n", f"{header}\n{line}\n", 1)
            return FileEdit(
                path,
                _read(path) if path.exists() else None,
                after,
                "record each test with the pytest plugin",
            )
    path = root / "pyproject.toml"
    if path.exists() or path in pending:
        before = pending.get(path, _read(path))
        after = before.rstrip("\n") + '\n\n[tool.pytest.ini_options]\ntrace_record = "true"\n'
        return FileEdit(path, _read(path), after, "record each test with the pytest plugin")
    return FileEdit(
        root / "pytest.ini",
        None,
        "[pytest]\ntrace_record = true\n",
        "record each test with the pytest plugin",
    )


def plan(project: Project) -> Plan:
    edits: list[FileEdit] = []
    config = project.root / "trace.yml"
    if not config.exists():
        edits.append(FileEdit(config, None, trace_yml(project), "what the agent records"))
    dep = _add_dev_dependency(project)
    if dep is not None:
        edits.append(dep)
    pending = {e.path: e.after for e in edits}
    tests = _enable_in_tests(project, pending)
    if tests is not None:
        if tests.path in pending:  # fold into the earlier edit of the same file
            first = next(e for e in edits if e.path == tests.path)
            edits[edits.index(first)] = FileEdit(
                first.path, first.before, tests.after, f"{first.why}; {tests.why}"
            )
        else:
            edits.append(tests)
    return Plan(project, tuple(edits))


def apply(plan: Plan) -> list[Path]:
    for edit in plan.edits:
        atomic_write_bytes(edit.path, edit.after.encode("utf-8"))
    return plan.changed_files


def lock_command(project: Project) -> list[str] | None:
    """The command that refreshes the project's lock file, if its tool is installed."""
    commands = {
        "poetry": ["poetry", "lock"],
        "uv": ["uv", "lock"],
        "pdm": ["pdm", "lock"],
        "pipenv": ["pipenv", "lock"],
    }
    cmd = commands.get(project.type)
    if cmd is None or project.lock_file is None or shutil.which(cmd[0]) is None:
        return None
    return cmd


_VALIDATE = """
import importlib.util, sys
try:
    import tracetool.agent
    from tracetool.config import load_config
except ImportError as exc:
    print("missing: " + str(exc)); sys.exit(3)
cfg = load_config(required=True)
missing = [p.path for p in cfg.packages if importlib.util.find_spec(p.path.split(".")[0]) is None]
print("packages: " + ",".join(p.path for p in cfg.packages))
if missing:
    print("unimportable: " + ",".join(missing)); sys.exit(4)
"""


@dataclass(frozen=True)
class Validation:
    ok: bool
    message: str


def validate(project: Project) -> Validation:
    """Run the project's Python with TRACETOOL=true and check the agent and packages load."""
    env = {
        **os.environ,
        "TRACETOOL": "true",
        "PYTHONPATH": os.pathsep.join(
            [str(project.root), str(project.root / "src"), os.environ.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep),
    }
    try:
        out = subprocess.run(
            [project.python, "-c", _VALIDATE],
            cwd=project.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Validation(False, f"could not run {project.python}: {exc}")
    lines = (out.stdout + out.stderr).strip().splitlines()
    last = lines[-1] if lines else ""
    if out.returncode == 0:
        return Validation(True, f"the agent loads in {project.python} ({last})")
    if out.returncode == 3:
        return Validation(
            False,
            f"tracetool is not installed for {project.python}: install the "
            "development dependencies, then run `tracetool install` again",
        )
    if out.returncode == 4:
        return Validation(
            False, f"trace.yml names packages that do not import: {last.split(': ', 1)[-1]}"
        )
    return Validation(False, f"the agent failed to load: {last}")
