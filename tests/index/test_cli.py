"""`tracetool index` on the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from tests.index.conftest import rows
from tracetool.cli import cli
from tracetool.index import default_query_db


def test_index_reads_trace_dir_from_trace_yml(tmp_path: Path, shop: Path, home: Path) -> None:
    project = tmp_path
    (project / "trace.yml").write_text("name: shop\ntrace_dir: trace\n")
    result = CliRunner().invoke(cli, ["index", "-d", str(project)])
    assert result.exit_code == 0, result.output
    qdb = default_query_db(shop)
    assert str(qdb).startswith(str(home))
    assert result.stdout.startswith(f"Indexed 4 recordings in {shop.resolve()} (4 added, ")
    assert result.stdout.rstrip().endswith(f"query database: {qdb}")
    assert rows(qdb, "SELECT count(*) FROM recordings") == [(4,)]


def test_skips_warn_once_each_and_strict_fails(shop: Path, qdb: Path) -> None:
    (shop / "broken.trace.json").write_text('{"events": [')
    args = ["index", "--trace-dir", str(shop), "--query-db", str(qdb)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1
    assert warnings[0].startswith("warning: skipped broken.trace.json: not valid JSON")
    assert "4 added" in result.stdout and "1 skipped" in result.stdout
    strict = CliRunner().invoke(cli, [*args, "--strict"])
    assert strict.exit_code == 1
    assert "warning: skipped broken.trace.json" in strict.stderr


def test_json_and_verbose_output(shop: Path, qdb: Path) -> None:
    args = ["index", "--trace-dir", str(shop), "--query-db", str(qdb), "--json", "-v"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert sorted(data["added"]) == sorted(
        [
            "feature/users_index.trace.json",
            "jobs/report_job.trace.json",
            "main/orders_create.trace.json",
            "main/users_show.trace.json",
        ]
    )
    assert data["query_db"] == str(qdb) and data["rebuilt"] is True
    assert f'Added "{shop / "main/users_show.trace.json"}"' in result.stderr
    again = CliRunner().invoke(cli, [*args[:-2]])
    assert "0 added, 0 updated, 0 renamed, 0 deleted, 4 unchanged" in again.stdout


def test_log_assistant_is_accepted_and_max_size_skips(shop: Path, qdb: Path) -> None:
    args = ["index", "--trace-dir", str(shop), "--query-db", str(qdb), "--log-assistant"]
    result = CliRunner().invoke(cli, [*args, "--max-size", "0.000001"])
    assert result.exit_code == 0
    assert result.stderr.count("too large to index in memory") == 4


def test_e2e_python_m_tracetool_index(shop: Path, qdb: Path, home: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracetool",
            "index",
            "--trace-dir",
            str(shop),
            "--query-db",
            str(qdb),
        ],
        capture_output=True,
        text=True,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    assert "4 added" in out.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "tracetool", "index", "--trace-dir", str(shop / "nope")],
        capture_output=True,
        text=True,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
    )
    assert missing.returncode == 1
    assert (
        missing.stderr.startswith("tracetool: ")
        and "no such recordings directory" in missing.stderr
    )
    assert len(missing.stderr.splitlines()) == 1
