"""With NOTES_SQL_LOG set, every SQL statement a test runs is appended to that file, so a run
with `--trace-record` can be compared with one without (recording must not add queries)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _sql_log(request: pytest.FixtureRequest) -> Iterator[None]:
    from django.db import connection
    from django.test import TransactionTestCase
    from django.test.utils import CaptureQueriesContext

    target = os.environ.get("NOTES_SQL_LOG")
    cls = getattr(request.node, "cls", None)
    uses_db = request.node.get_closest_marker("django_db") is not None or (
        cls is not None and issubclass(cls, TransactionTestCase)
    )
    if not target or not uses_db:
        yield
        return

    with CaptureQueriesContext(connection) as captured:
        yield
    with open(target, "a", encoding="utf-8") as log:
        for query in captured.captured_queries:
            log.write(f"{request.node.name}\t{query['sql']}\n")
