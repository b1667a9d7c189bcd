"""Fixtures for the agent's tests: a throw-away project with its own package and trace.yml.

Instrumentation is process-wide, so every test gets a package with a unique name (modules are
never shared between tests), and the recorder is checked to be idle afterwards. These tests run
on Python 3.9–3.13 (scripts/test-agent-pythons) with only orjson, pyyaml and pytest installed.
"""

from __future__ import annotations

import itertools
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tracetool.agent import config as agent_config
from tracetool.agent import instrument
from tracetool.agent.recorder import get_recorder
from tracetool.config import Config, load_config
from tracetool.trace.tree import build_call_tree, iter_preorder

_ids = itertools.count(1)


class Project:
    """A temporary project: `root/trace.yml` and a package `root/<pkg>/`."""

    def __init__(self, root: Path, pkg: str) -> None:
        self.root = root
        self.pkg = pkg
        (root / pkg).mkdir(parents=True)
        (root / pkg / "__init__.py").write_text("")

    def write(self, name: str, source: str) -> str:
        """Write module `<pkg>.<name>` and return its dotted name."""
        path = self.root / self.pkg / (name.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        init = path.parent / "__init__.py"
        if not init.exists():
            init.write_text("")
        path.write_text(textwrap.dedent(source))
        return f"{self.pkg}.{name}"

    def configure(self, yml: str | None = None) -> Config:
        """Write trace.yml (default: record the whole package), make it active, instrument."""
        text = yml if yml is not None else f"name: demo\npackages:\n  - path: {self.pkg}\n"
        (self.root / "trace.yml").write_text(textwrap.dedent(text).replace("PKG", self.pkg))
        config = load_config(self.root / "trace.yml")
        agent_config.set_config(config)
        instrument.install(config)
        return config

    def load(self, name: str) -> Any:
        __import__(f"{self.pkg}.{name}")
        return sys.modules[f"{self.pkg}.{name}"]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    name = f"ttpkg{next(_ids)}_{os.getpid()}"
    root = tmp_path / "proj"
    proj = Project(root, name)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delenv("TRACETOOL_TRACE_DIR", raising=False)
    yield proj
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[mod]
    recorder = get_recorder()
    leftover = recorder.finish() is not None
    agent_config.set_config(None)
    _deactivate_integrations()
    assert not leftover, "a test left the remote recording running"


def calls(doc: dict) -> list[dict]:
    return [e for e in doc["events"] if e["event"] == "call"]


def names(doc: dict) -> list[str]:
    """`Class#method` / `module.function` of every function call, in order."""
    out = []
    for e in calls(doc):
        if "method_id" in e:
            sep = "." if e["static"] else "#"
            out.append(f"{e['defined_class'].split('.', 1)[-1]}{sep}{e['method_id']}")
    return out


def tree(doc: dict) -> list:
    """The call tree as nested `[name, [children]]` lists (package prefix dropped)."""

    def label(node: Any) -> str:
        call = node.call
        if "method_id" in call:
            sep = "." if call["static"] else "#"
            return f"{call['defined_class'].split('.', 1)[-1]}{sep}{call['method_id']}"
        return next(k for k in call if k not in ("id", "event", "thread_id"))

    def build(nodes: list) -> list:
        return [[label(n), build(n.children)] for n in nodes]

    return build(build_call_tree(doc["events"]).roots)


def returns_by_call(doc: dict) -> dict[int, dict]:
    return {e["parent_id"]: e for e in doc["events"] if e["event"] == "return"}


def flat(doc: dict) -> list[tuple[int, str]]:
    """(depth, name) pairs in pre-order."""
    out = []
    for node, depth in iter_preorder(build_call_tree(doc["events"]).roots):
        call = node.call
        out.append((depth, call.get("method_id") or "?"))
    return out


def _deactivate_integrations() -> None:
    """The explicit API (`agent.record`, `start_recording`) installs the integrations for the
    process; undo that so later tests' servers (wsgiref, http.server) are not patched."""
    from tracetool.agent import startup

    if startup._integrations:
        from tracetool.agent import integrations

        integrations.uninstall_all()
        startup._integrations = False
