"""benchmarks/index.py's cold-run reset of the peer: AppMap's index folders are moved into a
trash folder (deleted with the benchmark's work folder at the end), not deleted before our cold
run; the recordings stay where they are, byte for byte."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    path = ROOT / "benchmarks" / "index.py"
    spec = importlib.util.spec_from_file_location("bench_index_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(spec.name, None)
    return module


def test_reset_peer_moves_index_folders_into_trash(tmp_path: Path) -> None:
    peer = tmp_path / "peer"
    recordings = {
        peer / "a.appmap.json": b'{"events": []}',
        peer / "sub" / "b.appmap.json": b'{"events": [1]}',
        peer / "sub" / "c.appmap.json": b'{"events": [2]}',  # (never indexed: no folder)
    }
    for path, data in recordings.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for stem in (peer / "a", peer / "sub" / "b"):
        (stem / "deep").mkdir(parents=True)
        (stem / "mtime").write_text("1")
        (stem / "deep" / "classMap.json").write_text("[]")
    trash = tmp_path / "work" / "trash" / "0"

    _bench().reset_peer(peer, trash)

    assert not (peer / "a").exists() and not (peer / "sub" / "b").exists()
    moved = sorted(p.relative_to(trash).as_posix() for p in trash.rglob("*") if p.is_file())
    assert len(moved) == 4
    assert sorted({m.split("/", 1)[1] for m in moved}) == ["deep/classMap.json", "mtime"]
    for path, data in recordings.items():
        assert path.read_bytes() == data
    # a second reset (the next run) with nothing to move leaves the trash as it was
    _bench().reset_peer(peer, trash)
    assert len([p for p in trash.rglob("*") if p.is_file()]) == 4
