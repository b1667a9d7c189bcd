"""The sanitize guarantee on real recordings of the example apps (issue 7, item 3).

The shop (Flask + sqlite3 + requests) and the inventory (FastAPI + SQLAlchemy + httpx) run as
real servers with the agent on (the agent_e2e helpers start them); requests carry planted
secrets in query strings, headers, JSON bodies and path parameters; the remote recording is
sanitized and must hold none of them, with schema and call-tree structure unchanged.
"""

from __future__ import annotations

import random
import string
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.agent_e2e.conftest import EXAMPLE_DEPS, _StubHandler, record, request, start_app
from tests.transform.checks import (
    assert_every_value_masked,
    assert_no_secret_survives,
    assert_schema_and_structure_kept,
    sanitized,
    strings,
)
from tests.transform.conftest import needs_sql

pytestmark = [pytest.mark.e2e, needs_sql]


def _secret(rng: random.Random, prefix: str = "") -> str:
    body = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(20))
    return prefix + body[:5] + "7" + body[5:12] + "31" + body[12:]


@pytest.fixture(scope="module")
def stub() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StubHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def apps_available() -> None:
    import importlib.util

    missing = [m for m in EXAMPLE_DEPS if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"the examples need {', '.join(missing)}")


def _check(doc: dict[str, Any], secrets: list[str]) -> None:
    raw_text = "\x00".join(strings(doc))
    missing = [s for s in secrets if s not in raw_text]
    assert not missing, f"the recording does not hold {missing}: nothing would be tested"
    out, result = sanitized(doc)
    assert_no_secret_survives(out, secrets)
    assert_schema_and_structure_kept(doc, result)
    assert_every_value_masked(result)


def test_shop_recording_sanitized(apps_available: None, stub: str, tmp_path: Path) -> None:
    rng = random.Random(11)
    token, session, api_key = _secret(rng, "eyJ"), _secret(rng), _secret(rng, "sk_live_")
    query, order_id, email = _secret(rng), _secret(rng), f"{_secret(rng).lower()}@mail.io"
    headers = {
        "Authorization": f"Bearer {token}",
        "Cookie": f"session={session}",
        "X-Api-Key": api_key,
    }
    server = start_app("shop", tmp_path, stub)
    try:

        def drive(url: str) -> None:
            request(url, "GET", f"/products?q={query}", headers=headers)
            request(url, "GET", "/products/2", headers=headers)
            body = {"product_id": 2, "quantity": 3, "email": email, "note": api_key}
            request(url, "POST", "/orders", body, headers=headers)
            request(url, "GET", f"/orders/{order_id}", headers=headers)
            request(url, "GET", "/boom", headers=headers)

        doc = record(server, drive)
    finally:
        server.stop()
    _check(doc, [token, session, api_key, query, order_id, email])


def test_fastapi_recording_sanitized(apps_available: None, stub: str, tmp_path: Path) -> None:
    rng = random.Random(12)
    token, name, currency = _secret(rng, "ghp_"), _secret(rng), _secret(rng)
    headers = {"Authorization": f"token {token}"}
    server = start_app("fastapi", tmp_path, stub)
    try:

        def drive(url: str) -> None:
            request(url, "GET", "/v1/items?limit=1", headers=headers)
            request(url, "POST", "/v1/items", {"name": name, "stock": 7}, headers=headers)
            request(url, "GET", f"/rates?currency={currency}", headers=headers)
            request(url, "GET", "/fail", headers=headers)

        doc = record(server, drive)
    finally:
        server.stop()
    _check(doc, [token, name, currency])
