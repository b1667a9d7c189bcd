"""Issue 15 on what our agent records from the example apps (Flask, FastAPI, Django; real servers).

- every route `query endpoints` prints is found by `inspect route:` and `query find --route`,
  and is listed exactly once in openapi;
- two recordings of one client call to a test server on different ephemeral ports compare as
  unchanged (`compare`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import orjson
import pytest
import yaml

from tests.agent_e2e.conftest import EXAMPLE_DEPS, _StubHandler, record, started_apps
from tests.analysis.test_real_apps import compare_v1_v2, tool
from tests.openapi.test_examples import DRIVERS
from tracetool.index import IndexOptions, index_directory
from tracetool.query import endpoints, open_db

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _stub() -> tuple[ThreadingHTTPServer, str]:
    stub = ThreadingHTTPServer(("127.0.0.1", 0), _StubHandler)
    stub.daemon_threads = True
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    return stub, f"http://127.0.0.1:{stub.server_address[1]}"


def _record(tmp: Path, names: list[str], out: Path, suffix: str = "") -> None:
    tmp.mkdir(parents=True, exist_ok=True)
    stub, url = _stub()
    try:
        with started_apps(names, tmp, url) as servers:
            out.mkdir(parents=True, exist_ok=True)
            for name in names:
                doc = record(servers[name], DRIVERS[name])
                # a test recording, so compare classifies it
                doc["metadata"]["recorder"] = {"name": "pytest", "type": "tests"}
                doc["metadata"]["name"] = f"{name}{suffix}"
                (out / f"{name}.trace.json").write_bytes(orjson.dumps(doc))
    finally:
        stub.shutdown()
        stub.server_close()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    import importlib.util

    missing = [m for m in EXAMPLE_DEPS if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"the examples need {', '.join(missing)} (pip install -e '.[examples]')")
    tmp = tmp_path_factory.mktemp("analysis_examples")
    _record(tmp / "run1", list(DRIVERS), tmp / "rep" / "base")
    yield tmp


def test_endpoints_inspect_find_and_openapi_agree(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = recorded / "rep" / "base"
    qdb = recorded / "query.db"
    index_directory(trace, IndexOptions(query_db=qdb, workers=1))
    db = open_db(query_db=qdb)
    rows = endpoints(db)
    db.close()
    assert ("GET", "/notes/{note_id}/") in {(r["method"], r["route"]) for r in rows}
    code, out, err = tool(capsys, "openapi", "--trace-dir", str(trace))
    assert code == 0, err
    listed = [(m.upper(), p) for p, ops in yaml.safe_load(out)["paths"].items() for m in ops]
    for row in rows:
        route = f"{row['method']} {row['route']}"
        code, out, err = tool(
            capsys, "inspect", f"route:{route}", "--trace-dir", str(trace), "--query-db", str(qdb)
        )
        assert code == 0, (route, err)
        assert len(orjson.loads(out)["matches"]) == row["count"], route
        code, out, err = tool(
            capsys, "query", "find", "requests", "--route", route, "--query-db", str(qdb), "--json"
        )
        assert len(json.loads(out)) == row["count"], route
        if row["statuses"] != {"404": row["count"]}:  # openapi leaves out what never matched
            assert listed.count((row["method"], row["route"])) == 1, (route, listed)


def test_runs_on_other_ephemeral_ports_compare_unchanged(
    recorded: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # the FastAPI app calls the stub (GET /rates): a second run, another stub port
    _record(recorded / "run2", ["fastapi"], recorded / "rep" / "head")
    base = (recorded / "rep" / "base" / "fastapi.trace.json").read_text()
    head = (recorded / "rep" / "head" / "fastapi.trace.json").read_text()
    assert "http://127.0.0.1:" in base and base.count("127.0.0.1:") == head.count("127.0.0.1:")
    for name in ("shop", "django"):  # present on one side only: not part of this check
        (recorded / "rep" / "base" / f"{name}.trace.json").unlink()
    monkeypatch.chdir(recorded)
    code, out, err = compare_v1_v2(capsys)
    assert code == 0, err
    assert json.loads(out)["changed"] == []
