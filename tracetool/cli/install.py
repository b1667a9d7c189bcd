"""`tracetool install`: set the agent up in the project in the current directory, step by step."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

from tracetool.cli.common import common_options


def _ask(question: str, default: bool, assume_yes: bool, interactive: bool) -> bool:
    if assume_yes:
        click.echo(f"{question} yes")
        return True
    if not interactive:
        click.echo(f"{question} {'yes' if default else 'no'} (not a terminal: default)")
        return default
    return click.confirm(question, default=default)


@click.command("install")
@common_options
@click.option(
    "-y", "--yes", "assume_yes", is_flag=True, help="Answer yes to every question (for scripts)."
)
def command(assume_yes: bool) -> None:
    """Install and configure the recording agent in this project.

    \b
    Run it in the top-level folder of your project. It shows what it found
    (project type, directory, git remote, Python), then, with your go-ahead:
      1. writes trace.yml naming the packages to record,
      2. adds tracetool as a *development* dependency (never a production one),
      3. turns recording on for tests (pytest: trace_record = true),
      4. checks that the agent loads in the project's Python,
      5. offers to commit the changed files.
    Without a terminal it takes the defaults and does not commit.
    """
    from tracetool import install
    from tracetool.cli.render import print_table

    interactive = sys.stdin.isatty()
    project = install.detect(Path.cwd())
    print_table(
        ["", ""],
        [
            ("Project type", project.type),
            ("Project directory", str(project.root)),
            ("Git remote", project.git_remote),
            ("Python", f"{project.python_version} ({project.python})"),
            ("Web frameworks", ", ".join(project.frameworks) or "none found"),
            ("Packages to record", ", ".join(project.packages) or "none found (edit trace.yml)"),
        ],
        title="tracetool install",
    )
    if not _ask("Is this the project to configure?", True, assume_yes, interactive):
        raise click.Abort()
    plan = install.plan(project)
    if not plan.edits:
        click.echo(
            "Already configured: trace.yml, the dev dependency and test recording are in place."
        )
    else:
        for edit in plan.edits:
            verb = "create" if edit.before is None else "update"
            click.echo(f"  {verb} {edit.path.relative_to(project.root)}: {edit.why}")
        if not _ask("Make these changes?", True, assume_yes, interactive):
            raise click.Abort()
        install.apply(plan)
    lock = install.lock_command(project)
    changed = [e.path for e in plan.edits]
    if (
        lock
        and plan.edits
        and _ask(f"Refresh the lock file with `{' '.join(lock)}`?", True, assume_yes, interactive)
    ):
        subprocess.run(lock, cwd=project.root, check=False)
        if project.lock_file is not None:
            changed.append(project.lock_file)
    result = install.validate(project)
    click.echo(("✓ " if result.ok else "✗ ") + result.message)
    in_git = (project.root / ".git").exists()
    if (
        changed
        and in_git
        and _ask("Commit the changed files to git?", False, assume_yes, interactive)
    ):
        paths = [str(p.relative_to(project.root)) for p in changed]
        subprocess.run(["git", "add", "--", *paths], cwd=project.root, check=True)
        subprocess.run(
            ["git", "commit", "-q", "-m", "Record runtime behaviour with tracetool", "--", *paths],
            cwd=project.root,
            check=True,
        )
        click.echo("Committed: " + ", ".join(paths))
    if not result.ok:
        raise SystemExit(1)
    click.echo(
        "\ntracetool is installed. Next, record:\n"
        "  pytest                         # one recording per test in tmp/trace/pytest/\n"
        "  TRACETOOL=true <run your app>  # then POST/DELETE /_trace/record around what you do\n"
        "  tracetool index && tracetool query endpoints"
    )
