"""`prefetch(path)` reads a file in a thread for the next `read_file(path)`, which takes the
bytes only while the file is still the one read (`tracetool.trace.reader`'s doc); the diagram
command reads its first recording ahead when it will read it whole (`tracetool.diagram.
read_ahead`), and writes the same diagram as without."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import make_corpus
from tracetool import diagram
from tracetool.cli import cli
from tracetool.errors import NotFoundError, TraceFormatError
from tracetool.trace import reader
from tracetool.trace.reader import prefetch, read_file


@pytest.fixture(autouse=True)
def _nothing_left() -> object:
    reader._PREFETCHED.clear()
    yield None
    reader._PREFETCHED.clear()


def test_read_file_takes_the_prefetched_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.appmap.json"
    path.write_bytes(b'{"events": []}' * 1000)
    prefetch(path)
    thread, read = reader._PREFETCHED[str(path)]
    thread.join()
    assert read and read[0][1] == path.read_bytes()

    opened: list[object] = []
    real = reader.open_regular

    def spy(p: Path | str) -> object:
        opened.append(p)
        return real(p)

    monkeypatch.setattr(reader, "open_regular", spy)
    assert read_file(path) == path.read_bytes()
    assert opened == []  # (taken, not read again)
    assert reader._PREFETCHED == {}
    assert read_file(path) == path.read_bytes()  # a second read reads the file
    assert opened == [path]


def test_a_file_changed_after_the_prefetch_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "a.appmap.json"
    path.write_bytes(b"1" * 100)
    prefetch(path)
    reader._PREFETCHED[str(path)][0].join()
    path.write_bytes(b"2" * 100)  # same size, new content
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert read_file(path) == b"2" * 100
    prefetch(path)
    reader._PREFETCHED[str(path)][0].join()
    replacement = tmp_path / "b"
    replacement.write_bytes(b"3" * 7)
    os.replace(replacement, path)  # another file under the name
    assert read_file(path) == b"3" * 7


def test_limit_and_errors_are_read_files_own(tmp_path: Path) -> None:
    path = tmp_path / "a.appmap.json"
    path.write_bytes(b"x" * 10)
    prefetch(path)
    assert read_file(path, limit=5) is None
    assert read_file(path, limit=10) == b"x" * 10

    missing = tmp_path / "missing.appmap.json"
    prefetch(missing)
    with pytest.raises(NotFoundError, match="no such file"):
        read_file(missing)

    fifo = tmp_path / "fifo.appmap.json"
    os.mkfifo(fifo)
    prefetch(fifo)  # (refused before it is opened: the thread never blocks)
    reader._PREFETCHED[str(fifo)][0].join(timeout=5)
    with pytest.raises(TraceFormatError, match="FIFO"):
        read_file(fifo)


def test_read_ahead_only_what_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small, big = tmp_path / "small.appmap.json", tmp_path / "big.appmap.json"
    small.write_bytes(b"x" * 10)
    big.write_bytes(b"x" * (diagram.READ_AHEAD_MIN + 1))
    diagram.read_ahead([small, big])
    assert reader._PREFETCHED == {}  # (the first only, and it is small)
    diagram.read_ahead([tmp_path])
    assert reader._PREFETCHED == {}
    monkeypatch.setattr(diagram, "WHOLE_LIMIT", diagram.READ_AHEAD_MIN)
    diagram.read_ahead([big])  # streamed in batches: nothing held for it
    assert reader._PREFETCHED == {}
    monkeypatch.setattr(diagram, "WHOLE_LIMIT", 64 << 20)
    diagram.read_ahead([big])
    assert list(reader._PREFETCHED) == [str(big)]


@pytest.mark.parametrize("fmt", ["json", "plantuml"])
def test_the_diagram_read_ahead_is_the_same_diagram(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    recording = make_corpus(tmp_path / "in", 1, 1.5, 5, "--ext", ".appmap.json")[0]
    assert recording.stat().st_size >= diagram.READ_AHEAD_MIN
    taken: list[Path | str] = []
    real = reader._prefetched

    def spy(path: Path | str, limit: int | None) -> bytes | None:
        data = real(path, limit)
        if data is not None:
            taken.append(path)
        return data

    monkeypatch.setattr(reader, "_prefetched", spy)
    runner = CliRunner()
    outputs = []
    for ahead in (True, False):
        if not ahead:
            monkeypatch.setattr(diagram, "READ_AHEAD_MIN", 1 << 62)
        out = tmp_path / f"out-{ahead}"
        result = runner.invoke(
            cli, ["sequence-diagram", str(recording), "-f", fmt, "--output-dir", str(out)]
        )
        assert result.exit_code == 0, result.output
        (written,) = out.iterdir()
        outputs.append(written.read_bytes())
    assert taken == [recording]  # read ahead once, then not
    assert outputs[0] == outputs[1] and len(outputs[0]) > 100_000
