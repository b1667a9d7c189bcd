"""tracetool.stats and `tracetool stats`: AppMap's golden figures, pairing, streaming, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import orjson
import pytest
from click.testing import CliRunner

from tests.conftest import ROOT, SHARED, DocBuilder
from tracetool.cli import cli
from tracetool.errors import NotFoundError, UsageError
from tracetool.stats import directory_stats, recording_stats
from tracetool.stats._collect import compact_length, compact_lengths, js_length
from tracetool.trace import stream

STATS = "packages/cli/tests/unit/fixtures/stats/appmap"
MICROPOSTS = "Microposts_interface_micropost_interface.appmap.json"


def test_directory_golden(corpus: Path) -> None:
    """SOURCES.md: largest 1747637; top overhead LogDevice#write 0.020088 s over 449 calls."""
    stats = directory_stats(corpus / STATS)
    assert stats.recordings == 3
    assert [(r.path, r.size) for r in stats.largest] == [(MICROPOSTS, 1747637)]
    top = stats.functions[0]
    assert top.name == "function:logger/Logger::LogDevice#write"
    assert round(top.time, 6) == 0.020088 and top.count == 449
    assert stats.total_instrumentation == pytest.approx(sum_of_instrumentation(corpus / STATS))
    assert top.percent == pytest.approx(100 * top.time / stats.total_instrumentation)
    assert len(stats.functions) == 10
    times = [f.time for f in stats.functions]
    assert times == sorted(times, reverse=True)


def sum_of_instrumentation(directory: Path) -> float:
    total = 0.0
    for path in directory.glob("*.json"):
        for event in orjson.loads(path.read_bytes())["events"]:
            total += event.get("elapsed_instrumentation", 0) or 0
    return total


def test_single_recording_golden(corpus: Path) -> None:
    """SOURCES.md: 75 entries; first LogDevice#write, count 319, size 172419."""
    stats = recording_stats(corpus / STATS / MICROPOSTS, limit=None)
    assert stats.total_functions == 75 and len(stats.functions) == 75
    first = stats.functions[0]
    assert (first.function, first.count, first.size) == (
        "function:logger/Logger::LogDevice#write",
        319,
        172419,
    )
    assert first.location and first.location.endswith("logger/log_device.rb:31")
    sizes = [f.size for f in stats.functions]
    assert sizes == sorted(sizes, reverse=True)
    assert len(recording_stats(corpus / STATS / MICROPOSTS).functions) == 10


def test_streamed_reading_gives_the_same_figures(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole_dir = directory_stats(corpus / STATS, workers=1)
    whole_one = recording_stats(corpus / STATS / MICROPOSTS, limit=None)
    monkeypatch.setattr(stream, "STREAM_THRESHOLD", 1024)
    assert directory_stats(corpus / STATS, workers=1) == whole_dir
    assert recording_stats(corpus / STATS / MICROPOSTS, limit=None) == whole_one


def test_workers_do_not_change_the_result(corpus: Path) -> None:
    root = corpus / "packages"
    assert directory_stats(root, workers=1, limit=50) == directory_stats(root, workers=2, limit=50)


def test_js_length_counts_utf16_code_units() -> None:
    for text in ("ascii", "é", "日本", "😀", "a😀b\u001b"):
        encoded = orjson.dumps(text)
        assert (
            js_length(encoded) == len(json.dumps(text, ensure_ascii=False).encode("utf-16-le")) // 2
        )


@pytest.mark.parametrize(
    "text",
    [
        b'{"id":1,"event":"call","lineno":12,"static":false,"path":"a.rb"}',
        b'{ "id" : 1 ,\n "event" : "call", "v": [1, 2, {"a": null}] }',
        b'{"a":2.50,"b":1e5,"c":-0,"d":1.0}',
        b'{"a":[-0],"b":{"c":-0}}',
        b'{"a":12345678901234567890}',
        b'{"s":"caf\\u00e9 \\/ \\u000a \\u001b \\n \\" \\\\ \\t"}',
        b'{"s":"\\\\u0041 \\\\/"}',
        b'{"s":"1.5, 2e3 :-0, [3.25]","n":-12}',
        '{"s":"日本 😀 é"}'.encode(),
    ],
)
def test_compact_length_is_the_length_of_orjsons_text(text: bytes) -> None:
    """Sizes come from the event's own text unless orjson would write it otherwise."""
    assert compact_length(text) == js_length(orjson.dumps(orjson.loads(text)))


_TEXTS = [
    b'{"id":1,"event":"call","lineno":12,"static":false,"path":"a.rb"}',
    b'{ "id" : 1 ,\n "event" : "call", "v": [1, 2, {"a": null}] }',
    b'{"a":2.50,"b":1e5,"c":-0,"d":1.0}',
    b'{"a":[-0],"b":{"c":-0}}',
    b'{"a":12345678901234567890}',
    b'{"s":"caf\\u00e9 \\/ \\n"}',
    '{"s":"日本 😀 é"}'.encode(),
]


@pytest.mark.parametrize("risky", [None, *range(len(_TEXTS))])
def test_batched_sizes_equal_one_by_one(risky: int | None) -> None:
    """A batch is sized as its texts one by one, with or without a text orjson rewrites."""
    texts = [_TEXTS[0], _TEXTS[1], _TEXTS[0]] + ([_TEXTS[risky]] if risky is not None else [])
    assert compact_lengths(texts) == [compact_length(t) for t in texts]


@pytest.mark.parametrize("risky", [None, *range(len(_TEXTS))])
def test_batched_sizes_of_raw_texts(risky: int | None) -> None:
    """Texts as the reader gives them (`msgspec.Raw`), compact ones among them (formatted as a
    batch), over more than one batch."""
    compact = [_TEXTS[0], _TEXTS[-1]]
    texts = [msgspec.Raw(t) for t in compact * 700 + ([_TEXTS[risky]] if risky is not None else [])]
    assert compact_lengths(texts) == [compact_length(bytes(t)) for t in texts]


def test_batched_sizes_where_few_texts_hold_whitespace() -> None:
    """Only the texts with a whitespace byte are formatted: wherever they sit in a batch."""
    spaced = [b'{ "a" : 1 }', b'{"a":\n[1,\t2]\r}', b'{"s":"a b"}', b'{"s":"\\t"}']
    for first in (0, 1, 500, 1023, 1024, 1593):
        texts = [msgspec.Raw(_TEXTS[0])] * 1600
        for n, text in enumerate(spaced):
            texts[first + n * 2] = msgspec.Raw(text)
        assert compact_lengths(texts) == [compact_length(bytes(t)) for t in texts]


def test_recording_sizes_agree_with_reencoding_every_call(corpus: Path) -> None:
    path = corpus / STATS / MICROPOSTS
    doc = orjson.loads(path.read_bytes())
    sizes: dict[tuple[object, ...], int] = {}
    for event in doc["events"]:
        if event.get("event") != "call" or "sql_query" in event or "http_server_request" in event:
            continue
        if "http_client_request" in event:
            continue
        key = tuple(event.get(k) for k in ("defined_class", "method_id", "path", "lineno"))
        sizes[key] = sizes.get(key, 0) + js_length(orjson.dumps(event))
    stats = recording_stats(path, limit=None)
    assert sum(f.size for f in stats.functions) == sum(sizes.values())


def _write(doc: dict[str, object], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(doc))
    return path


def test_pairing_rules_and_what_is_counted(tmp_path: Path) -> None:
    b = DocBuilder()
    b.class_map = [
        {
            "name": "app",
            "type": "package",
            "children": [
                {
                    "name": "Cart",
                    "type": "class",
                    "children": [
                        {
                            "name": "total",
                            "type": "function",
                            "location": "app/cart.py:3",
                            "static": False,
                        }
                    ],
                }
            ],
        }
    ]
    outer = b.function("Cart", "total", "app/cart.py", 3)
    inner = b.function("Cart", "total", "app/cart.py", 3)
    b.function("Cart", "total", "app/cart.py", 3)  # never returns: not counted
    b.ret(inner, elapsed_instrumentation=0.25)
    b.events.append({"id": 50, "event": "return", "thread_id": 1, "elapsed_instrumentation": 0.5})
    sql = b.call(sql_query={"sql": "SELECT * FROM carts WHERE id = 7", "database_type": "sqlite"})
    b.ret(sql, elapsed_instrumentation=0.125)
    sql2 = b.call(sql_query={"sql": "SELECT * FROM carts WHERE id = 8", "database_type": "sqlite"})
    b.ret(sql2)
    route = b.call(http_server_request={"request_method": "GET", "path_info": "/cart"})
    b.ret(route, http_server_response={"status_code": 200}, elapsed_instrumentation="junk")
    del outer
    stats = directory_stats(_write(b.doc(), tmp_path / "a.trace.json").parent)
    rows = {f.name: (f.count, f.time) for f in stats.functions}
    assert rows == {
        "function:app/Cart#total": (2, 0.75),  # the return without parent_id closes the outer
        "query:SELECT * FROM carts WHERE id = ?": (2, 0.125),
    }
    assert stats.total_instrumentation == pytest.approx(0.875)


def test_no_instrumentation_data(tmp_path: Path) -> None:
    b = DocBuilder()
    b.ret(b.function("A", "b", "a.py", 1))
    stats = directory_stats(_write(b.doc(), tmp_path / "x.trace.json").parent)
    assert stats.functions == () and stats.total_instrumentation == 0
    result = CliRunner().invoke(cli, ["stats", str(tmp_path)])
    assert result.exit_code == 0
    assert "carry no elapsed_instrumentation data" in result.stdout


def test_malformed_files_are_skipped_with_a_warning(corpus: Path, tmp_path: Path) -> None:
    directory = tmp_path / "mixed"
    directory.mkdir()
    source = corpus / STATS / MICROPOSTS
    (directory / MICROPOSTS).write_bytes(source.read_bytes())
    (directory / "broken.appmap.json").write_bytes(source.read_bytes()[:5000])
    (directory / "empty.trace.json").write_bytes(b"")
    stats = directory_stats(directory)
    assert stats.recordings == 3
    assert len(stats.warnings) == 2
    assert all(w.startswith("skipped ") for w in stats.warnings)
    assert any("broken.appmap.json: not valid JSON" in w for w in stats.warnings)
    assert stats.functions[0].name == "function:logger/Logger::LogDevice#write"
    result = CliRunner().invoke(cli, ["stats", str(directory), "-f", "json"])
    assert result.exit_code == 0
    assert result.stderr.count("warning: skipped") == 2


def test_errors(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        directory_stats(tmp_path / "absent")
    with pytest.raises(NotFoundError):
        recording_stats(tmp_path / "absent.trace.json")
    with pytest.raises(UsageError):
        directory_stats(tmp_path, limit=0)


# -- CLI --------------------------------------------------------------------------------------


def test_cli_directory_text(corpus: Path) -> None:
    result = CliRunner().invoke(cli, ["stats", str(corpus / STATS), "-l", "3"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Largest recordings (bigger than 1024 kb)" in out and "1.7 MB" in out
    assert "Total instrumentation time: 125 ms in 3 recordings" in out
    for header in ("Time", "%", "Count", "Function"):
        assert header in out
    assert "20.1 ms" in out and "16.1%" in out and "449" in out
    assert "function:logger/Logger::LogDevice#write" in out.replace("\n", "").replace("│", "")


def test_cli_directory_json_carries_the_same_rows(corpus: Path) -> None:
    result = CliRunner().invoke(cli, ["stats", "--trace-dir", str(corpus / STATS), "-f", "json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["recordings"] == 3
    assert data["largest"] == [{"path": MICROPOSTS, "size": 1747637}]
    assert data["functions"][0] == {
        "name": "function:logger/Logger::LogDevice#write",
        "time": 0.020088,
        "percent": 16.11,
        "count": 449,
    }
    assert len(data["functions"]) == 10
    assert data["total_instrumentation"] == pytest.approx(0.12472, abs=1e-6)


def test_cli_single_recording(corpus: Path) -> None:
    path = str(corpus / STATS / MICROPOSTS)
    result = CliRunner().invoke(cli, ["stats", "-a", path, "-f", "json", "-l", "2"])
    data = json.loads(result.stdout)
    assert data["total_functions"] == 75
    assert [(f["function"], f["count"], f["size"]) for f in data["functions"]] == [
        ("function:logger/Logger::LogDevice#write", 319, 172419),
        ("function:activerecord/ActiveRecord::Relation#records", 192, 81766),
    ]
    text = CliRunner().invoke(cli, ["stats", "--appmap-file", path, "--limit", "1"]).stdout
    assert "172.4 KB" in text and "319" in text and "75" in text and "1514 calls" in text


def test_cli_limit_and_argument_rules(corpus: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["stats", str(tmp_path), "-l", "0"]).exit_code == 2
    both = runner.invoke(cli, ["stats", str(tmp_path), "--trace-dir", str(corpus)])
    assert both.exit_code != 0
    result = runner.invoke(cli, ["stats", str(tmp_path)])
    assert result.exit_code == 0 and "No recordings" in result.stdout
    result = runner.invoke(cli, ["stats", str(tmp_path), "-f", "json"])
    assert json.loads(result.stdout)["recordings"] == 0


def test_cli_missing_directory_is_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tracetool", "stats", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 1
    assert proc.stderr == f"tracetool: {tmp_path / 'nope'}: no such directory\n"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_memory_stays_flat_on_a_big_recording(tmp_path: Path) -> None:
    """A ~24 MB recording is streamed: peak memory stays far below what parsing it would take."""
    subprocess.run(
        [
            sys.executable,
            str(SHARED / "tools" / "make_corpus.py"),
            "--out",
            str(tmp_path),
            "--count",
            "1",
            "--total-mb",
            "24",
            "--name",
            "big",
        ],
        check=True,
        capture_output=True,
    )
    (big,) = tmp_path.rglob("*.trace.json")
    # VmHWM is this process's own peak (ru_maxrss would include the forked pytest parent)
    code = (
        "import sys\n"
        "from tracetool.cli import main\n"
        "try:\n"
        f"    main(['stats', '-a', {str(big)!r}, '-f', 'json'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "status = open('/proc/self/status').read().split('VmHWM:')[1].split()[0]\n"
        "print(status, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert json.loads(proc.stdout)["functions"]
    peak_mb = int(proc.stderr.strip().splitlines()[-1]) / 1024
    # orjson-parsing 24 MB of events takes ~200 MB; the streamed pass stays near start-up size
    assert peak_mb < 80


def test_cli_single_malformed_recording_is_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.trace.json"
    broken.write_bytes(b'{"events": [{"id": 1, "event": "call"')
    proc = subprocess.run(
        [sys.executable, "-m", "tracetool", "stats", "-a", str(broken)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"tracetool: {broken}: not valid JSON")
    assert proc.stderr.count("\n") == 1


def test_nested_pass_pairs_as_iter_pairs() -> None:
    """The one-pass pairing of plainly nested calls (`_nested_sums`) sums exactly what
    `iter_pairs` pairs, and declines (None) every recording it would pair otherwise: random
    threads, reused ids, returns naming another call or none, SQL and HTTP calls."""
    import random

    from tracetool.stats._collect import _nested_sums, _paired_sums

    rng = random.Random(18)
    declined = 0
    for _ in range(3000):
        events: list[dict[str, object]] = []
        open_calls: list[tuple[object, object]] = []
        for number in range(1, rng.randint(2, 24)):
            thread = rng.choice([1, 1, 1, 2, "1"])
            if not open_calls or rng.random() < 0.55:
                call_id = rng.choice([number, number, number, rng.randint(1, number), None])
                call: dict[str, object] = {"id": call_id, "event": "call", "thread_id": thread}
                shape = rng.random()
                if shape < 0.15:
                    call["sql_query"] = {"sql": rng.choice(["SELECT 1", "SELECT 2"])}
                elif shape < 0.25:
                    call["http_server_request"] = {"request_method": "GET", "path_info": "/a"}
                else:
                    call.update(method_id=rng.choice(["a", "b", None]), defined_class="C")
                    call.update(path="p.rb", lineno=rng.choice([1, 2]), static=False)
                events.append(call)
                open_calls.append((call_id, thread))
                continue
            target = open_calls.pop() if rng.random() < 0.8 else rng.choice(open_calls)
            ret: dict[str, object] = {"id": number, "event": "return"}
            ret["thread_id"] = target[1] if rng.random() < 0.9 else rng.choice([1, 2])
            if rng.random() < 0.9:
                ret["parent_id"] = target[0] if rng.random() < 0.9 else rng.randint(0, number)
            ret["elapsed_instrumentation"] = rng.choice([0.001, 0.25, 3, None, True, "x"])
            events.append(ret)
        heads = [stream._head(event) for event in events]
        expected = _paired_sums(iter(heads))
        found = _nested_sums(iter(heads))
        if found is None:
            declined += 1
            continue
        assert [(k, v[0], v[1]) for k, v in found.items()] == [
            (k, v[0], v[1]) for k, v in expected.items()
        ]
    assert 0 < declined < 3000


def test_number_risk_is_the_one_regex() -> None:
    """`_number_risk` (two searches with literal prefixes) finds what `:-?0+e|:-0:|:-?0{19}`
    finds in the class-mapped text."""
    import random
    import re

    from tracetool.stats._collect import _CLASSES, _number_risk

    one = re.compile(rb":-?0+e|:-0:|:-?0{19}")
    rng = random.Random(18)
    found = 0
    for _ in range(20000):
        text = bytes(rng.choice(b",,1234.-ab") for _ in range(rng.randint(0, 30)))
        if rng.random() < 0.05:
            text += b":" + b"7" * rng.randint(17, 21)
        expected = bool(one.search(text.translate(_CLASSES)))
        assert _number_risk(text) is expected, text
        found += expected
    assert 1000 < found < 19000
