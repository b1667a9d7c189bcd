"""`tracetool rpc`: the JSON-RPC daemon (indexes and watches the recordings it serves).

Start-up prints `{"port": N}` and `Running JSON-RPC server on port: N` on stdout; methods are
in docs/rpc.md. Each `-d DIR` is a project served: its trace.yml names its recordings
directory (default DIR/tmp/trace); without `-d`, the current directory's project
(TRACETOOL_TRACE_DIR applies when one directory is served).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tracetool.cli.common import verbose_option, version_option
from tracetool.errors import UsageError

if TYPE_CHECKING:
    from tracetool_daemon.runner import Target
    from tracetool_daemon.service import ServiceOptions

EDITOR_VARIABLES = ("TRACE_CODE_EDITOR", "TERM_PROGRAM", "TERMINAL_EMULATOR")


def parse_ai_options(values: Sequence[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--ai-option {value!r}: expected key=value")
        options[key.strip()] = text
    return options


def resolve_code_editor(option: str | None, env: Mapping[str, str]) -> str | None:
    if option:
        return option
    for name in EDITOR_VARIABLES:
        if env.get(name):
            return env[name]
    return None


def project_trace_dir(directory: Path, *, use_env: bool) -> Path:
    """The recordings directory of the project in `directory` (see module doc)."""
    from tracetool.config import DEFAULT_TRACE_DIR, ENV_TRACE_DIR, find_config_file, load_config

    env = os.environ.get(ENV_TRACE_DIR) if use_env else None
    if env:
        return (directory / env).resolve()
    file = find_config_file(directory)
    if file is not None:
        return load_config(file).trace_dir.resolve()
    return (directory / DEFAULT_TRACE_DIR).resolve()


@click.command("rpc")
@click.option(
    "-p",
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port to listen on (127.0.0.1); 0 lets the OS choose.",
)
@click.option(
    "-d",
    "--directory",
    "directories",
    multiple=True,
    metavar="DIR",
    help="Project directory to serve; may be repeated (default: the current directory).",
)
@click.option("--log-assistant", is_flag=True, help="Log assistant events to stderr.")
@click.option(
    "--ai-option",
    "ai_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="AI provider option (base_url, model, key, temperature, max_tokens, stream, ...); repeatable.",
)
@click.option(
    "--prompt",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File with custom system prompts for the language model.",
)
@click.option(
    "--code-editor",
    metavar="NAME",
    help="Active code editor (default: $TRACE_CODE_EDITOR, $TERM_PROGRAM, $TERMINAL_EMULATOR).",
)
@click.option("--thread-id", metavar="ID", help="Thread for questions that name none.")
@click.option(
    "--trajectory-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append every model request and response to this JSONL file.",
)
@verbose_option
@version_option
def command(
    port: int,
    directories: tuple[str, ...],
    log_assistant: bool,
    ai_options: tuple[str, ...],
    prompt: Path | None,
    code_editor: str | None,
    thread_id: str | None,
    trajectory_file: Path | None,
) -> int:
    """Run a JSON-RPC server over the recordings (and keep them indexed).

    \b
    Prints {"port": N} on stdout once listening; see docs/rpc.md for the methods.
    """
    from tracetool_daemon.runner import Daemon, DaemonOptions

    options = DaemonOptions(
        targets=targets_for(directories),
        port=port,
        service=service_options(
            log_assistant=log_assistant,
            ai_options=ai_options,
            prompt=prompt,
            code_editor=code_editor,
            thread_id=thread_id,
            trajectory_file=trajectory_file,
        ),
    )
    return Daemon(options).run()


def targets_for(directories: Sequence[str]) -> tuple[Target, ...]:
    from tracetool_daemon.runner import Target

    from tracetool.paths import query_db_path

    dirs = [Path(d).expanduser() for d in directories] or [Path.cwd()]
    targets: dict[Path, Target] = {}
    for d in dirs:
        if not d.is_dir():
            raise UsageError(f"-d {d}: no such directory")
        root = d.resolve()
        trace_dir = project_trace_dir(root, use_env=len(dirs) == 1)
        targets.setdefault(trace_dir, Target(root, trace_dir, query_db_path(trace_dir)))
    return tuple(targets.values())


def service_options(
    *,
    log_assistant: bool,
    ai_options: Sequence[str],
    prompt: Path | None,
    code_editor: str | None,
    thread_id: str | None,
    trajectory_file: Path | None,
) -> ServiceOptions:
    """`ServiceOptions` from the flags, checked now so a bad value fails start-up."""
    from tracetool_daemon.service import ServiceOptions

    from tracetool.assistant import AIConfig, load_prompts

    env = dict(os.environ)
    parsed = parse_ai_options(ai_options)
    AIConfig.resolve(parsed, env)
    load_prompts(prompt)
    if log_assistant:
        _log_assistant_to_stderr()
    return ServiceOptions(
        log_assistant=log_assistant,
        ai_options=parsed,
        prompt_file=prompt,
        code_editor=resolve_code_editor(code_editor, env),
        thread_id=thread_id,
        trajectory_file=trajectory_file.absolute() if trajectory_file else None,
        env=env,
    )


def _log_assistant_to_stderr() -> None:
    import logging
    import sys

    logger = logging.getLogger("tracetool.assistant")
    logger.setLevel(logging.INFO)
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("assistant: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
