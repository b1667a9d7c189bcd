"""With NOTES_SQL_LOG set, every SQL statement a test runs is appended to that file, so a run
with `--trace-record` can be compared with one without (recording must not add queries)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _sql_log(request: pytest.FixtureRequest) -> Iterator[None]:
    target = os.environ.get("NOTES_SQL_LOG")
    if not target or "django_db" not in request.keywords and "client" not in request.fixturenames:
        yield
        return
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        yield
    with open(target, "a", encoding="utf-8") as log:
        for query in captured.captured_queries:
            log.write(f"{request.node.name}\t{query['sql']}\n")
