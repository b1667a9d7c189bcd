"""Built distributions and the environments they install into, made once per test session.

Wheels of both distributions, a venv holding only the agent distribution (plus what the example
shop needs to run its tests) and a venv holding the tool are shared by every pytest-xdist worker:
each is built once under a file lock in the session's shared temporary directory.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PIP = ["-m", "pip", "install", "-q", "--disable-pip-version-check"]


def bin_dir(env: Path) -> Path:
    return env / ("Scripts" if os.name == "nt" else "bin")


def python_of(env: Path) -> str:
    return str(bin_dir(env) / ("python.exe" if os.name == "nt" else "python"))


def sh(cmd: list[str], cwd: Path | None = None, timeout: float = 600) -> str:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    out = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert out.returncode == 0, (
        f"{' '.join(cmd)} exited {out.returncode}:\n{out.stdout}{out.stderr}"
    )
    return out.stdout


@pytest.fixture(scope="session")
def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # one directory for every worker of this session
    path = base / "packaging"
    path.mkdir(exist_ok=True)
    return path


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def once(shared: Path, name: str, make: Callable[[Path], None]) -> Path:
    """`shared/name`, made by `make` by the first worker that asks."""
    target = shared / name
    with _locked(target):
        if not (target / ".done").exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            make(target)
            (target / ".done").touch()
    return target


@pytest.fixture(scope="session")
def wheels(shared_dir: Path) -> Path:
    """Wheels of tracetool-agent and tracetool, built from this tree."""

    def build(out: Path) -> None:
        for source in (ROOT / "packages" / "agent", ROOT):
            sh(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "wheel",
                    "-q",
                    "--no-deps",
                    "-w",
                    str(out),
                    str(source),
                ]
            )

    return once(shared_dir, "wheels", build)


def wheel(wheels: Path, dist: str) -> Path:
    (found,) = wheels.glob(f"{dist}-*.whl")
    return found


def make_venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=True).create(path)
    return path


@pytest.fixture(scope="session")
def agent_env(wheels: Path, shared_dir: Path) -> Path:
    """A venv with only the agent wheel; `pip-list-agent-only.txt` is its package list then."""

    def make(env: Path) -> None:
        make_venv(env)
        sh([python_of(env), *PIP, str(wheel(wheels, "tracetool_agent"))])
        listing = sh([python_of(env), "-m", "pip", "list", "--format=freeze"])
        (env / "pip-list-agent-only.txt").write_text(listing)
        # what the example shop's tests (and tests/install's Django project) need besides it
        sh([python_of(env), *PIP, "pytest", "flask", "requests", "django", "pytest-django"])

    return once(shared_dir, "agent-env", make)


@pytest.fixture(scope="session")
def recorded_shop(agent_env: Path, shared_dir: Path) -> Path:
    """The example shop with its tests recorded by the agent-only venv (13 recordings)."""

    def make(project: Path) -> None:
        shutil.copytree(ROOT / "examples" / "shop", project, dirs_exist_ok=True)
        shutil.rmtree(project / "tmp", ignore_errors=True)
        sh(
            [
                python_of(agent_env),
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:django",
                "--trace-record",
                "tests",
            ],
            cwd=project,
        )

    return once(shared_dir, "shop", make)


@pytest.fixture(scope="session")
def tool_env(wheels: Path, shared_dir: Path) -> Path:
    """A venv with the tool installed from its wheel (the agent wheel from the same folder)."""

    def make(env: Path) -> None:
        make_venv(env)
        sh([python_of(env), *PIP, "--find-links", str(wheels), str(wheel(wheels, "tracetool"))])

    return once(shared_dir, "tool-env", make)


@pytest.fixture
def shop_copy(recorded_shop: Path, tmp_path: Path) -> Path:
    project = tmp_path / "shop"
    shutil.copytree(recorded_shop, project, ignore=shutil.ignore_patterns(".done", "home"))
    return project
