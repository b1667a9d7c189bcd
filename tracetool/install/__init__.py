"""`tracetool install`: detect a Python project and configure the agent in it.

The steps are pure functions over the project directory so the CLI can show each one and ask
before it writes anything:

- `detect(root)` → `Project`: type (pip, poetry, uv, pdm, pipenv), manifest and lock file, web
  frameworks, Django settings module, git remote, Python runtime, candidate packages to record.
  A directory that is not a Python project raises `ConfigError` before anything is written.
- `plan(project)` → `Plan`: the edits, each a `FileEdit(path, before, after, why)`:
  trace.yml (only if absent), tracetool as a *development* dependency (never a production one),
  and the test configuration (`trace_record = true` for pytest) so the agent runs during tests.
- `apply(plan)` writes the edits atomically; `validate(project)` runs the project's Python with
  `TRACETOOL=true` to prove the agent loads and the configured packages import, then runs ONE
  test with recording and fails loudly if no recording was written.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tracetool.errors import ConfigError
from tracetool.trace.document import atomic_write_bytes

# The app's environment gets only the agent distribution (packages/agent): never the tool, whose
# server dependencies (pydantic, starlette, ...) could clash with the app's pins.
DEV_REQUIREMENT = "tracetool-agent"
DJANGO_REQUIREMENT = "pytest-django"
# files where projects keep development requirements, most specific first
_DEV_REQUIREMENT_FILES = (
    "requirements-dev.txt",
    "requirements-test.txt",
    "requirements_dev.txt",
    "requirements_test.txt",
    "dev-requirements.txt",
    "test-requirements.txt",
    "requirements/dev.txt",
    "requirements/test.txt",
    "requirements/development.txt",
)
_PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "Pipfile", "manage.py")
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
    django_settings: str | None = None
    trace_dir: str = "tmp/trace"


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


def _is_project(root: Path) -> bool:
    return any((root / n).exists() for n in _PROJECT_FILES) or any(root.glob("requirements*.txt"))


def django_settings_module(root: Path) -> str | None:
    """The settings module manage.py names (else the one `*/settings.py`), or None: not Django."""
    manage = root / "manage.py"
    if not manage.exists():
        return None
    match = re.search(r"DJANGO_SETTINGS_MODULE['\"]\s*,\s*['\"]([\w.]+)['\"]", _read(manage))
    if match:
        return match.group(1)
    found = sorted(root.glob("*/settings.py")) + sorted(root.glob("*/settings/__init__.py"))
    if not found:
        return None
    rel = found[0].relative_to(root).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _configured_trace_dir(root: Path) -> str:
    match = re.search(
        r"^trace_dir:\s*['\"]?([^'\"#\n]+?)['\"]?\s*(#.*)?$", _read(root / "trace.yml"), re.M
    )
    return match.group(1).strip() if match else "tmp/trace"


def detect(root: Path) -> Project:
    root = root.resolve()
    if not _is_project(root):
        raise ConfigError(
            f"{root} is not a Python project (no pyproject.toml, setup.py, setup.cfg, "
            "requirements*.txt, Pipfile or manage.py): run `tracetool install` in the top-level "
            "folder of your project; nothing was written"
        )
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
                for n in (*_DEV_REQUIREMENT_FILES, "requirements.txt", "pyproject.toml")
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
            *(root / n for n in _DEV_REQUIREMENT_FILES),
            root / "Pipfile",
        )
    )
    frameworks = tuple(f for f in _FRAMEWORKS if re.search(rf"(^|[^a-z]){f}([^a-z]|$)", deps_text))
    settings = django_settings_module(root)
    if settings and "django" not in frameworks:
        frameworks = ("django", *frameworks)
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
        django_settings=settings,
        trace_dir=_configured_trace_dir(root),
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
    lines = [f"name: {project.root.name}", f"trace_dir: {project.trace_dir}", "packages:"]
    packages = project.packages or ("app",)
    lines += [f"  - path: {p}" for p in packages]
    return "\n".join(lines) + "\n"


def _requirements(project: Project) -> list[str]:
    reqs = [DEV_REQUIREMENT]
    if project.django_settings:
        reqs.append(DJANGO_REQUIREMENT)
    return reqs


def _has_requirement(text: str, name: str) -> bool:
    return (
        re.search(rf"(^|[\"'\s])({re.escape(name)})\s*([\"'<>=~!;\[,]|$)", text, re.M) is not None
    )


def _pyproject_is_project(text: str) -> bool:
    """Whether pyproject.toml declares a project (not only tool settings such as ruff's)."""
    return (
        re.search(r"^\[(project|tool\.poetry|dependency-groups|tool\.pdm)\]", text, re.M)
        is not None
    )


def _append_requirements(path: Path, names: list[str], include_main: bool) -> FileEdit | None:
    before = _read(path) if path.exists() else None
    existing = before or ""
    missing = [n for n in names if not re.search(rf"^{re.escape(n)}\b", existing, re.M | re.I)]
    if not missing:
        return None
    prefix = existing if not existing or existing.endswith("\n") else existing + "\n"
    if before is None and include_main:
        prefix = "-r requirements.txt\n"
    why = "development requirements: " + ", ".join(missing)
    return FileEdit(path, before, prefix + "\n".join(missing) + "\n", why)


def _toml_table_append(before: str, header: str, lines: list[str]) -> str:
    """Add `lines` at the top of TOML table `header`, creating the table at the end if absent."""
    match = re.search(rf"^{re.escape(header)}[ \t]*\n", before, re.M)
    if match:
        return (
            before[: match.end()] + "".join(line + "\n" for line in lines) + before[match.end() :]
        )
    return before.rstrip("\n") + f"\n\n{header}\n" + "".join(line + "\n" for line in lines)


def _dependency_group_append(before: str, names: list[str]) -> str:
    """PEP 735 `[dependency-groups] dev = [...]` (uv, pdm, pip >= 25.1)."""
    items = "".join(f'\n    "{n}",' for n in names)
    match = re.search(r"^\[dependency-groups\][ \t]*\n", before, re.M)
    if match:
        dev = re.search(r"^dev\s*=\s*\[", before[match.end() :], re.M)
        if dev:
            at = match.end() + dev.end()
            return before[:at] + items + before[at:]
        return before[: match.end()] + f"dev = [{items}\n]\n" + before[match.end() :]
    return before.rstrip("\n") + f"\n\n[dependency-groups]\ndev = [{items}\n]\n"


def _add_dev_dependency(project: Project) -> FileEdit | None:
    """The agent (and pytest-django for Django) where this project keeps its dev dependencies."""
    root = project.root
    names = _requirements(project)
    pyproject = root / "pyproject.toml"
    if project.type == "pipenv":
        before = _read(root / "Pipfile")
        missing = [n for n in names if not re.search(rf"^{re.escape(n)}\s*=", before, re.M)]
        if not missing:
            return None
        after = _toml_table_append(before, "[dev-packages]", [f'{n} = "*"' for n in missing])
        return FileEdit(
            root / "Pipfile", before, after, "development packages: " + ", ".join(missing)
        )
    text = _read(pyproject)
    if project.type == "poetry":
        missing = [n for n in names if not _has_requirement(text, n)]
        if not missing:
            return None
        header = "[tool.poetry.group.dev.dependencies]"
        if "[tool.poetry.dev-dependencies]" in text:  # the pre-1.2 spelling the project uses
            header = "[tool.poetry.dev-dependencies]"
        after = _toml_table_append(text, header, [f'{n} = "*"' for n in missing])
        return FileEdit(pyproject, text, after, "dev dependency group: " + ", ".join(missing))
    if project.type == "pdm" and "[tool.pdm.dev-dependencies]" in text:
        missing = [n for n in names if not _has_requirement(text, n)]
        if not missing:
            return None
        after = _dependency_list_append(text, "[tool.pdm.dev-dependencies]", missing)
        return FileEdit(pyproject, text, after, "pdm dev dependencies: " + ", ".join(missing))
    if project.type == "pip":
        # requirements files win: a pyproject.toml beside them may hold only tool settings
        dev_file = next((root / n for n in _DEV_REQUIREMENT_FILES if (root / n).exists()), None)
        has_requirements = (root / "requirements.txt").exists()
        if dev_file is not None or has_requirements or not _pyproject_is_project(text):
            target = dev_file or root / "requirements-dev.txt"
            return _append_requirements(target, names, include_main=has_requirements)
    missing = [n for n in names if not _has_requirement(text, n)]
    if not missing:
        return None
    after = _dependency_group_append(text, missing)
    return FileEdit(pyproject, text, after, "dev dependency group: " + ", ".join(missing))


def _dependency_list_append(before: str, header: str, names: list[str]) -> str:
    """`dev = [...]` inside table `header` (pdm's own dev-dependencies table)."""
    match = re.search(rf"^{re.escape(header)}[ \t]*\n", before, re.M)
    items = "".join(f'\n    "{n}",' for n in names)
    assert match is not None
    dev = re.search(r"^dev\s*=\s*\[", before[match.end() :], re.M)
    if dev:
        at = match.end() + dev.end()
        return before[:at] + items + before[at:]
    return before[: match.end()] + f"dev = [{items}\n]\n" + before[match.end() :]


def _pytest_lines(project: Project, toml: bool) -> list[tuple[str, str]]:
    """(key, line) pairs the pytest configuration needs."""
    q = (lambda v: f'"{v}"') if toml else (lambda v: v)
    lines = [("trace_record", f"trace_record = {q('true')}")]
    if project.django_settings:
        lines.append(
            ("DJANGO_SETTINGS_MODULE", f"DJANGO_SETTINGS_MODULE = {q(project.django_settings)}")
        )
        # Django's own test files are tests.py (pytest-django's documented setting)
        lines.append(("python_files", f"python_files = {q('tests.py test_*.py *_tests.py')}"))
    return lines


def _enable_in_tests(project: Project, pending: dict[Path, str]) -> FileEdit | None:
    """Recording on in the project's pytest configuration (with pytest-django's settings)."""
    root = project.root
    why = "record each test with the pytest plugin"
    if project.django_settings:
        why += f"; pytest-django with {project.django_settings}"
    for name, header in (
        ("pytest.ini", "[pytest]"),
        ("pyproject.toml", "[tool.pytest.ini_options]"),
        ("tox.ini", "[pytest]"),
        ("setup.cfg", "[tool:pytest]"),
    ):
        path = root / name
        before = pending.get(path, _read(path))
        if header in before:
            wanted = _pytest_lines(project, toml=name == "pyproject.toml")
            add = [line for key, line in wanted if not re.search(rf"^{key}\s*=", before, re.M)]
            if not add:
                return None
            after = _toml_table_append(before, header, add)
            return FileEdit(path, _read(path) if path.exists() else None, after, why)
    path = root / "pyproject.toml"
    if (path.exists() or path in pending) and _pyproject_is_project(pending.get(path, _read(path))):
        before = pending.get(path, _read(path))
        lines = [line for _, line in _pytest_lines(project, toml=True)]
        after = _toml_table_append(before, "[tool.pytest.ini_options]", lines)
        return FileEdit(path, _read(path), after, why)
    lines = [line for _, line in _pytest_lines(project, toml=False)]
    return FileEdit(root / "pytest.ini", None, "[pytest]\n" + "\n".join(lines) + "\n", why)


def _ignore_trace_dir(project: Project) -> FileEdit | None:
    """trace_dir in .gitignore: recordings are big and hold captured data."""
    path = project.root / ".gitignore"
    before = _read(path) if path.exists() else None
    entry = "/" + project.trace_dir.strip("/") + "/"
    existing = {line.strip().rstrip("/").lstrip("/") for line in (before or "").splitlines()}
    if project.trace_dir.strip("/") in existing or project.trace_dir.split("/")[0] in existing:
        return None
    text = before or ""
    if text and not text.endswith("\n"):
        text += "\n"
    after = text + f"# tracetool recordings (trace.yml trace_dir)\n{entry}\n"
    return FileEdit(path, before, after, "keep recordings out of git")


_DJANGO_RUNNER = "tracetool.agent.django_runner.TraceRunner"


def _django_test_runner(project: Project) -> FileEdit | None:
    """`python manage.py test` records one trace per test: TEST_RUNNER in the settings module."""
    if not project.django_settings:
        return None
    rel = Path(*project.django_settings.split("."))
    path = project.root / rel.with_suffix(".py")
    if not path.exists():
        path = project.root / rel / "__init__.py"
    before = _read(path)
    if not before or re.search(r"^TEST_RUNNER\s*=", before, re.M):
        return None  # a project with its own runner keeps it (README: recording unittest runs)
    after = before.rstrip("\n") + (
        "\n\n# tracetool: `python manage.py test` records one trace per test when the agent is\n"
        "# installed (TRACETOOL=false turns it off); added by `tracetool install`\n"
        f'TEST_RUNNER = "{_DJANGO_RUNNER}"\n'
    )
    return FileEdit(path, before, after, "record `python manage.py test`, one trace per test")


def plan(project: Project) -> Plan:
    edits: list[FileEdit] = []
    config = project.root / "trace.yml"
    if not config.exists():
        edits.append(FileEdit(config, None, trace_yml(project), "what the agent records"))
    for edit in (_add_dev_dependency(project), _ignore_trace_dir(project)):
        if edit is not None:
            edits.append(edit)
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
    runner = _django_test_runner(project)
    if runner is not None:
        edits.append(runner)
    return Plan(project, tuple(edits))


def apply(plan: Plan) -> list[Path]:
    for edit in plan.edits:
        atomic_write_bytes(edit.path, edit.after.encode("utf-8"))
    return plan.changed_files


def _locked_pdm_groups(lock_file: Path) -> list[str]:
    """The groups pdm.lock records (`[metadata] groups = [...]`): a plain `pdm lock` keeps them."""
    match = re.search(r"^groups\s*=\s*\[([^\]]*)\]", _read(lock_file), re.M)
    return re.findall(r"[\"']([^\"']+)[\"']", match.group(1)) if match else []


def lock_command(project: Project) -> list[str] | None:
    """The command that refreshes the project's lock file, if its tool is installed.

    Each keeps the versions already pinned and only adds what the new dev dependency needs:
    `uv lock` and Poetry 2's `poetry lock` do so by default, Poetry 1 needs `--no-update`, pdm
    `--update-reuse`. pdm locks only the groups its lock file records, so the dev group joins them
    when missing. (`pipenv lock` always re-resolves: it has no way to keep the pins.)
    """
    tools = {"poetry": "poetry", "uv": "uv", "pdm": "pdm", "pipenv": "pipenv"}
    tool = tools.get(project.type)
    if tool is None or project.lock_file is None:
        return None
    exe = shutil.which(tool)
    if exe is None:
        return None
    cmd = [tool, "lock"]
    if tool == "poetry":
        version = re.search(r"(\d+)\.\d+", _run([exe, "--version"], project.root, timeout=60))
        if version and int(version.group(1)) < 2:
            cmd.append("--no-update")
    elif tool == "pdm":
        cmd.append("--update-reuse")
        groups = _locked_pdm_groups(project.lock_file)
        if groups and "dev" not in groups:
            if "default" not in groups:
                cmd.append("--no-default")
            for group in [*(g for g in groups if g != "default"), "dev"]:
                cmd += ["-G", group]
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
from tracetool.agent import integrations
failed = integrations.self_check()
if failed:
    print("integrations: " + "; ".join(failed)); sys.exit(5)
"""


@dataclass(frozen=True)
class Validation:
    ok: bool
    message: str


def _env(project: Project) -> dict[str, str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(project.root), str(project.root / "src"), os.environ.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep),
    }
    env.pop("TRACETOOL", None)
    return env


def _load_check(project: Project) -> Validation:
    """The agent and the packages trace.yml names import in the project's Python."""
    try:
        out = subprocess.run(
            [project.python, "-c", _VALIDATE],
            cwd=project.root,
            env={**_env(project), "TRACETOOL": "true"},
            capture_output=True,
            text=True,
            timeout=120,
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
            f"{DEV_REQUIREMENT} is not installed for {project.python}: install the "
            "development dependencies, then run `tracetool install` again",
        )
    if out.returncode == 4:
        return Validation(
            False, f"trace.yml names packages that do not import: {last.split(': ', 1)[-1]}"
        )
    if out.returncode == 5:
        return Validation(
            False, f"an agent integration does not fit this project: {last.split(': ', 1)[-1]}"
        )
    return Validation(False, f"the agent failed to load: {last}")


def _first_test(project: Project) -> tuple[str | None, str]:
    """The node id of the project's first pytest test, or (None, why)."""
    try:
        out = subprocess.run(
            [project.python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
            cwd=project.root,
            env=_env(project),
            capture_output=True,
            text=True,
            timeout=300,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"could not run pytest with {project.python}: {exc}"
    for line in out.stdout.splitlines():
        if "::" in line and not line.startswith((" ", "<")):
            return line.strip(), ""
    tail = "\n".join((out.stdout + out.stderr).strip().splitlines()[-5:])
    return None, f"pytest collected no test (exit {out.returncode}):\n{tail}"


def record_one_test(project: Project) -> Validation:
    """Run the project's first test with recording on; at least one recording must appear."""
    node, why = _first_test(project)
    if node is None:
        return Validation(False, f"validation could not find a test to record: {why}")
    trace_dir = project.root / project.trace_dir
    before = {p: p.stat().st_mtime_ns for p in trace_dir.rglob("*.trace.json")}
    try:
        out = subprocess.run(
            [
                project.python,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "--trace-record",
                node,
            ],
            cwd=project.root,
            env=_env(project),
            capture_output=True,
            text=True,
            timeout=600,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Validation(False, f"could not run pytest with {project.python}: {exc}")
    written = [p for p in trace_dir.rglob("*.trace.json") if before.get(p) != p.stat().st_mtime_ns]
    if not written:
        tail = "\n".join((out.stdout + out.stderr).strip().splitlines()[-8:])
        return Validation(
            False,
            f"NOTHING WAS RECORDED: `pytest --trace-record {node}` wrote no recording under "
            f"{project.trace_dir} (pytest exit {out.returncode}):\n{tail}",
        )
    rel = written[0].relative_to(project.root)
    return Validation(True, f"recorded {node} into {rel}")


def validate(project: Project) -> Validation:
    """The agent loads in the project's Python, then one test runs with recording and is saved."""
    loaded = _load_check(project)
    if not loaded.ok:
        return loaded
    recorded = record_one_test(project)
    if not recorded.ok:
        return recorded
    return Validation(True, f"{loaded.message}; {recorded.message}")
