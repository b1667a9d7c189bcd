"""prune: size targets on the corpus's big recordings, the filter golden, merge, the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from tests.conftest import CORPUS
from tracetool.cli import cli
from tracetool.errors import UsageError
from tracetool.filters import decode
from tracetool.trace import load
from tracetool.transform.prune import parse_size, prune_file

STATS = CORPUS / "packages/cli/tests/unit/fixtures/stats/appmap"
MICROPOSTS = STATS / "Microposts_interface_micropost_interface.appmap.json"
BIG = [
    MICROPOSTS,
    STATS / "Password_resets_password_resets.appmap.json",
    CORPUS / "packages/models/tests/unit/fixtures/checkout_update_payment.appmap.json",
]
GOLDEN_FILTER = {
    "hideName": [
        "function:logger/Logger::LogDevice#write",
        "function:activerecord/ActiveRecord::Relation#records",
        "function:actionpack/ActionDispatch::Request::Session#[]",
    ],
    "limitRootEvents": False,
    "hideMediaRequests": False,
}

pytestmark = pytest.mark.skipif(not STATS.is_dir(), reason="shared corpus not found")


def _kinds(events: list[dict[str, Any]]) -> dict[str, int]:
    out = {"http": 0, "sql": 0}
    for e in events:
        if e.get("event") == "call":
            if "http_server_request" in e or "http_client_request" in e:
                out["http"] += 1
            elif "sql_query" in e:
                out["sql"] += 1
    return out


def _consistent(data: bytes) -> list[dict[str, Any]]:
    doc = orjson.loads(data)
    events = doc["events"]
    ids = [e["id"] for e in events]
    assert len(ids) == len(set(ids))
    calls = {e["id"] for e in events if e["event"] == "call"}
    assert all(e["parent_id"] in calls for e in events if e["event"] == "return")
    assert load_bytes_ok(data)
    return events


def load_bytes_ok(data: bytes) -> bool:
    from tracetool.trace import parse

    return len(parse(data).events) > 0


def test_parse_size_binary_units() -> None:
    assert parse_size("15mb") == 15 * 2**20
    assert parse_size("800KB") == 800 * 1024
    assert parse_size("2g") == 2 * 2**30
    assert parse_size("1000") == 1000
    with pytest.raises(UsageError):
        parse_size("lots")


@pytest.mark.parametrize("path", BIG, ids=lambda p: p.name[:40])
def test_size_target_is_met_and_requests_and_queries_stay(path: Path) -> None:
    original = load(path)
    target = path.stat().st_size // 3
    result = prune_file(path, size=target)
    assert result.reached and len(result.data) <= target
    events = _consistent(result.data)
    assert _kinds(events) == _kinds(original.events)
    assert result.events_after == len(events) < len(original.events)
    kept_ids = {e["id"] for e in events}
    assert kept_ids <= {e["id"] for e in original.events}  # ids are preserved, not renumbered
    removed = orjson.loads(result.data)["pruneFilter"]["hideName"]
    assert removed == sorted(r.fqid for r in result.removed)
    # children of dropped calls moved up: every kept event still nests by thread
    assert load_bytes_ok(result.data)


def test_most_repetitive_calls_go_first() -> None:
    result = prune_file(MICROPOSTS, size=MICROPOSTS.stat().st_size - 200_000)
    assert result.removed[0].fqid == "function:logger/Logger::LogDevice#write"
    assert result.removed[0].calls == 319


def test_unreachable_target_says_so() -> None:
    result = prune_file(MICROPOSTS, size=10_000)
    assert not result.reached
    events = _consistent(result.data)
    assert _kinds(events) == _kinds(load(MICROPOSTS).events)
    assert all(
        "sql_query" in e
        or "http_server_request" in e
        or "http_client_request" in e
        or e["event"] == "return"
        for e in events
    )


def test_small_file_is_left_as_is() -> None:
    result = prune_file(MICROPOSTS, size=parse_size("15mb"))
    assert result.removed == () and result.events_after == 3526


@pytest.mark.parametrize("size", [10**9, 200_000])
def test_size_mode_applies_event_updates(tmp_path: Path, size: int) -> None:
    # eventUpdates replace their events (AppMap's builder), in size mode as in filter mode: the
    # output holds the updates' texts, and no eventUpdates
    data = orjson.loads(MICROPOSTS.read_bytes())
    returns = [e for e in data["events"] if e.get("event") == "return"][::5]
    data["eventUpdates"] = {
        str(e["id"]): {**e, "return_value": {"class": "Updated", "value": "x"}} for e in returns
    }
    source = tmp_path / "updated.appmap.json"
    source.write_bytes(orjson.dumps(data))
    result = prune_file(source, size=size)
    pruned = orjson.loads(b"".join(result.chunks()))
    assert "eventUpdates" not in pruned
    updated = {e["id"] for e in returns}
    kept = [e for e in pruned["events"] if e["id"] in updated]
    assert kept and all(e["return_value"] == {"class": "Updated", "value": "x"} for e in kept)
    assert len(kept) == len(updated) or size < 10**9


def test_filter_golden_3526_to_2184_and_merge_with_previous_prune(tmp_path: Path) -> None:
    result = prune_file(MICROPOSTS, filter=decode(GOLDEN_FILTER))
    assert (result.events_before, result.events_after) == (3526, 2184)
    first = tmp_path / "first.appmap.json"
    first.write_bytes(result.data)
    assert orjson.loads(result.data)["pruneFilter"] == GOLDEN_FILTER
    again = prune_file(
        first, filter=decode({"hideName": ["function:zzz/Z#z"], "hideElapsedTimeUnder": 5})
    )
    merged = orjson.loads(again.data)["pruneFilter"]
    assert merged["hideName"] == sorted([*GOLDEN_FILTER["hideName"], "function:zzz/Z#z"])
    assert merged["limitRootEvents"] is False and merged["hideElapsedTimeUnder"] == 5
    _consistent(again.data)


def test_cli_requires_size_or_filter(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tracetool", "prune", str(MICROPOSTS), "-o", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "tracetool: prune needs a size target or a filter: pass -s/--size (e.g. -s 15mb) "
        "or --filter"
    )
    assert not list(tmp_path.iterdir())


def test_cli_size_text_and_json(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["prune", str(MICROPOSTS), "-s", "1mb", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    out = tmp_path / MICROPOSTS.name
    assert out.stat().st_size <= 2**20
    assert "The following has been pruned:" in result.output
    assert "function:logger/Logger::LogDevice#write" in result.output

    result = runner.invoke(
        cli, ["prune", str(MICROPOSTS), "-s", "15mb", "--format", "json", "-o", str(tmp_path)]
    )
    report = orjson.loads(result.output)
    assert report["eventsAfter"] == 3526 and report["removed"] == []


def test_cli_filter_and_output_data(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        cli,
        [
            "prune",
            str(MICROPOSTS),
            "--filter",
            orjson.dumps(GOLDEN_FILTER).decode(),
            "--output-data",
            "-o",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    assert len(orjson.loads(result.output)["events"]) == 2184
    assert not list(tmp_path.iterdir())
