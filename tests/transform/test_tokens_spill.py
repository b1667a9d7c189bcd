"""The sanitize token table moves to a temporary file past `SPILL_AT` distinct values
(`tracetool.transform.tokens`' doc): the same tokens and the same bytes as a table held in
memory, whole and streamed, with the memo of raw strings bounded too."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import corpus_recordings, make_corpus
from tracetool.trace import stream as stream_module
from tracetool.transform import tokens as tokens_module
from tracetool.transform.sanitize import SanitizeOptions, sanitize_big, sanitize_bytes
from tracetool.transform.tokens import Tokenizer

# values as sanitize meets them: repeats, the same value quoted and bare, kinds, odd strings
VALUES: list[object] = [
    "'s3cr3t'",
    "s3cr3t",
    "42",
    42,
    "550e8400-e29b-41d4-a716-446655440000",
    "alice@example.com",
    "\x00nul inside",
    "lone \ud800 surrogate",
    "true",
    "",
    *[f"value {n % 37}" for n in range(300)],
    "'s3cr3t'",
    "2024-01-02T03:04:05Z",
    ["list", "of", "s3cr3t"],
    {"key": "value 3"},
    1.5,
    "<v2>",
]


def _masked(tok: Tokenizer) -> list[object]:
    out = [tok.mask(v) for v in VALUES]
    out.append(tok.mask_new("value never seen"))
    out.append(tok.token("value 5", "sql"))
    out.append(tok.token("a new sql text", "sql"))
    return out


@pytest.mark.parametrize("keep_tokens", [False, True])
@pytest.mark.parametrize("bloom_bits", [12, 1 << 20])  # (the second outgrows its filter)
def test_spilled_tokens_are_the_tokens_held_in_memory(
    monkeypatch: pytest.MonkeyPatch, keep_tokens: bool, bloom_bits: int
) -> None:
    held = Tokenizer(["allowed"], start=3, keep_tokens=keep_tokens)
    expected = _masked(held)
    monkeypatch.setattr(tokens_module, "SPILL_AT", 4)
    monkeypatch.setattr(tokens_module, "_BLOOM_BITS_PER_KEY", bloom_bits)
    spilled = Tokenizer(["allowed"], start=3, keep_tokens=keep_tokens)
    assert _masked(spilled) == expected
    assert (spilled.count, spilled.new) == (held.count, held.new)
    assert spilled._spilled is not None  # (it did spill, many times)
    assert (spilled._spilled.bits > 1 << 23) == (bloom_bits > 12)
    assert len(spilled._tokens) < 4 and len(spilled.memo) <= 4
    # every value masked again: the same tokens, read back from the file
    assert _masked(spilled) == _masked(held)


def test_a_small_file_never_spills() -> None:
    tok = Tokenizer()
    for n in range(1000):
        tok.mask(f"value {n}")
    assert tok._spilled is None


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    generated = make_corpus(tmp_path_factory.mktemp("gen"), 3, 0.6, 13, "--ext", ".appmap.json")
    return [*corpus_recordings()[:6], *generated]


def test_sanitize_with_a_spilled_table_writes_the_same_bytes(
    recordings: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream_module, "_CHUNK", 4096)
    expected = {}
    for path in recordings:
        expected[path] = sanitize_bytes(path.read_bytes(), SanitizeOptions(), "x")
    monkeypatch.setattr(tokens_module, "SPILL_AT", 50)
    streamed = 0
    for path in recordings:
        raw = path.read_bytes()
        whole, report = sanitize_bytes(raw, SanitizeOptions(), "x")
        assert whole == expected[path][0], path
        assert report.values_tokenized == expected[path][1].values_tokenized
        out = tmp_path / "out.json"
        big = sanitize_big(path, out, threshold=0)  # (a block of events at a time)
        if big is not None:
            streamed += 1
            assert out.read_bytes() == expected[path][0], path
    assert streamed >= 1
    # the generated recordings hold thousands of distinct values: their tables spilled
    assert max(expected[p][1].values_tokenized for p in recordings) > 50 * 10
