"""A big recording's json / plantuml diagram, built batch by batch (`tracetool.diagram.streamed`),
is byte for byte the diagram built whole: forced on every corpus recording, on generated ones
(several threads interleaved) and on their variants (missing and late returns, eventUpdates,
malformed files)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.conftest import corpus_recordings, make_corpus
from tracetool.diagram import streamed as streamed_module
from tracetool.diagram.builder import DiagramOptions
from tracetool.diagram.service import DiagramRequest, write_diagrams

SHARED = Path(__file__).resolve().parents[3] / "shared"
if not (SHARED / "tools").is_dir():
    SHARED = Path("/work/shared")
FORMATS = ("json", "plantuml")


def _write(
    paths: list[Path], out: Path, fmt: str, options: DiagramOptions
) -> tuple[dict[str, bytes], list[tuple[str, int, int]], list[str]]:
    out.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    written = write_diagrams(
        paths, DiagramRequest(format=fmt, output_dir=out, options=options), errors
    )
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    counts = [(w.source.name, w.actions, w.actors) for w in written]
    return files, counts, [e.replace(str(out), "") for e in errors]


def _compare(
    paths: list[Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    options: DiagramOptions | None = None,
    *,
    expect_streamed: bool = True,
) -> list[bool]:
    options = options or DiagramOptions()
    taken: list[bool] = []
    real = streamed_module.stream_diagram

    def spy(*args: object, **kwargs: object) -> object:
        result = real(*args, **kwargs)  # type: ignore[arg-type]
        taken.append(result is not None)
        return result

    for fmt in FORMATS:
        whole = _write(paths, tmp_path / f"whole-{fmt}", fmt, options)
        with monkeypatch.context() as m:
            m.setattr(streamed_module, "STREAM_THRESHOLD", 0)
            m.setattr(streamed_module, "WHOLE_LIMIT", 0)
            m.setattr("tracetool.trace.tree.HELD_CALLS", 3)  # many small batches
            m.setattr(streamed_module, "BLOCK", 7)
            m.setattr(streamed_module, "stream_diagram", spy)
            streamed = _write(paths, tmp_path / f"streamed-{fmt}", fmt, options)
        assert streamed == whole, fmt
    if expect_streamed:
        assert taken and all(taken)
    return taken


def _recordings() -> list[Path]:
    return [p for p in corpus_recordings() if p.stat().st_size < 2_500_000]


def test_corpus_streamed_equals_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # every recording of the corpus (one write_diagrams call: errors compared too)
    recordings = _recordings()
    assert len(recordings) > 20
    # names repeat across folders: one output folder per recording
    taken = [
        t
        for i, path in enumerate(recordings)
        for t in _compare([path], tmp_path / str(i), monkeypatch, expect_streamed=False)
    ]
    assert sum(taken) > 40  # the others are not recordings, or pair returns late


@pytest.mark.parametrize(
    "options",
    [
        DiagramOptions(loops=False),
        DiagramOptions(expand=("package:app/models",), exclude=("package:lib",)),
    ],
)
def test_corpus_streamed_with_options(
    options: DiagramOptions, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i, path in enumerate(_recordings()[::4]):
        _compare([path], tmp_path / str(i), monkeypatch, options, expect_streamed=False)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("gen")
    return make_corpus(out, 3, 2, 5, "--ext", ".appmap.json")


def _variant(source: Path, target: Path, change: object) -> Path:
    data = orjson.loads(source.read_bytes())
    change(data)  # type: ignore[operator]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(orjson.dumps(data))
    return target


def test_generated_streamed_equals_whole(
    generated: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads = {e.get("thread_id") for e in orjson.loads(generated[0].read_bytes())["events"]}
    assert len(threads) > 1  # interleaved threads: roots finish out of order
    _compare(generated, tmp_path, monkeypatch)


def test_variants_streamed_equal_whole(
    generated: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = generated[0]

    def drop_returns(data: dict) -> None:  # every 7th return missing
        events = data["events"]
        returns = [i for i, e in enumerate(events) if e.get("event") == "return"]
        drop = set(returns[::7])
        data["events"] = [e for i, e in enumerate(events) if i not in drop]

    def updates(data: dict) -> None:  # eventUpdates replace some returns
        events = data["events"]
        data["eventUpdates"] = {
            str(e["id"]): {**e, "return_value": {"class": "Updated", "value": "x"}}
            for e in events[1::9]
            if e.get("event") == "return"
        }

    def late_return(data: dict) -> None:  # a call returns after its caller did
        events = data["events"]
        calls = [e for e in events if e.get("event") == "call"]
        victim = calls[1]["id"]
        moved = [e for e in events if e.get("parent_id") == victim]
        data["events"] = [e for e in events if e.get("parent_id") != victim] + moved

    def no_return_ids(data: dict) -> None:  # returns paired by thread stack only
        for e in data["events"]:
            if e.get("event") == "return":
                e.pop("parent_id", None)

    variants = [
        _variant(source, tmp_path / "in" / f"{change.__name__}.appmap.json", change)
        for change in (drop_returns, updates, no_return_ids)
    ]
    _compare(variants, tmp_path / "out", monkeypatch)
    late = _variant(source, tmp_path / "in" / "late.appmap.json", late_return)
    # built whole: only the whole tree pairs a return with a call of a finished tree
    assert _compare([late], tmp_path / "late", monkeypatch, expect_streamed=False) == [False] * 2


def test_malformed_keep_their_errors(
    generated: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = generated[0].read_bytes()
    bad = tmp_path / "in"
    bad.mkdir()
    (bad / "truncated.appmap.json").write_bytes(raw[: len(raw) // 2])
    (bad / "badbyte.appmap.json").write_bytes(raw.replace(b'"event"', b'"event\xff"', 1))
    (bad / "notobject.appmap.json").write_bytes(raw.replace(b'"events":[', b'"events":[1,', 1))
    (bad / "eventsnull.appmap.json").write_bytes(b'{"events": null, "classMap": []}')
    paths = sorted(bad.iterdir())
    for fmt in FORMATS:
        whole = _write(paths, tmp_path / f"whole-{fmt}", fmt, DiagramOptions())
        with monkeypatch.context() as m:
            m.setattr(streamed_module, "STREAM_THRESHOLD", 0)
            m.setattr(streamed_module, "WHOLE_LIMIT", 0)
            streamed = _write(paths, tmp_path / f"streamed-{fmt}", fmt, DiagramOptions())
        assert streamed == whole
        assert len(whole[2]) == 2  # truncated, badbyte (non-object events are skipped)


def test_second_pass_replays_the_first_pass_cuts(generated: list[Path]) -> None:
    from tracetool.trace.slim import SlimEvent

    found = streamed_module.stream_diagram(generated[0], DiagramOptions(), threshold=0)
    assert found is not None
    cuts = found.stream.cuts
    assert cuts and any(cuts)  # the block reader read it all plainly
    again = found.stream.again(SlimEvent)
    replayed = [e.get("id") for block in again.event_blocks() for e in block]
    assert again.cuts == cuts
    expected = [e.get("id") for e in orjson.loads(generated[0].read_bytes())["events"]]
    assert replayed == expected


def test_whole_limit_decides_between_whole_and_streamed(generated: list[Path]) -> None:
    """Up to `WHOLE_LIMIT` a diagram is built whole (faster); past it, streamed."""
    path = generated[0]
    size = path.stat().st_size
    assert size > 1024
    assert streamed_module.stream_diagram(path, DiagramOptions(), threshold=size) is None
    assert streamed_module.stream_diagram(path, DiagramOptions(), threshold=size - 1) is not None
    assert streamed_module.WHOLE_LIMIT >= streamed_module.STREAM_THRESHOLD
