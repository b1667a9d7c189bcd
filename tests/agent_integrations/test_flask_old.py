"""Flask < 2.3 without blinker (issue 12 item 7): route templates and path parameters do not
depend on signals, and an integration that does not fit is reported once on stderr and by
`integrations.self_check()`.

The old Flask runs in its own venv (Flask 2.0.3 + Werkzeug 2.0.3 from PyPI, no blinker), made
once under ~/.cache/tracetool-e2e; the agent is imported from this checkout (it needs only
orjson and pyyaml there). Without PyPI the test skips (fails on CI) via `need()`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.realparts import need

ROOT = Path(__file__).resolve().parents[2]
VENV = Path.home() / ".cache" / "tracetool-e2e" / "flask-2.0-venv"
PINS = ["flask==2.0.3", "werkzeug==2.0.3", "orjson", "pyyaml"]

pytestmark = pytest.mark.e2e


def _old_flask_python() -> Path:
    python = VENV / "bin" / "python"
    stamp = VENV / ".ready"
    if stamp.is_file() and python.is_file():
        return python
    made = subprocess.run(
        [sys.executable, "-m", "venv", "--clear", str(VENV)], capture_output=True, text=True
    )
    if made.returncode != 0:
        need("a venv for Flask 2.0", made.stderr[-300:])
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *PINS],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if installed.returncode != 0:
        need("Flask 2.0.3 from PyPI", installed.stderr[-300:])
    stamp.write_text("\n".join(PINS))
    return python


APP = """
import json, sys
from tracetool.agent import integrations
from tracetool.agent.recorder import get_recorder

integrations.install_all()
import flask
assert flask.__version__ == "2.0.3", flask.__version__
from flask import signals
assert not signals.signals_available  # no blinker

app = flask.Flask("old")

@app.route("/items/<int:item_id>")
def item(item_id):
    return {"id": item_id}

@app.route("/boom")
def boom():
    raise RuntimeError("old flask exploded")

rec = get_recorder()
rec.start()
client = app.test_client()
assert client.get("/items/7").status_code == 200
assert client.get("/boom").status_code == 500
doc = rec.stop()
print(json.dumps({"doc": doc, "failures": integrations.failures(),
                  "check": integrations.self_check()}))
"""


def test_old_flask_without_blinker_gets_routes_and_path_parameters(tmp_path: Path) -> None:
    python = _old_flask_python()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACETOOL")}
    env["PYTHONPATH"] = str(ROOT)
    (tmp_path / "trace.yml").write_text("name: old\n")
    done = subprocess.run(
        [str(python), "-c", APP], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["failures"] == [] and out["check"] == [], out
    assert "integration is off" not in done.stderr
    servers = [e for e in out["doc"]["events"] if "http_server_request" in e]
    item, boom = servers
    assert item["http_server_request"]["normalized_path_info"] == "/items/{item_id}"
    assert [(p["name"], p["value"]) for p in item["message"]] == [("item_id", "7")]
    assert boom["http_server_request"]["normalized_path_info"] == "/boom"
    returns = {e["parent_id"]: e for e in out["doc"]["events"] if e["event"] == "return"}
    assert returns[boom["id"]]["http_server_response"]["status_code"] == 500
    assert {"name": "flask", "version": "2.0.3"} in out["doc"]["metadata"]["frameworks"]


BROKEN = """
import sys
from tracetool.agent import integrations
integrations.install_all()
import flask  # a stand-in without the Flask class the hook patches
import flask
print("check:", integrations.self_check())
print("check:", integrations.self_check())
"""


def test_an_integration_that_does_not_fit_is_reported_once_on_stderr(tmp_path: Path) -> None:
    (tmp_path / "flask").mkdir()
    (tmp_path / "flask" / "__init__.py").write_text("__version__ = '0.0'\n")
    (tmp_path / "trace.yml").write_text("name: broken\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACETOOL")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(BROKEN)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    reports = [line for line in done.stderr.splitlines() if "integration is off" in line]
    assert len(reports) == 1, done.stderr
    assert reports[0].startswith("tracetool: the flask integration is off (flask:install")
    assert done.stdout.count("the flask integration is off") == 2  # self_check lists it each time
