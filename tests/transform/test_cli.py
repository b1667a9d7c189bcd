"""`tracetool trim` / `tracetool sanitize` through the real entry point: files, output, exits."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.transform.conftest import param, read_doc, write_doc
from tracetool import __version__


def _doc(secret: str = "s3cr3t-value", long: int = 300) -> dict[str, Any]:
    return {
        "version": "1.12",
        "metadata": {"name": "t", "client": {"name": "tests"}},
        "classMap": [],
        "events": [
            {
                "id": 1,
                "event": "call",
                "thread_id": 1,
                "defined_class": "A",
                "method_id": "f",
                "path": "a.py",
                "lineno": 1,
                "static": False,
                "parameters": [param("p", secret), param("q", "y" * long)],
            },
            {"id": 2, "event": "return", "thread_id": 1, "parent_id": 1, "elapsed": 0.5},
        ],
    }


@pytest.fixture
def recs(tmp_path: Path) -> list[Path]:
    return [
        write_doc(tmp_path / "in" / f"r{i}.trace.json", _doc(f"s3cr3t-{i}"), indent=True)
        for i in range(3)
    ]


# --- trim -----------------------------------------------------------------------------------------


def test_trim_in_place_prints_one_line_per_file_with_sizes_and_percentage(tt, recs) -> None:
    before = [p.stat().st_size for p in recs]
    run = tt("trim", *recs, "--max-length", "50")
    assert run.code == 0, run.err
    lines = run.out.strip().splitlines()
    assert len(lines) == 4  # three files and a total
    after = [p.stat().st_size for p in recs]
    for path, b, a, line in zip(recs, before, after, lines):
        pct = (a - b) * 100.0 / b
        assert line == f"{path}: {b:,} → {a:,} bytes ({pct:+.1f}%), 1 values trimmed"
        data = read_doc(path)
        assert data["events"][0]["parameters"][1]["value"] == "y" * 49 + "…"
        assert data["metadata"]["trimmed"] == {"version": __version__, "max_length": 50}
    assert lines[-1].startswith("3 files (3 trimmed, 0 skipped, 0 error): ")
    # written atomically: no temporary files left behind
    assert sorted(recs[0].parent.iterdir()) == sorted(recs)


def test_trim_default_cap_is_120_and_rerun_is_skipped(tt, recs) -> None:
    assert tt("trim", recs[0]).code == 0
    assert read_doc(recs[0])["metadata"]["trimmed"]["max_length"] == 120
    run = tt("trim", recs[0])
    assert run.code == 0
    assert (
        run.out.strip() == f"{recs[0]}: skipped, already trimmed to 120 characters by this version"
    )


def test_trim_larger_cap_warns_on_stderr(tt, recs) -> None:
    tt("trim", recs[0], "--max-length", "20")
    run = tt("trim", recs[0], "--max-length", "100")
    assert run.code == 0
    assert "warning:" in run.err and "cannot restore" in run.err
    assert read_doc(recs[0])["metadata"]["trimmed"]["max_length"] == 20


def test_trim_json_report(tt, recs) -> None:
    run = tt("trim", recs[0], "--json")
    assert run.code == 0
    [report] = run.json()
    assert report["file"] == str(recs[0]) and report["status"] == "trimmed"
    assert report["bytes_after"] == recs[0].stat().st_size
    assert report["values_trimmed"] == 1 and report["max_length"] == 120
    assert report["change_percent"] < 0 and report["error"] is None


def test_trim_bad_file_skipped_with_warning_others_done_exit_1(tt, recs, tmp_path) -> None:
    bad = tmp_path / "in" / "bad.trace.json"
    bad.write_bytes(b'{"events": [')
    run = tt("trim", recs[0], bad, tmp_path / "missing.trace.json")
    assert run.code == 1
    assert f"warning: skipped {bad}: not valid JSON" in run.err
    assert "missing.trace.json: no such file" in run.err
    assert "trimmed" in read_doc(recs[0])["metadata"]
    assert bad.read_bytes() == b'{"events": ['


@pytest.mark.parametrize("value", ["0", "-1", "abc"])
def test_trim_rejects_bad_cap(tt, recs, value: str) -> None:
    assert tt("trim", recs[0], "--max-length", value).code == 2


# --- files, directories, -o (both commands) -------------------------------------------------------


@pytest.mark.parametrize("command", ["trim", "sanitize"])
def test_output_dir_leaves_inputs_untouched(tt, recs, tmp_path, command: str) -> None:
    originals = [p.read_bytes() for p in recs]
    out = tmp_path / "out"
    run = tt(command, *recs, "-o", out)
    assert run.code == 0, run.err
    assert [p.read_bytes() for p in recs] == originals
    assert sorted(p.name for p in out.iterdir()) == [p.name for p in recs]
    assert f"{recs[0]} → {out / recs[0].name}: " in run.out


@pytest.mark.parametrize("command", ["trim", "sanitize"])
def test_output_dir_that_would_overwrite_an_input_is_refused(tt, recs, command: str) -> None:
    originals = [p.read_bytes() for p in recs]
    run = tt(command, *recs, "-o", recs[0].parent)
    assert run.code == 2
    assert "would overwrite the input" in run.err
    assert [p.read_bytes() for p in recs] == originals


@pytest.mark.parametrize("command", ["trim", "sanitize"])
def test_two_inputs_to_one_output_are_refused(tt, tmp_path, command: str) -> None:
    a = write_doc(tmp_path / "a" / "x.trace.json", _doc())
    b = write_doc(tmp_path / "b" / "x.trace.json", _doc())
    run = tt(command, a, b, "-o", tmp_path / "out")
    assert run.code == 2 and "would both be written to" in run.err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["trim", "sanitize"])
def test_directory_needs_recursive(tt, recs, tmp_path, command: str) -> None:
    folder = recs[0].parent
    originals = [p.read_bytes() for p in recs]
    run = tt(command, folder)
    assert run.code == 2
    assert f"{folder}: is a directory" in run.err and "--recursive" in run.err
    assert [p.read_bytes() for p in recs] == originals
    nested = write_doc(folder / "sub" / "n.trace.json", _doc())
    (folder / "notes.txt").write_text("not a recording")
    out = tmp_path / "out"
    run = tt(command, "--recursive", folder, "-o", out)
    assert run.code == 0, run.err
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert written == ["r0.trace.json", "r1.trace.json", "r2.trace.json", "sub/n.trace.json"]
    assert nested.read_bytes() == orjson.dumps(_doc())


def test_output_dir_that_is_a_file_is_refused(tt, recs, tmp_path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    assert tt("sanitize", recs[0], "-o", target).code == 2


# --- sanitize -----------------------------------------------------------------------------------


def test_sanitize_reports_distinct_values_and_sizes(tt, recs) -> None:
    before = recs[0].stat().st_size
    run = tt("sanitize", recs[0])
    assert run.code == 0, run.err
    after = recs[0].stat().st_size
    pct = (after - before) * 100.0 / before
    assert run.out.strip() == (
        f"{recs[0]}: 2 distinct values tokenized, {before:,} → {after:,} bytes ({pct:+.1f}%)"
    )
    assert b"s3cr3t" not in recs[0].read_bytes()


def test_sanitize_json_report(tt, recs) -> None:
    run = tt("sanitize", *recs[:2], "--json")
    assert run.code == 0
    reports = run.json()
    assert [r["status"] for r in reports] == ["sanitized", "sanitized"]
    assert reports[0]["values_tokenized"] == 2
    assert reports[0]["bytes_before"] > reports[0]["bytes_after"] == recs[0].stat().st_size
    for key in ("sql_parameterized", "sql_tokenized", "paths_normalized", "urls_normalized"):
        assert reports[0][key] == 0


def test_sanitize_malformed_and_unreadable_files_skipped_exit_nonzero(tt, recs, tmp_path) -> None:
    bad = tmp_path / "in" / "bad.trace.json"
    bad.write_bytes(b"[1, 2]")
    run = tt("sanitize", recs[0], bad, tmp_path / "nope.trace.json", recs[1], "--json")
    assert run.code == 1
    assert [r["status"] for r in run.json()] == ["sanitized", "error", "error", "sanitized"]
    assert f"warning: skipped {bad}: not a trace document" in run.err
    assert b"s3cr3t" not in recs[1].read_bytes()
    assert bad.read_bytes() == b"[1, 2]"


def test_sanitize_exit_0_when_already_sanitized_files_are_skipped(tt, recs) -> None:
    assert tt("sanitize", recs[0]).code == 0
    sanitized = recs[0].read_bytes()
    run = tt("sanitize", recs[0], recs[1])
    assert run.code == 0
    assert "skipped, already sanitized by this version with the same options" in run.out
    assert recs[0].read_bytes() == sanitized


def test_sanitize_skipped_file_is_still_copied_to_output_dir(tt, recs, tmp_path) -> None:
    tt("sanitize", recs[0])
    run = tt("sanitize", recs[0], "-o", tmp_path / "o")
    assert run.code == 0
    assert (tmp_path / "o" / recs[0].name).read_bytes() == recs[0].read_bytes()


def test_sanitize_allow_and_allow_file(tt, tmp_path) -> None:
    doc = _doc("keep-me")
    doc["events"][0]["parameters"].append(param("r", "also-keep"))
    doc["events"][0]["parameters"].append(param("s", "mask-me"))
    path = write_doc(tmp_path / "a.trace.json", doc)
    allow = tmp_path / "allow.txt"
    allow.write_text("# values we publish\n\nalso-keep\n")
    run = tt("sanitize", path, "--allow", "keep-me", "--allow-file", allow)
    assert run.code == 0, run.err
    data = read_doc(path)
    assert [p["value"] for p in data["events"][0]["parameters"]] == [
        "keep-me",
        "<v1>",
        "also-keep",
        "<v2>",
    ]
    assert data["metadata"]["sanitized"]["allow"] == ["also-keep", "keep-me"]


def test_sanitize_allow_file_missing_is_a_usage_error(tt, recs, tmp_path) -> None:
    run = tt("sanitize", recs[0], "--allow-file", tmp_path / "none.txt")
    assert run.code == 2


def test_sanitize_allowing_a_masked_value_warns(tt, recs) -> None:
    tt("sanitize", recs[0])
    run = tt("sanitize", recs[0], "--allow", "s3cr3t-0")
    assert run.code == 0
    assert "'s3cr3t-0'" in run.err and "stays masked" in run.err
    assert b"s3cr3t-0" not in recs[0].read_bytes()


def test_commands_listed_in_help(tt) -> None:
    run = tt("--help")
    assert "trim" in run.out and "sanitize" in run.out


@pytest.mark.e2e
def test_e2e_sanitize_and_trim_as_processes(recs, tmp_path) -> None:
    def run(*args: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tracetool", *map(str, args)], capture_output=True, text=True
        )

    bad = tmp_path / "bad.trace.json"
    bad.write_text("nope")
    done = run("sanitize", recs[0], bad)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "not valid JSON" in done.stderr
    assert "Traceback" not in done.stderr
    assert run("sanitize", recs[0]).returncode == 0
    trimmed = run("trim", "--max-length", "10", recs[1], "--json")
    assert trimmed.returncode == 0
    assert orjson.loads(trimmed.stdout)[0]["status"] == "trimmed"
    usage = run("trim", recs[0].parent)
    assert usage.returncode == 2 and "is a directory" in usage.stderr


def test_recursive_on_a_directory_without_recordings_warns(tt, tmp_path) -> None:
    (tmp_path / "empty").mkdir()
    run = tt("sanitize", "--recursive", tmp_path / "empty")
    assert run.code == 0
    assert "no recordings to process" in run.err


@pytest.mark.parametrize("seed", [0, 1])
def test_fields_of_unexpected_shapes_through_sanitize_trim_and_sequence_diagram(
    tt, tmp_path, seed: int
) -> None:
    """Issue 19: sanitize masks them (values tokenized, exit 0); trim and sequence-diagram read
    them without an internal error (a string `sql_query` used to crash the diagram)."""
    from tests.transform.planted import odd_shapes_recording

    data, secrets = odd_shapes_recording(seed)
    diagram_in = write_doc(tmp_path / "in" / "odd.appmap.json", data)
    for fmt in ("json", "plantuml"):
        run = tt("sequence-diagram", diagram_in, "-f", fmt, "--output-dir", tmp_path / "d")
        assert run.code == 0 and "internal error" not in run.err, run.err
    trimmed = write_doc(tmp_path / "t" / "odd.appmap.json", data)
    run = tt("trim", trimmed, "--max-length", "8")
    assert run.code == 0 and "internal error" not in run.err, run.err
    assert read_doc(trimmed)["events"][1]["return_value"] == secrets[0][:7] + "…"
    path = write_doc(tmp_path / "s" / "odd.appmap.json", data)
    run = tt("sanitize", path)
    assert run.code == 0, run.err
    assert "0 distinct values" not in run.out
    text = path.read_text()
    assert not any(secret in text for secret in secrets)
    run = tt("sequence-diagram", path, "-f", "json", "--output-dir", tmp_path / "d2")
    assert run.code == 0, run.err
