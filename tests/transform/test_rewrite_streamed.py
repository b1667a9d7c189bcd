"""`trim` and `sanitize` of big recordings, a block of events at a time
(tracetool.transform.streamed): the same bytes as the whole rewrite, in flat memory.

The streamed path is forced on small files with `threshold=0`, and the block reader reads 4 KB
at a time (`_CHUNK`), so every recording here is many blocks."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import ROOT, corpus_recordings, make_corpus
from tracetool.trace import stream as stream_module
from tracetool.transform import streamed
from tracetool.transform.sanitize import (
    SanitizeOptions,
    sanitize_big,
    sanitize_bytes,
    sanitize_files,
)
from tracetool.transform.trim import TrimOptions, trim_big, trim_bytes, trim_files


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_module, "_CHUNK", 4096)


def _whole_trim(raw: bytes, cap: int) -> bytes | None:
    return trim_bytes(raw, TrimOptions(cap), "x")[0]


def _whole_sanitize(raw: bytes, allow: frozenset[str] = frozenset()) -> bytes | None:
    return sanitize_bytes(raw, SanitizeOptions(allow), "x")[0]


def _recordings(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    generated = make_corpus(tmp_path_factory.mktemp("gen"), 6, 0.6, 7, "--ext", ".appmap.json")
    return [*corpus_recordings(), *generated]


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return _recordings(tmp_path_factory)


def test_trim_streamed_equals_whole_on_corpus(recordings: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    streamed_count = 0
    for path in recordings:
        raw = path.read_bytes()
        for cap in (8, 120):
            report = trim_big(path, out, TrimOptions(cap), threshold=0)
            if report is None:  # (read whole: nothing written)
                continue
            streamed_count += 1
            whole = _whole_trim(raw, cap)
            assert whole is not None
            assert out.read_bytes() == whole, (path, cap)
            assert report.bytes_after == len(whole)
            assert report.values_trimmed == trim_bytes(raw, TrimOptions(cap))[1].values_trimmed
    assert streamed_count >= 2 * len(recordings) - 6, streamed_count


def test_sanitize_streamed_equals_whole_on_corpus(recordings: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    streamed_count = 0
    for path in recordings:
        raw = path.read_bytes()
        report = sanitize_big(path, out, threshold=0)
        if report is None:
            continue
        streamed_count += 1
        whole, whole_report = sanitize_bytes(raw, SanitizeOptions(), "x")
        assert whole is not None
        assert out.read_bytes() == whole, path
        assert report.counts == whole_report.counts
        assert report.values_tokenized == whole_report.values_tokenized
        # sanitized again: skipped (streamed, or whole where the block reader finds no cut
        # before a long tail of members after the events)
        [again] = _files(sanitize_files, out, None, SanitizeOptions())
        assert again.status == "skipped", path
    # recordings that normalization changes more than renumbering (unreturned calls, updates,
    # returns without parent_id) are sanitized whole; most are not
    assert streamed_count >= len(recordings) // 2, streamed_count


def _doc(events_first: bool = False, tail: dict[str, Any] | None = None) -> bytes:
    events = []
    for n in range(1, 400, 2):
        events.append(
            {
                "id": n,
                "event": "call",
                "thread_id": 1 + n % 3 // 2,
                "defined_class": "app.Svc",
                "method_id": "run",
                "path": "app/svc.py",
                "lineno": 10,
                "static": False,
                "parameters": [{"name": "token", "class": "str", "value": f"'secret-{n}' " * 9}],
            }
        )
        events.append(
            {
                "id": n + 1,
                "event": "return",
                "thread_id": 1 + n % 3 // 2,
                "parent_id": n,
                "return_value": {"class": "str", "value": "x" * 300},
                "elapsed": 0.001,
            }
        )
    metadata = {
        "name": "big",
        "client": {"name": "tests", "url": "https://example.com/tests"},
        "recorder": {"name": "tests", "type": "tests"},
        "language": {"name": "python", "version": "3.11"},
        "exception": {"class": "E", "message": "password=hunter2 " * 20},
        "git": {
            "repository": "https://user:pw@example.com/r.git",
            "branch": "main",
            "commit": "0123456789abcdef0123456789abcdef01234567",
            "status": [],
        },
    }
    function = {"name": "run", "type": "function", "location": "app/svc.py:10", "static": False}
    svc = {"name": "Svc", "type": "class", "children": [function]}
    class_map = [{"name": "app", "type": "package", "children": [svc]}]
    head: dict[str, Any] = {"version": "1.12", "metadata": metadata, "classMap": class_map}
    doc = {"events": events, **head} if events_first else {**head, "events": events}
    doc.update(tail or {})
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 if events_first else 0)


@pytest.mark.parametrize(
    "raw",
    [
        _doc(),
        _doc(events_first=True),  # metadata after the events: found by the key scan
        _doc(tail={"pruneFilter": {"hideName": ["x"]}, "extra": [1, 2.5, "three"]}),
        _doc(tail={"eventUpdates": {}}),
    ],
    ids=["usual", "events-first", "members-after", "empty-updates"],
)
def test_layouts_equal_whole(raw: bytes, tmp_path: Path) -> None:
    path = tmp_path / "r.appmap.json"
    path.write_bytes(raw)
    out = tmp_path / "o.json"
    report = trim_big(path, out, TrimOptions(20), threshold=0)
    assert report is not None and report.values_trimmed == 401
    assert out.read_bytes() == _whole_trim(raw, 20)
    assert sanitize_big(path, out, threshold=0) is not None
    assert out.read_bytes() == _whole_sanitize(raw)
    text = out.read_text()
    assert "hunter2" not in text and "secret-" not in text and "user:pw" not in text


def test_re_sanitize_streamed_like_whole(tmp_path: Path) -> None:
    path = tmp_path / "r.appmap.json"
    path.write_bytes(_doc())
    assert sanitize_big(path, path, threshold=0) is not None
    once = path.read_bytes()
    # allowing a value that was masked: sanitized again, numbering continues, with a warning
    report = sanitize_big(path, path, SanitizeOptions(frozenset({"x"})), threshold=0)
    assert report is not None and report.status == "sanitized"
    assert path.read_bytes() == _whole_sanitize(once, frozenset({"x"}))
    assert any("did not allow 'x'" in w for w in report.warnings)
    # an edited file with an intact-looking marker is not trusted
    edited = once.replace(b'"name":"big"', b'"name":"bi9"')
    path.write_bytes(edited)
    report = sanitize_big(path, path, threshold=0)
    assert report is not None and report.status == "sanitized"
    assert any("not as sanitize left it" in w for w in report.warnings)
    assert path.read_bytes() == _whole_sanitize(edited)


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["events"].pop(),  # a call left open
        lambda d: d.update(eventUpdates={"2": {"id": 2, "event": "return", "parent_id": 1}}),
        lambda d: d["events"].insert(3, 7),  # not an object
        lambda d: d["events"].reverse(),  # call ids that fall
    ],
    ids=["open-call", "updates", "non-object", "falling-ids"],
)
def test_what_normalization_changes_is_sanitized_whole(change: Any, tmp_path: Path) -> None:
    data = orjson.loads(_doc())
    change(data)
    path = tmp_path / "r.appmap.json"
    path.write_bytes(orjson.dumps(data))
    out = tmp_path / "o" / "r.appmap.json"
    assert sanitize_big(path, out, threshold=0) is None
    assert not out.parent.exists() or not list(out.parent.iterdir())  # nothing left behind
    # through the files runner (the CLI's path) the whole rewrite takes over, same bytes
    [report] = _files(sanitize_files, path, tmp_path / "o", SanitizeOptions())
    assert report.status == "sanitized" and out.read_bytes() == _whole_sanitize(path.read_bytes())


def _files(run: Any, path: Path, out_dir: Path | None, options: Any) -> Any:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streamed, "STREAM_THRESHOLD", 0)  # (open_big's default threshold)
        return run([path], options, out_dir)


def test_files_runner_streams_in_place_and_copies_skipped(tmp_path: Path) -> None:
    raw = _doc()
    path = tmp_path / "r.appmap.json"
    path.write_bytes(raw)
    os.chmod(path, 0o600)
    [report] = _files(trim_files, path, None, TrimOptions(20))
    assert report.status == "trimmed" and report.details["values_trimmed"] == 401
    assert report.bytes_before == len(raw) and report.bytes_after == path.stat().st_size
    assert path.read_bytes() == _whole_trim(raw, 20)
    assert os.stat(path).st_mode & 0o777 == 0o600  # the original's permission bits
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.appmap.json"]  # no temp left
    # trimmed again with the same cap: skipped; with -o the file is copied as it is
    [report] = _files(trim_files, path, tmp_path / "copy", TrimOptions(20))
    assert report.status == "skipped"
    assert (tmp_path / "copy" / "r.appmap.json").read_bytes() == path.read_bytes()


def test_a_broken_big_file_is_one_error_line(tmp_path: Path) -> None:
    path = tmp_path / "r.appmap.json"
    path.write_bytes(_doc()[:-5000])  # cut short
    [report] = _files(trim_files, path, tmp_path / "o", TrimOptions(20))
    assert report.status == "error" and str(path) in report.error
    assert "\n" not in report.error and not (tmp_path / "o" / "r.appmap.json").exists()


def test_a_file_changed_while_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.appmap.json"
    path.write_bytes(_doc())
    big = streamed.open_big(path, 0)
    assert big is not None
    blocks = big.blocks()
    next(blocks)
    with path.open("ab") as handle:
        handle.write(b" ")
    with pytest.raises(Exception, match="changed while it was read"):
        list(blocks)


_MEMORY = """
import sys, time
from pathlib import Path
from tracetool.transform import trim
path, mode = Path(sys.argv[1]), sys.argv[2]
if mode == "streamed":
    assert trim.trim_big(path, path.with_suffix(".out"), trim.TrimOptions(20)) is not None
else:
    out, _ = trim.trim_bytes(path.read_bytes(), trim.TrimOptions(20))
    path.with_suffix(".out").write_bytes(out)
for line in open("/proc/self/status"):
    if line.startswith("VmHWM"):
        print(int(line.split()[1]))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")
def test_memory_does_not_follow_the_file(tmp_path: Path) -> None:
    """Peak memory (VmHWM, in a fresh process) of 14 and 44 MB recordings: flat when streamed
    (a block's worth), growing with the file when rewritten whole."""
    peaks: dict[tuple[str, int], int] = {}
    for copies in (100, 300):
        data = orjson.loads(_doc())
        events = data["events"]
        data["events"] = [
            dict(e, id=e["id"] + k * 1000, **_parent(e, k)) for k in range(copies) for e in events
        ]
        path = tmp_path / f"big{copies}.appmap.json"
        path.write_bytes(orjson.dumps(data))
        for mode in ("streamed", "whole"):
            done = subprocess.run(
                [sys.executable, "-c", _MEMORY, str(path), mode],
                capture_output=True,
                text=True,
                check=True,
                cwd=ROOT,
            )
            peaks[mode, copies] = int(done.stdout.split()[-1])
    grown = 29_000  # KB: the second file is 29 MB bigger
    assert peaks["streamed", 300] - peaks["streamed", 100] < grown // 4, peaks
    assert peaks["whole", 300] - peaks["whole", 100] > grown, peaks


def _parent(event: dict[str, Any], k: int) -> dict[str, Any]:
    return {"parent_id": event["parent_id"] + k * 1000} if "parent_id" in event else {}


def test_cli_trim_and_sanitize_stream_a_big_file(tt: Any, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(streamed, "STREAM_THRESHOLD", 0)
    raw = _doc(events_first=True)
    path = tmp_path / "rec" / "r.appmap.json"
    path.parent.mkdir()
    path.write_bytes(raw)
    run = tt("trim", "--max-length", "20", "-r", path.parent, "-o", tmp_path / "t", "--json")
    assert run.code == 0, run.err
    [report] = run.json()
    assert report["status"] == "trimmed" and report["values_trimmed"] == 401
    assert (tmp_path / "t" / "r.appmap.json").read_bytes() == _whole_trim(raw, 20)
    run = tt("sanitize", path, "--json")  # in place
    assert run.code == 0, run.err
    [report] = run.json()
    assert report["status"] == "sanitized" and report["bytes_after"] == path.stat().st_size
    assert path.read_bytes() == _whole_sanitize(raw)
    assert tt("sanitize", path).out.count("skipped") == 1


def test_progress_follows_the_blocks_of_a_big_file(tmp_path: Path) -> None:
    big, small = tmp_path / "big.appmap.json", tmp_path / "small.appmap.json"
    big.write_bytes(_doc())
    small.write_bytes(orjson.dumps({**orjson.loads(_doc()), "events": []}))
    total = big.stat().st_size + small.stat().st_size
    seen: list[tuple[int, int]] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streamed, "STREAM_THRESHOLD", 1000)  # (the small file is read whole)
        reports = sanitize_files(
            [big, small], SanitizeOptions(), tmp_path / "o", progress=_add(seen)
        )
    assert [r.status for r in reports] == ["sanitized", "sanitized"]
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[-1] == total and {t for _, t in seen} == {total}
    assert len([d for d in done if 0 < d < big.stat().st_size]) >= 10  # (4 KB blocks)


def _add(seen: list[tuple[int, int]]) -> Any:
    return lambda done, total: seen.append((done, total))


def test_streamed_outputs_pass_appmaps_validator(
    tmp_path: Path, appmap_validate: Callable[[Iterable[Path]], int]
) -> None:
    """What the block-at-a-time rewrite writes, for each layout: AppMap's validator's verdict."""
    paths = []
    for number, raw in enumerate((_doc(), _doc(events_first=True))):
        path = tmp_path / f"r{number}.appmap.json"
        path.write_bytes(raw)
        out = tmp_path / "out" / f"trim-{number}.appmap.json"
        # (the validator's schema caps a value at 100 characters)
        assert trim_big(path, out, TrimOptions(100), threshold=0) is not None
        paths.append(out)
        out = tmp_path / "out" / f"sanitize-{number}.appmap.json"
        assert sanitize_big(path, out, threshold=0) is not None
        paths.append(out)
    assert appmap_validate(paths) == len(paths)
