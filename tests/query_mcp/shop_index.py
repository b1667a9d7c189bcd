"""The shop recordings (tests/index/shop.py) indexed into a query.db, and a clean environment
for the `tracetool query mcp|ui` subprocesses (HOME in tmp, no inherited trace settings)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from tests.index.shop import make_shop
from tracetool.index import IndexOptions, index_directory

NOW = time.time()
ROUTES = ("/users/{id}", "/orders", "/users")


@dataclass(frozen=True)
class ShopIndex:
    trace_dir: Path
    query_db: Path


def build_shop_index(base: Path) -> ShopIndex:
    trace = make_shop(base / "trace", now=NOW)
    qdb = base / "query.db"
    result = index_directory(trace, IndexOptions(query_db=qdb, workers=1))
    assert len(result.added) == 4 and not result.skipped
    return ShopIndex(trace, qdb)


def clean_env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TRACETOOL") and k not in ("NO_COLOR", "COLUMNS")
    }
    env["HOME"] = str(home)
    env["PYTHONUNBUFFERED"] = "1"
    return env
