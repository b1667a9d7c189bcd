"""compare-report: report.md compared with AppMap's golden expectedReport.md.txt, and links."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.archive.conftest import GOLDEN_REPORT_MD, Project, copy_tree, ok, run

ANCHOR = re.compile(r'<h2 id="([^"]+)">')
# AppMap sections we do not render: they come from its scanner (findings), which we lack.
SCANNER_SECTIONS = {"security-flaws", "performance-problems", "code-antipatterns"}


def _summary_rows(md: str) -> dict[str, str]:
    rows = {}
    for line in md.splitlines():
        if line.startswith("| ") and not line.startswith(("| Summary", "| ---")):
            label, status = (cell.strip() for cell in line.strip("|").split("|")[:2])
            rows[re.sub(r"\[([^\]]+)\]\(.*\)", r"\1", label)] = status
    return rows


def test_report_of_golden_set_a_has_appmaps_structure(
    project: Project, golden_a: Path, tmp_path: Path
) -> None:
    report_dir = tmp_path / "report"
    report_dir.mkdir()
    for side in ("base", "head"):
        copy_tree(golden_a / side, report_dir / side)
    ok("compare", "-b", "base", "-h", "head", "--output-dir", str(report_dir))
    ok("compare-report", str(report_dir))
    ours = (report_dir / "report.md").read_text()
    golden = GOLDEN_REPORT_MD.read_text()

    # same sections, in the same order, where the content exists in both
    their_sections = [s for s in ANCHOR.findall(golden) if s not in SCANNER_SECTIONS]
    our_sections = ANCHOR.findall(ours)
    assert [s for s in our_sections if s in their_sections] == their_sections
    assert set(our_sections) - set(their_sections) <= {
        "sql-changes",
        "count-changes",
        "changed-appmaps",
    }
    # the summary says the same things
    theirs, mine = _summary_rows(golden), _summary_rows(ours)
    assert mine["Failed tests"] == theirs["Failed tests"]
    assert mine["API changes"] == theirs["API changes"] == ":wrench: 1 non-breaking"
    assert mine["New recordings"] == theirs["New AppMaps"] == ":star: 1 new minitest test"
    assert mine["Removed recordings"] == theirs["Removed AppMaps"]
    # identical lines for the API change, the new and the removed recording
    for line in (
        "- Add response status code `302 GET /users/{id}`",
        "[[minitest] Users profile profile display while logged in as the user]"
        "(head/minitest/Users_profile_profile_display_while_logged_in_as_the_user.appmap.json)"
        " from [`test/integration/users_profile_test.rb:24`]"
        "(test/integration/users_profile_test.rb:24)",
        "[[minitest] Relationship should be valid]"
        "(base/minitest/Relationship_should_be_valid.appmap.json)",
        "+        '302':",
        "<summary>\nDetailed OpenAPI diff\n</summary>",
    ):
        assert line in golden and line in ours, line


def test_report_reads_appmaps_own_change_report(golden_a: Path, tmp_path: Path) -> None:
    """Without compare: AppMap's change-report.json (no recordingPaths) renders too."""
    report_dir = tmp_path / "appmap"
    copy_tree(golden_a, report_dir)
    ok("compare-report", str(report_dir), "--appmap-url", "https://viewer.example/?x=1")
    md = (report_dir / "report.md").read_text()
    assert (
        "(https://viewer.example/?x=1&path=base%2Fminitest%2FRelationship_should_be_valid.appmap.json)"
        in md
    )
    assert (
        "diff%2Fminitest%2FUsers_profile_profile_display_while_anonyomus.diff.sequence.json" in md
    )
    assert "1 new minitest test" in md


def test_report_errors(tmp_path: Path) -> None:
    result = run("compare-report", str(tmp_path))
    assert result.code == 1 and "no change report" in result.stderr
    (tmp_path / "change-report.json").write_text("[1, 2")
    result = run("compare-report", str(tmp_path))
    assert result.code == 1 and "not valid JSON" in result.stderr
    (tmp_path / "change-report.json").write_text(json.dumps({"newAppMaps": []}))
    ok("compare-report", str(tmp_path))
    assert "All tests passed" in (tmp_path / "report.md").read_text()
