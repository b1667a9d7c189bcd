"""`tracetool install`: set the agent up in the project in the current directory, step by step."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

from tracetool.cli.common import common_options

_LOCK_TIMEOUT = 1800  # seconds: resolving a large project can take minutes


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
      2. adds the agent (tracetool-agent) as a *development* dependency where
         the project keeps them (requirements-dev/-test files, poetry / uv /
         pdm groups, Pipfile); Django projects also get pytest-django,
      3. turns recording on for tests (pytest: trace_record = true, and
         DJANGO_SETTINGS_MODULE; Django: a TEST_RUNNER for manage.py test),
      4. ignores trace_dir in .gitignore,
      5. refreshes the lock file with the project's tool (uv / poetry / pdm /
         pipenv lock) when that tool is installed,
      6. checks that the agent loads and records ONE test (fails loudly if
         nothing was recorded),
      7. offers to commit the changed files (never after a failure).
    Without a terminal it takes the defaults and does not commit.
    """
    from tracetool import install
    from tracetool.cli.render import print_table

    interactive = sys.stdin.isatty()
    project = install.detect(Path.cwd())  # not a project: one error line, nothing written
    print_table(
        ["", ""],
        [
            ("Project type", project.type),
            ("Project directory", str(project.root)),
            ("Git remote", project.git_remote),
            ("Python", f"{project.python_version} ({project.python})"),
            ("Web frameworks", ", ".join(project.frameworks) or "none found"),
            ("Django settings", project.django_settings or "(not Django)"),
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
    changed = [e.path for e in plan.edits]
    lock_ok = True
    lock = install.lock_command(project)
    if (
        lock
        and plan.edits
        and _ask(f"Refresh the lock file with `{' '.join(lock)}`?", True, assume_yes, interactive)
    ):
        click.echo(f"  running {' '.join(lock)} ...")
        # its output is captured: a question it asked would hang unseen, so it reads no input
        try:
            done = subprocess.run(
                lock,
                cwd=project.root,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=_LOCK_TIMEOUT,
                check=False,
            )
            failure = f"exit {done.returncode}" if done.returncode else None
            output = done.stdout + done.stderr
        except subprocess.TimeoutExpired:
            failure, output = f"no result after {_LOCK_TIMEOUT} s", ""
        except OSError as exc:
            failure, output = "could not start", str(exc)
        if failure is None:
            if project.lock_file is not None:
                changed.append(project.lock_file)
        else:
            lock_ok = False
            tail = output.strip().splitlines()[-6:]
            click.echo(f"✗ `{' '.join(lock)}` failed ({failure}):", err=True)
            for line in tail:
                click.echo(f"    {line}", err=True)
    elif project.lock_file is not None and plan.edits and lock is None:
        click.echo(
            f"  {project.lock_file.name} was not refreshed: {project.type} is not installed; "
            f"run `{project.type} lock` yourself"
        )
    click.echo("Validating: the agent loads, and one test runs with recording ...")
    result = install.validate(project)
    click.echo(("✓ " if result.ok else "✗ ") + result.message, err=not result.ok)
    ok = result.ok and lock_ok
    in_git = (project.root / ".git").exists()
    if changed and in_git and not ok:
        click.echo("Not committing: fix the problem above, then run `tracetool install` again.")
    elif (
        changed
        and in_git
        and _ask(
            "Commit the changed files (manifest, lock file, trace.yml, ...) to git?",
            False,
            assume_yes,
            interactive,
        )
    ):
        paths = sorted({str(p.relative_to(project.root)) for p in changed})
        subprocess.run(["git", "add", "--", *paths], cwd=project.root, check=True)
        subprocess.run(
            ["git", "commit", "-q", "-m", "Record runtime behaviour with tracetool", "--", *paths],
            cwd=project.root,
            check=True,
        )
        click.echo("Committed: " + ", ".join(paths))
    if not ok:
        raise SystemExit(1)
    runner = "  python manage.py test            # one recording per test in tmp/trace/unittest/\n"
    click.echo(
        "\ntracetool is installed. Next, record:\n"
        f"  pytest                           # one recording per test in {project.trace_dir}/pytest/\n"
        + (runner if project.django_settings else "")
        + "  TRACETOOL=true <run your app>    # then POST/DELETE /_trace/record around what you do\n"
        "  tracetool index && tracetool query endpoints"
    )
