"""Fixtures for the MCP server tests: one indexed shop per module, HOME in tmp."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.query_mcp.shop_index import ShopIndex, build_shop_index


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> ShopIndex:
    return build_shop_index(tmp_path_factory.mktemp("shop"))


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    monkeypatch.delenv("TRACETOOL_TRACE_DIR", raising=False)
    return path
