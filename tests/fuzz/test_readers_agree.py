"""Every read path gives one file the same verdict (issue 14: one reading layer).

A seeded run of hostile mutants (tests/fuzz/harness.py `mutate`) goes through each way a command
reads a recording: the whole-document loader, the slim loader (full and minimal), the event
stream below and above its size threshold (orjson; the block reader with its ijson fallback), as
dicts, as `EventHead`s with their texts (stats) and as inspect's decoded fields, and the byte
splitter of trim and sanitize (its normalized events). Each must end the same way — read, or refused with the same
one-line `TraceFormatError` — and nothing but the project's own errors may escape. The rules
they share live in `tracetool.trace.checks`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from tests.fuzz.harness import good_document, mutate
from tracetool.errors import TraceToolError
from tracetool.inspect.scan import InspectEvent as _Event  # the fields inspect decodes
from tracetool.trace import load, rawdoc
from tracetool.trace.slim import load_slim
from tracetool.trace.stream import open_stream, run_pass

SEEDS = (1, 2, 3, 4)
CASES_PER_SEED = 75


def _load(path: Path) -> None:
    load(path)


def _slim(path: Path) -> None:
    load_slim(path)


def _slim_minimal(path: Path) -> None:
    load_slim(path, raw=True, minimal=True)


def _stream(path: Path) -> None:
    for _ in open_stream(path).events():
        pass


def _stream_incremental(path: Path) -> None:
    for _ in open_stream(path, threshold=0).events():
        pass


def _stream_heads(path: Path) -> None:
    for _ in open_stream(path, heads=True).raw_head_blocks():
        pass


def _stream_heads_incremental(path: Path) -> None:
    for _ in open_stream(path, threshold=0, heads=True).raw_head_blocks():
        pass


def _stream_heads_events_first(path: Path) -> None:
    run_pass(path, lambda s: list(s.raw_head_blocks()), threshold=0, heads=True)


def _stream_fields_incremental(path: Path) -> None:
    for _ in open_stream(path, threshold=0, fields=_Event).events():
        pass


def _split(path: Path) -> None:
    for _ in rawdoc.split(path.read_bytes(), str(path)).normalized_events():
        pass


PATHS: dict[str, Callable[[Path], None]] = {
    "load": _load,
    "slim": _slim,
    "slim-minimal": _slim_minimal,
    "stream": _stream,
    "stream-ijson": _stream_incremental,
    "stream-heads": _stream_heads,
    "stream-heads-blocks": _stream_heads_incremental,
    "stream-heads-events-first": _stream_heads_events_first,
    "stream-fields-blocks": _stream_fields_incremental,
    "split": _split,
}


def _outcome(read: Callable[[Path], None], path: Path) -> str:
    try:
        read(path)
    except TraceToolError as exc:
        text = str(exc)
        assert "\n" not in text, text
        assert text.startswith(f"{path}: "), text
        return text[len(f"{path}: ") :]
    return "ok"


@pytest.mark.parametrize("seed", SEEDS)
def test_every_read_path_gives_a_mutant_the_same_verdict(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    base = orjson.dumps(good_document())
    target = tmp_path / "case.trace.json"
    disagreements = []
    for number in range(CASES_PER_SEED):
        kind, bad = mutate(base, rng)
        target.write_bytes(bad)
        verdicts = {name: _outcome(read, target) for name, read in PATHS.items()}
        if len(set(verdicts.values())) > 1:
            disagreements.append(f"seed {seed} case {number} ({kind}): {verdicts}")
    assert not disagreements, "\n".join(disagreements[:5])


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        (b'{"events":7}', "not a trace document (events is a number, expected an array)"),
        (b"[]", "not a trace document (top level is an array, not an object)"),
        (b'{"events":[{"id":18446744073709551615}]}', "ok"),
        (b'{"events":[{"id":1' + b"0" * 400 + b"}]}", "holds a number too large to use"),
        (b'{"events":[],"x":"\xff"}', "not valid UTF-8 (byte 18: invalid start byte)"),
        (b'{"events":[],"x":' + b"[" * 1030 + b"]" * 1030 + b"}", "nested deeper than 1024"),
        (b'{"events":[],"x":' + b"[" * 1000 + b"]" * 1000 + b"}", "ok"),
        (b'{"events":[{"id":[1],"event":"call","thread_id":{}}]}', "ok"),
        (b'{"events":[],"eventUpdates":[]}', "ok"),
        (b'{"metadata":null}', "ok"),
        (b'{"metadata":{}}', "ok"),
        (b'{"events":[],\x0c"metadata":{}}', "not valid JSON"),
        (b'{"events":[{"x":"\\ud800"}]}', "not valid JSON"),
        (b'{"events":[{"x":"\\ud83d\\ude00"}]}', "ok"),
        (b'{"events":[],"events":7}', "not a trace document (events is a number"),
    ],
)
def test_known_defects_read_the_same_on_every_path(
    text: bytes, verdict: str, tmp_path: Path
) -> None:
    target = tmp_path / "case.trace.json"
    target.write_bytes(text)
    verdicts = {name: _outcome(read, target) for name, read in PATHS.items()}
    assert len(set(verdicts.values())) == 1, verdicts
    assert next(iter(verdicts.values())).startswith(verdict)
