"""Paths of the corpus goldens the diagram tests compare against."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CORPUS

SEQ = CORPUS / "packages/sequence-diagram/tests/fixtures"
APP = SEQ / "app/tmp/appmap"
GOLD = SEQ / "sequenceDiagrams"
CLI_FIX = CORPUS / "packages/cli/tests"
REVOKE = CLI_FIX / "unit/fixtures/ruby/revoke_api_key.appmap.json"
REVOKE_JSON = CLI_FIX / "integration/fixtures/sequenceDiagram/diagram.json"
REVOKE_UML = CLI_FIX / "integration/fixtures/sequenceDiagram/diagram.filtered.uml"


@pytest.fixture(autouse=True)
def _corpus_present() -> None:
    if not SEQ.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS}")


@pytest.fixture(autouse=True)
def _no_browser(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url, *a, **k: opened.append(url) or True)
    return opened


def app(name: str) -> Path:
    return APP / f"{name}.appmap.json"
