"""inspect with query.db: the index only chooses files, results equal a full scan's."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.inspect.conftest import FILES, RUBY
from tracetool.index import IndexOptions, index_directory
from tracetool.inspect import find, parse_code_object
from tracetool.inspect.indexed import select
from tracetool.paths import query_db_path

pytestmark = pytest.mark.skipif(not RUBY.is_dir(), reason="shared corpus not found")

CODE_OBJECTS = (
    "function:app/models/ApiKey.authenticate",
    "class:app/models/ApiKey",
    "package:app",
    "route:DELETE /microposts/:id",
    "route:delete /api/api_keys",
    "table:api_keys",
    "table:users",
    'query:SELECT * FROM "api_keys" WHERE ("login" = \'root\')',
    "database:",
    "http:",
)


def _index(root: Path) -> None:
    result = index_directory(root, IndexOptions(workers=1))
    assert result.query_db == query_db_path(root) and result.query_db.is_file()


def _json(matches: list[Any]) -> list[dict[str, Any]]:
    return [m.to_json() for m in matches]


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the recordings `find` opens (it reads each file with the stream's read_small)."""
    import tracetool.inspect.scan as search

    seen: list[str] = []
    original = search.read_small

    def read_small(path: Path, threshold: int | None = None) -> bytes | None:
        seen.append(Path(path).name)
        return original(path, threshold)

    monkeypatch.setattr(search, "read_small", read_small)
    return seen


@pytest.mark.parametrize("text", CODE_OBJECTS)
def test_index_gives_the_scan_results(traces: Path, text: str) -> None:
    ref = parse_code_object(text)
    scanned = _json(find(ref, traces))
    _index(traces)
    assert select(ref, traces) is not None
    assert _json(find(ref, traces)) == scanned
    assert scanned, f"{text} should match something in the test corpus"


def test_files_that_cannot_match_are_not_opened(
    traces: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _index(traces)
    reads = _reads(monkeypatch)
    function = parse_code_object("function:app/models/ApiKey.authenticate")
    assert {m.recording for m in find(function, traces)} == {"ruby/revoke_api_key.appmap.json"}
    assert reads == ["revoke_api_key.appmap.json"]

    reads.clear()
    route = find(parse_code_object("route:DELETE /microposts/:id"), traces)
    assert {m.recording for m in route} == {"models/list_microposts_compact.appmap.json"}
    assert reads == ["list_microposts_compact.appmap.json"]

    reads.clear()
    find(function, traces, use_index=False)
    assert sorted(reads) == sorted(Path(rel).name for rel in FILES)


def test_recordings_added_or_changed_after_indexing_are_read(
    traces: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _index(traces)
    (traces / "new").mkdir()
    shutil.copyfile(RUBY / "revoke_api_key.appmap.json", traces / "new/copy.appmap.json")
    ref = parse_code_object("function:app/models/ApiKey.authenticate")
    recordings = [m.recording for m in find(ref, traces)]
    assert sorted(set(recordings)) == ["new/copy.appmap.json", "ruby/revoke_api_key.appmap.json"]

    # A file rewritten since indexing (other size) is read, whatever the index said of it.
    changed = traces / "java/petclinic.appmap.json"
    shutil.copyfile(RUBY / "revoke_api_key.appmap.json", changed)
    reads = _reads(monkeypatch)
    recordings = sorted({m.recording for m in find(ref, traces)})
    assert "java/petclinic.appmap.json" in recordings
    assert "petclinic.appmap.json" in reads


def test_without_index_every_recording_is_scanned(
    traces: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = parse_code_object("function:app/models/ApiKey.authenticate")
    assert not query_db_path(traces).exists()
    assert select(ref, traces) is None
    reads = _reads(monkeypatch)
    assert {m.recording for m in find(ref, traces)} == {"ruby/revoke_api_key.appmap.json"}
    assert sorted(reads) == sorted(Path(rel).name for rel in FILES)


def test_types_the_index_cannot_express_scan(traces: Path) -> None:
    _index(traces)
    assert select(parse_code_object("external-route:GET http://x/y"), traces) is None
    assert select(parse_code_object("function:event"), traces) is None


def test_explicit_query_db(traces: Path, tmp_path: Path) -> None:
    qdb = tmp_path / "elsewhere.db"
    index_directory(traces, IndexOptions(workers=1, query_db=qdb))
    ref = parse_code_object("table:api_keys")
    assert select(ref, traces) is None  # nothing at the default location
    chosen = select(ref, traces, qdb)
    assert chosen is not None and chosen.indexed
    assert _json(find(ref, traces, query_db=qdb)) == _json(find(ref, traces, use_index=False))


def test_cli_query_db_option(traces: Path, tmp_path: Path) -> None:
    import orjson
    from click.testing import CliRunner

    from tracetool.cli import cli

    qdb = tmp_path / "elsewhere.db"
    index_directory(traces, IndexOptions(workers=1, query_db=qdb))
    args = ["inspect", "table:api_keys", "--trace-dir", str(traces), "--query-db", str(qdb)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    data = orjson.loads(result.output)
    assert data["recordings"] == 1 and "api_keys" in data["sqlTables"]
