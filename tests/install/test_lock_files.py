"""`tracetool install` refreshes the lock file with the project's own tool: uv, poetry, pdm, pipenv.

Each tool is installed from PyPI into a venv of its own, once per session. Its fixture project
(a package and one test, in git) resolves against a PEP 503 index served on 127.0.0.1 as its only
source (tests/install/simple_index.py) with every proxy variable pointing at a closed port, so no
lock reaches the internet. The project depends on PyYAML and is locked first while the index
offers an older PyYAML; a newer one is then published, and `tracetool install --yes` must add
tracetool-agent to the dev group and the lock file while keeping the project's existing pin
(pipenv excepted: `pipenv lock` always re-resolves).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.install.simple_index import SimpleIndex, offline_env, serve
from tests.install.test_real_projects import (
    env_for,
    install_yes,
    last_commit_files,
    make,
    recordings,
)
from tests.packaging.conftest import PIP, bin_dir, make_venv, once, python_of, sh, wheel
from tests.realparts import need

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
PIP_DOWNLOAD = ["-m", "pip", "download", "-q", "--disable-pip-version-check"]


def _installed(
    shared_dir: Path, venv: str, name: str, build: Callable[[Path], None], what: str
) -> Path:
    try:
        exe = bin_dir(once(shared_dir, venv, build)) / name
    except (AssertionError, OSError, subprocess.SubprocessError) as exc:
        need(name, f"installing {what} from PyPI failed: {exc}")
    if not exe.exists():
        need(name, f"{exe} is missing after installing {what}")
    return exe


@pytest.fixture(scope="session")
def uv_exe(shared_dir: Path) -> Path:
    def build(env: Path) -> None:
        make_venv(env)
        sh([python_of(env), *PIP, "uv"])

    return _installed(shared_dir, "uv-env", "uv", build, "uv")


def _tool(shared_dir: Path, uv: Path, venv: str, name: str, *requirements: str) -> Path:
    """`name`'s executable, installed with `requirements` from PyPI into venv `venv` of its own
    (by uv: pip takes minutes for poetry's and pdm's dependencies on a busy 2-core machine)."""

    def build(env: Path) -> None:
        sh([str(uv), "venv", "-q", "--python", sys.executable, str(env)])
        sh([str(uv), "pip", "install", "-q", "--python", python_of(env), *requirements])

    return _installed(shared_dir, venv, name, build, " ".join(requirements))


@pytest.fixture(scope="session")
def poetry_exe(shared_dir: Path, uv_exe: Path) -> Path:
    return _tool(shared_dir, uv_exe, "poetry-env", "poetry", "poetry")


@pytest.fixture(scope="session")
def poetry1_exe(shared_dir: Path, uv_exe: Path) -> Path:
    """Poetry 1, still common, whose plain `poetry lock` moves every pin to the newest."""
    return _tool(shared_dir, uv_exe, "poetry1-env", "poetry", "poetry<2")


@pytest.fixture(scope="session")
def pdm_exe(shared_dir: Path, uv_exe: Path) -> Path:
    # pdm 2.29 asks for hishel>=1.4 without a ceiling, and fails on hishel 2 ("module 'hishel'
    # has no attribute 'SyncSqliteStorage'") as soon as it fetches anything
    return _tool(shared_dir, uv_exe, "pdm-env", "pdm", "pdm", "hishel[httpx2]>=1.4,<2")


@pytest.fixture(scope="session")
def pipenv_exe(shared_dir: Path, uv_exe: Path) -> Path:
    return _tool(shared_dir, uv_exe, "pipenv-env", "pipenv", "pipenv")


@pytest.fixture(scope="session")
def index_wheels(shared_dir: Path) -> Path:
    """The agent's dependencies as wheels for this Python: `base/` holds orjson and the PyYAML
    release before the newest, `newer/` the newest PyYAML."""

    def download(out: Path) -> None:
        base, newer = out / "base", out / "newer"
        sh([sys.executable, *PIP_DOWNLOAD, "--only-binary=:all:", "-d", str(newer), "pyyaml"])
        (latest,) = newer.glob("*.whl")
        version = latest.name.split("-")[1]
        sh(
            [
                sys.executable,
                *PIP_DOWNLOAD,
                "--only-binary=:all:",
                "--no-deps",
                "-d",
                str(base),
                "orjson",
                f"pyyaml>=6,<{version}",
            ]
        )

    try:
        return once(shared_dir, "index-wheels", download)
    except (AssertionError, OSError, subprocess.SubprocessError) as exc:
        need("orjson and PyYAML wheels", f"`pip download` failed: {exc}")


@pytest.fixture
def index(tmp_path: Path, wheels: Path, index_wheels: Path) -> Iterator[SimpleIndex]:
    """A loopback index offering tracetool-agent, orjson and the older PyYAML."""
    served = SimpleIndex(tmp_path / "index")
    served.publish(wheel(wheels, "tracetool_agent"), *(index_wheels / "base").glob("*.whl"))
    with serve(served):
        yield served


def locked_version(lock: str, project: str) -> str:
    """The version a TOML lock file (uv.lock, poetry.lock, pdm.lock) pins for `project`."""
    match = re.search(rf'^name = "{project}"\nversion = "([^"]+)"', lock, re.M)
    assert match is not None, lock
    return match.group(1)


def wheel_version(folder: Path, project: str) -> str:
    (found,) = (p for p in folder.glob("*.whl") if p.name.lower().startswith(project + "-"))
    return found.name.split("-")[1]


SHOP = {
    "shop/__init__.py": "import yaml\n\n\ndef load(text):\n    return yaml.safe_load(text)\n",
    "tests/test_shop.py": (
        "from shop import load\n\n\ndef test_load():\n    assert load('a: 1') == {'a': 1}\n"
    ),
}

POETRY = (
    '[tool.poetry]\nname = "shop"\nversion = "0.1.0"\ndescription = ""\n'
    'authors = ["t <t@e.st>"]\n\n[tool.poetry.dependencies]\npython = "^{py}"\n'
    'pyyaml = "*"\n\n[[tool.poetry.source]]\nname = "local"\nurl = "{url}/"\n'
    'priority = "primary"\n'
)
PEP735_DEV = '[dependency-groups]\ndev = [\n    "tracetool-agent",\n]\n'


class Kind(NamedTuple):
    manifest: str
    text: str  # before install; {py}: this Python, {url}: the index
    lock: str
    added: str  # in the manifest after install
    command: str  # the lock command install runs


KINDS = {
    "uv": Kind(
        "pyproject.toml",
        '[project]\nname = "shop"\nversion = "0.1.0"\nrequires-python = ">={py}"\n'
        'dependencies = ["pyyaml"]\n\n[tool.uv]\npackage = false\n\n'
        '[[tool.uv.index]]\nname = "local"\nurl = "{url}/"\ndefault = true\n',
        "uv.lock",
        PEP735_DEV,
        "uv lock",
    ),
    "poetry": Kind(
        "pyproject.toml",
        POETRY,
        "poetry.lock",
        '[tool.poetry.group.dev.dependencies]\ntracetool-agent = "*"\n',
        "poetry lock",
    ),
    "poetry1": Kind(
        "pyproject.toml",
        POETRY,
        "poetry.lock",
        '[tool.poetry.group.dev.dependencies]\ntracetool-agent = "*"\n',
        "poetry lock --no-update",
    ),
    "pdm": Kind(
        "pyproject.toml",
        '[project]\nname = "shop"\nversion = "0.1.0"\nrequires-python = ">={py}"\n'
        'dependencies = ["pyyaml"]\n\n[tool.pdm]\ndistribution = false\n\n'
        # a source named "pypi" replaces the default one
        '[[tool.pdm.source]]\nname = "pypi"\nurl = "{url}/"\n',
        "pdm.lock",
        PEP735_DEV,
        # the first lock recorded only the default group
        "pdm lock --update-reuse -G dev",
    ),
    "pipenv": Kind(
        "Pipfile",
        '[[source]]\nname = "local"\nurl = "{url}/"\nverify_ssl = false\n\n'
        '[packages]\npyyaml = "*"\n\n[dev-packages]\n',
        "Pipfile.lock",
        '[dev-packages]\ntracetool-agent = "*"\n',
        "pipenv lock",
    ),
}


def tool_env(agent_env: Path, exe: Path, home: Path) -> dict[str, str]:
    """The project's environment with only `exe` added to PATH, loopback-only networking and
    the tools' caches and settings under `home`."""
    tools = home / "bin"
    tools.mkdir(parents=True)
    (tools / exe.name).symlink_to(exe)
    env = env_for(
        agent_env,
        **offline_env(),
        **{f"XDG_{d}_HOME": str(home / d.lower()) for d in ("CACHE", "CONFIG", "DATA", "STATE")},
        PDM_CHECK_UPDATE="false",
        PIPENV_VERBOSITY="-1",
        PIPENV_NOSPIN="1",
        PIP_CACHE_DIR=str(home / "pip-cache"),
        PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring",
    )
    env["PATH"] = os.pathsep.join([str(tools), env["PATH"]])
    return env


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_install_refreshes_the_lock_with_the_projects_tool(
    kind: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    agent_env: Path,
    index: SimpleIndex,
    index_wheels: Path,
) -> None:
    exe: Path = request.getfixturevalue(f"{kind}_exe")
    spec = KINDS[kind]
    env = tool_env(agent_env, exe, tmp_path / "home")
    root = tmp_path / "shop"
    root.mkdir()
    (root / spec.manifest).write_text(spec.text.format(py=PY, url=index.url))
    first = subprocess.run(
        [exe.name, "lock"],
        cwd=root,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert first.returncode == 0, first.stdout + first.stderr
    pinned = wheel_version(index_wheels / "base", "pyyaml")
    if kind != "pipenv":
        assert locked_version((root / spec.lock).read_text(), "pyyaml") == pinned
    make(root, SHOP)
    index.publish(*(index_wheels / "newer").glob("*.whl"))  # a PyYAML release since the lock

    done = install_yes(root, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"running {spec.command} ..." in done.stdout, done.stdout
    assert spec.added in (root / spec.manifest).read_text()
    lock = (root / spec.lock).read_text()
    if kind == "pipenv":  # `pipenv lock` re-resolves: no pin to keep
        locked = json.loads(lock)
        assert set(locked["develop"]) == {"tracetool-agent", "orjson", "pyyaml"}, locked
        assert set(locked["default"]) == {"pyyaml"}, locked
    else:
        assert locked_version(lock, "tracetool-agent") == "0.1.0"
        assert locked_version(lock, "pyyaml") == pinned  # the project's pin is kept
    if kind in ("poetry", "pdm"):  # tracetool-agent is locked in the dev group only
        entry = lock[lock.index('name = "tracetool-agent"') :].split("[[package]]")[0]
        assert 'groups = ["dev"]' in entry, entry
    extra = {"pytest.ini"} if spec.manifest == "Pipfile" else set()
    committed = {spec.manifest, spec.lock, "trace.yml", ".gitignore", *extra}
    assert last_commit_files(root) == committed
    assert len(recordings(root, "pytest")) == 1  # validation recorded one test
