"""`tracetool install` on real fixture projects of each kind, with their real tools.

Each project is a small working app with tests, in git. The project's Python is a venv holding
only the agent distribution (+ pytest, flask, django, pytest-django: tests/packaging/conftest.py),
found the way install finds it (VIRTUAL_ENV). `tracetool install` runs through a terminal
(tmux, answering its prompts) or with `--yes`; then the project's own test commands record.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import orjson
import pytest

from tests.install.terminal import run_in_terminal
from tests.packaging.conftest import python_of, sh

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TRACETOOL = str(Path(sys.executable).parent / "tracetool")
YES = {"[Y/n]": "y", "[y/N]": "y"}


def make(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for args in (
        ["init", "-q"],
        ["config", "user.email", "t@e.st"],
        ["config", "user.name", "t"],
        ["add", "-A"],
        ["commit", "-qm", "init"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True)
    return root


def env_for(agent_env: Path, **extra: str) -> dict[str, str]:
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {"VIRTUAL_ENV": str(agent_env), "PATH": path, "NO_COLOR": "1", **extra}


def install_yes(root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "TRACETOOL")}
    return subprocess.run(
        [TRACETOOL, "install", "--yes"],
        cwd=root,
        env={**full, **env},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def last_commit_files(root: Path) -> set[str]:
    out = subprocess.run(
        ["git", "show", "--name-only", "--format=%s", "HEAD"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    assert out[0] == "Record runtime behaviour with tracetool", out
    return {line for line in out[1:] if line}


def recordings(root: Path, sub: str) -> list[Path]:
    """The per-test recordings (wide fixtures' set-up and tear-down have files of their own)."""
    found = (root / "tmp" / "trace" / sub).glob("*.trace.json")
    return sorted(p for p in found if not p.name.startswith("fixture."))


FLASK_APP = {
    "shop/__init__.py": "",
    "shop/app.py": (
        "from flask import Flask, jsonify\n\napp = Flask(__name__)\n\n\n"
        "def price(n):\n    return n * 3\n\n\n"
        "@app.get('/price/<int:n>')\ndef get_price(n):\n    return jsonify(price=price(n))\n"
    ),
    "tests/test_shop.py": (
        "from shop.app import app\n\n\n"
        "def test_price():\n    assert app.test_client().get('/price/2').json == {'price': 6}\n\n\n"
        "def test_missing():\n    assert app.test_client().get('/nope').status_code == 404\n"
    ),
}


def test_pip_requirements_project_through_a_terminal(tmp_path: Path, agent_env: Path) -> None:
    """Dev deps live in requirements-dev.txt; pyproject.toml holds only tool settings."""
    tool_settings = "[tool.ruff]\nline-length = 100\n"
    root = make(
        tmp_path / "shop",
        {
            **FLASK_APP,
            "requirements.txt": "flask>=3\n",
            "requirements-dev.txt": "-r requirements.txt\npytest\n",
            "pyproject.toml": tool_settings,
            ".gitignore": "__pycache__/\n",
        },
    )
    code, screen = run_in_terminal([TRACETOOL, "install"], root, env_for(agent_env), answers=YES)
    assert code == 0, screen
    for expected in ("Project type", "pip", "Is this the project to configure?", "Committed:"):
        assert expected in screen, screen
    assert (root / "pyproject.toml").read_text() == tool_settings  # untouched
    assert (root / "requirements-dev.txt").read_text() == (
        "-r requirements.txt\npytest\ntracetool-agent\n"
    )
    assert "/tmp/trace/" in (root / ".gitignore").read_text()
    assert last_commit_files(root) == {
        ".gitignore",
        "pytest.ini",
        "requirements-dev.txt",
        "trace.yml",
    }
    assert len(recordings(root, "pytest")) == 1  # validation recorded one test
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    assert "tmp" not in status  # recordings are ignored
    sh([python_of(agent_env), "-m", "pytest", "-q", "-p", "no:django"], cwd=root)
    assert len(recordings(root, "pytest")) == 2


def test_not_a_project_writes_nothing(tmp_path: Path, agent_env: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    done = install_yes(tmp_path, env_for(agent_env))
    assert done.returncode != 0
    assert "is not a Python project" in done.stderr
    assert "internal error" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_failed_validation_never_commits(tmp_path: Path, agent_env: Path) -> None:
    root = make(
        tmp_path / "app",
        {
            "requirements.txt": "",
            "app/__init__.py": "",
            "tests/test_nothing.py": "",  # no test: nothing can be recorded
        },
    )
    done = install_yes(root, env_for(agent_env))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "validation could not find a test to record" in done.stderr
    assert "Not committing" in done.stdout
    log = subprocess.run(
        ["git", "log", "--format=%s"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    assert log.strip() == "init"


DJANGO = {
    "manage.py": (
        "#!/usr/bin/env python\nimport os\nimport sys\n\n"
        "if __name__ == '__main__':\n"
        "    os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'mysite.settings')\n"
        "    from django.core.management import execute_from_command_line\n\n"
        "    execute_from_command_line(sys.argv)\n"
    ),
    "mysite/__init__.py": "",
    "mysite/settings.py": (
        "from pathlib import Path\n\nBASE_DIR = Path(__file__).resolve().parent.parent\n"
        "SECRET_KEY = 'test'\nDEBUG = True\nALLOWED_HOSTS = ['testserver', 'localhost']\n"
        "INSTALLED_APPS = ['django.contrib.contenttypes', 'django.contrib.auth', 'polls']\n"
        "MIDDLEWARE = []\nROOT_URLCONF = 'mysite.urls'\n"
        "DATABASES = {'default': {'ENGINE': 'django.db.backends.sqlite3',"
        " 'NAME': BASE_DIR / 'db.sqlite3'}}\n"
        "DEFAULT_AUTO_FIELD = 'django.db.models.AutoField'\nUSE_TZ = True\n"
    ),
    "mysite/urls.py": (
        "from django.urls import path\n\nfrom polls import views\n\n"
        "urlpatterns = [path('polls/', views.index)]\n"
    ),
    "polls/__init__.py": "",
    "polls/models.py": (
        "from django.db import models\n\n\nclass Question(models.Model):\n"
        "    text = models.CharField(max_length=200)\n"
    ),
    "polls/views.py": (
        "from django.http import JsonResponse\n\nfrom polls.models import Question\n\n\n"
        "def count():\n    return Question.objects.count()\n\n\n"
        "def index(request):\n    return JsonResponse({'questions': count()})\n"
    ),
    "polls/tests.py": (
        "from django.test import TestCase\n\nfrom polls.models import Question\n\n\n"
        "class PollsTests(TestCase):\n"
        "    def test_index_counts_questions(self):\n"
        "        Question.objects.create(text='why?')\n"
        "        self.assertEqual(self.client.get('/polls/').json(), {'questions': 1})\n\n"
        "    def test_empty(self):\n"
        "        self.assertEqual(Question.objects.count(), 0)\n"
    ),
    "requirements.txt": "django>=4.2\n",
}


def test_django_project_records_pytest_and_manage_py_test(
    tmp_path: Path, agent_env: Path, appmap_validate: Callable[[Iterable[Path]], int]
) -> None:
    root = make(tmp_path / "mysite", DJANGO)
    done = install_yes(root, env_for(agent_env))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mysite.settings" in done.stdout
    ini = (root / "pytest.ini").read_text()
    assert "DJANGO_SETTINGS_MODULE = mysite.settings" in ini
    assert "trace_record = true" in ini
    dev = (root / "requirements-dev.txt").read_text()
    assert dev == "-r requirements.txt\ntracetool-agent\npytest-django\n"
    assert (
        'TEST_RUNNER = "tracetool.agent.django_runner.TraceRunner"'
        in (root / "mysite/settings.py").read_text()
    )
    assert len(recordings(root, "pytest")) == 1  # the validation's one test

    python = python_of(agent_env)
    sh([python, "-m", "pytest", "-q"], cwd=root)
    assert len(recordings(root, "pytest")) == 2  # one per test

    sh([python, "manage.py", "test", "-v", "0"], cwd=root)
    unit = recordings(root, "unittest")
    assert len(unit) == 2, unit
    docs = {p.name: orjson.loads(p.read_bytes()) for p in unit}
    index = next(d for n, d in docs.items() if "index" in n)
    assert index["metadata"]["name"] == "PollsTests index counts questions"
    assert index["metadata"]["test_status"] == "succeeded"
    assert index["metadata"]["recorder"] == {"name": "unittest", "type": "tests"}
    assert any("http_server_request" in e for e in index["events"]), index["events"][:3]
    assert len([*unit, *recordings(root, "pytest")]) == 4
    # every file written, the fixture set-up recordings included, is valid AppMap
    assert appmap_validate(sorted((root / "tmp" / "trace").rglob("*.trace.json"))) >= 4


@pytest.mark.parametrize(
    ("kind", "files", "manifest", "expected"),
    [
        (
            "poetry",
            {
                "pyproject.toml": (
                    '[tool.poetry]\nname = "shop"\nversion = "0.1.0"\ndescription = ""\n'
                    'authors = ["t"]\n\n[tool.poetry.dependencies]\npython = "^3.9"\n\n'
                    '[tool.poetry.group.dev.dependencies]\npytest = "*"\n'
                ),
            },
            "pyproject.toml",
            '[tool.poetry.group.dev.dependencies]\ntracetool-agent = "*"\npytest = "*"\n',
        ),
        (
            "pdm",
            {
                "pyproject.toml": (
                    '[project]\nname = "shop"\nversion = "0.1.0"\nrequires-python = ">=3.9"\n'
                    'dependencies = []\n\n[tool.pdm.dev-dependencies]\ndev = ["pytest"]\n'
                ),
            },
            "pyproject.toml",
            '[tool.pdm.dev-dependencies]\ndev = [\n    "tracetool-agent","pytest"]',
        ),
        (
            "pipenv",
            {"Pipfile": '[packages]\n\n[dev-packages]\npytest = "*"\n'},
            "Pipfile",
            '[dev-packages]\ntracetool-agent = "*"\npytest = "*"\n',
        ),
        (
            "pip",
            {
                "requirements.txt": "",
                "requirements-test.txt": "pytest\n",
                "pyproject.toml": "[tool.black]\nline-length = 100\n",
            },
            "requirements-test.txt",
            "pytest\ntracetool-agent\n",
        ),
    ],
)
def test_dev_dependency_goes_where_the_project_keeps_them(
    tmp_path: Path,
    agent_env: Path,
    kind: str,
    files: dict[str, str],
    manifest: str,
    expected: str,
) -> None:
    root = make(
        tmp_path / kind,
        {
            **files,
            "shop/__init__.py": "X = 1\n",
            "tests/test_x.py": "import shop\n\n\ndef test_x():\n    assert shop.X == 1\n",
        },
    )
    done = install_yes(root, env_for(agent_env))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Project type │ {kind}" in done.stdout or kind in done.stdout
    assert expected in (root / manifest).read_text()
    assert manifest in last_commit_files(root)
