"""Schema version 5: recording_code_objects keyed by recording (a cold load appends to it),
indexed by code object; a version 4 database is migrated in place, not rebuilt."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.index.conftest import rows, run
from tracetool.index import schema


def _master(qdb: Path) -> list[tuple[str, str]]:
    return rows(
        qdb,
        "SELECT name, sql FROM sqlite_master WHERE tbl_name = 'recording_code_objects' "
        "AND sql IS NOT NULL ORDER BY name",
    )


def _as_version_4(qdb: Path) -> None:
    """The table and index as version 4 made them."""
    conn = sqlite3.connect(qdb, isolation_level=None)
    conn.execute("BEGIN")
    conn.execute(
        "CREATE TABLE old (code_object_id INTEGER NOT NULL, recording_id INTEGER NOT NULL, "
        "PRIMARY KEY (code_object_id, recording_id)) WITHOUT ROWID"
    )
    conn.execute("INSERT INTO old SELECT code_object_id, recording_id FROM recording_code_objects")
    conn.execute("DROP TABLE recording_code_objects")
    conn.execute("ALTER TABLE old RENAME TO recording_code_objects")
    conn.execute(
        "CREATE INDEX recording_code_objects_recording "
        "ON recording_code_objects (recording_id, code_object_id)"
    )
    conn.execute("PRAGMA user_version = 4")
    conn.execute("COMMIT")
    conn.close()


def test_version_4_database_is_migrated_in_place(shop: Path, qdb: Path) -> None:
    run(shop, qdb)
    new_form = _master(qdb)
    assert "PRIMARY KEY (recording_id, code_object_id)" in dict(new_form)["recording_code_objects"]
    links = rows(
        qdb, "SELECT code_object_id, recording_id FROM recording_code_objects ORDER BY 1, 2"
    )
    counts = rows(qdb, "SELECT fqid, recordings FROM code_objects ORDER BY fqid")
    _as_version_4(qdb)
    assert _master(qdb) != new_form
    result = run(shop, qdb)
    assert not result.rebuilt and result.unchanged == 4
    assert rows(qdb, "PRAGMA user_version") == [(schema.SCHEMA_VERSION,)]
    assert _master(qdb) == new_form
    assert (
        rows(qdb, "SELECT code_object_id, recording_id FROM recording_code_objects ORDER BY 1, 2")
        == links
    )
    assert rows(qdb, "SELECT fqid, recordings FROM code_objects ORDER BY fqid") == counts
    assert rows(qdb, "PRAGMA integrity_check") == [("ok",)]


def test_cold_load_counts_code_objects_after_building_indexes(shop: Path, qdb: Path) -> None:
    """The counts of a cold load (made after its indexes: counting by code object needs
    one) are what the table says."""
    run(shop, qdb)
    assert rows(
        qdb,
        "SELECT co.fqid, co.recordings FROM code_objects co ORDER BY co.fqid",
    ) == rows(
        qdb,
        "SELECT co.fqid, count(rco.recording_id) FROM code_objects co LEFT JOIN "
        "recording_code_objects rco ON rco.code_object_id = co.id GROUP BY co.id ORDER BY co.fqid",
    )
    assert rows(qdb, "SELECT count(*) FROM code_objects WHERE recordings = 0") == [(0,)]
    assert rows(qdb, "SELECT value FROM meta WHERE key = 'code_objects_pending'") == []
