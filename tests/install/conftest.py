"""tests/install use the built distributions of tests/packaging (one build per session)."""

import os

import pytest

from tests.conftest import NO_DJANGO
from tests.packaging.conftest import agent_env, shared_dir, wheels

__all__ = ["agent_env", "shared_dir", "wheels"]


@pytest.fixture(autouse=True)
def _projects_keep_their_pytest_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """`install` runs the project's own pytest: it must load pytest-django for a Django project,
    which the suite-wide `-p no:django` (tests/conftest.py) would turn off."""
    addopts = os.environ.get("PYTEST_ADDOPTS", "").replace(NO_DJANGO, "").strip()
    if addopts:
        monkeypatch.setenv("PYTEST_ADDOPTS", addopts)
    else:
        monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
