"""`install_all()`: integrations install only when (and as soon as) the app imports the library,
and arming them imports none of those libraries. Run in fresh interpreters."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

HEAVY = [
    "flask",
    "django",
    "starlette",
    "fastapi",
    "sqlalchemy",
    "requests",
    "httpx",
    "psycopg",
    "psycopg2",
    "uvicorn",
    "werkzeug",
]


def run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_arming_imports_no_library() -> None:
    out = run(
        f"""
        import sys
        from tracetool.agent.integrations import install_all, installed
        install_all()
        print(sorted(m for m in {HEAVY!r} if m in sys.modules))
        print(sorted(installed()))
        """
    )
    loaded, done = out.splitlines()
    assert loaded == "[]"
    assert "'flask'" not in done and "'sqlalchemy'" not in done


def test_library_imported_later_is_hooked_on_import() -> None:
    pytest.importorskip("flask")
    pytest.importorskip("requests")
    out = run(
        """
        from tracetool.agent.integrations import install_all, installed
        from tracetool.agent.integrations._patch import is_patched
        install_all()
        import flask, requests.sessions
        print(is_patched(flask.Flask, "__call__"), is_patched(requests.sessions.Session, "send"))
        print("flask" in installed(), "requests" in installed())
        """
    )
    assert out.splitlines() == ["True True", "True True"]


def test_library_imported_before_is_hooked_at_once() -> None:
    pytest.importorskip("httpx")
    out = run(
        """
        import httpx
        from tracetool.agent.integrations import install_all
        from tracetool.agent.integrations._patch import is_patched
        install_all()
        print(is_patched(httpx.Client, "send"), is_patched(httpx.AsyncClient, "send"))
        """
    )
    assert out == "True True"


def test_patched_entry_points_keep_their_identity() -> None:
    pytest.importorskip("flask")
    out = run(
        """
        import inspect
        from tracetool.agent.integrations import install_all
        install_all()
        import flask
        call = flask.Flask.__call__
        print(call.__name__, call.__qualname__, list(inspect.signature(call).parameters))
        """
    )
    assert out == "__call__ Flask.__call__ ['self', 'environ', 'start_response']"
