"""What every command shares: the common options, the one error path, and start-up.

Common options (spec: "Options common to nearly all commands"): `--version`, `--help`,
`-v/--verbose` and `-d/--directory`. `-d` changes the working directory before any other option
is read, so relative paths in other options are taken from there.

Errors: a `TraceToolError` becomes one line on stderr, `tracetool: <message>`, and its exit code;
a click usage error keeps click's own message and exit 2; anything unexpected is reported in one
line too, and `-v` adds the traceback.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from tracetool import __version__
from tracetool.errors import TraceToolError, UsageError

F = TypeVar("F", bound=Callable[..., Any])

_state = {"verbose": False, "one_shot": False, "invoked": False, "at_once": False}


def is_verbose() -> bool:
    """Whether `-v/--verbose` was given (or TRACETOOL_VERBOSE is set)."""
    return _state["verbose"] or os.environ.get("TRACETOOL_VERBOSE", "") not in ("", "0", "false")


def _set_verbose(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    if value:
        import logging

        _state["verbose"] = True
        logging.getLogger("tracetool").setLevel(logging.DEBUG)
    return value


def _chdir(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value:
        try:
            os.chdir(value)
        except OSError as exc:
            raise UsageError(f"cannot use directory {value!r}: {exc.strerror}") from None
    return value


def verbose_option(f: F) -> F:
    return click.option(
        "-v",
        "--verbose",
        is_flag=True,
        is_eager=True,
        expose_value=False,
        callback=_set_verbose,
        help="Verbose logging (and tracebacks on errors).",
    )(f)


def directory_option(f: F) -> F:
    return click.option(
        "-d",
        "--directory",
        metavar="DIR",
        is_eager=True,
        expose_value=False,
        callback=_chdir,
        help="Working directory: run as if started in DIR.",
    )(f)


def version_option(f: F) -> F:
    return click.version_option(
        __version__, "--version", prog_name="tracetool", message="%(version)s"
    )(f)


def common_options(f: F) -> F:
    """Add `--version`, `-v/--verbose` and `-d/--directory` to a command (`--help` is click's)."""
    return version_option(verbose_option(directory_option(f)))


def _configure_logging() -> None:
    """tracetool's log records go to stderr as `LEVEL name: message`, WARNING and up (DEBUG
    with -v). (`logging` is imported here, not at start-up: `tracetool --help` never logs.)"""
    import logging

    class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
        """Writes to whatever `sys.stderr` is when a record is emitted, not the stream of the
        first command run in this process (in-process runners swap and close it)."""

        @property  # type: ignore[override]
        def stream(self) -> Any:
            return sys.stderr

        @stream.setter
        def stream(self, value: Any) -> None:
            pass

    logger = logging.getLogger("tracetool")
    if not logger.handlers:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
    # every run starts from its own flags (an earlier in-process run's -v does not stay on)
    logger.setLevel(logging.DEBUG if is_verbose() else logging.WARNING)


# import name -> the distribution that provides it, for the ones whose names differ
_DISTRIBUTIONS = {"PIL": "pillow", "yaml": "pyyaml", "simdjson": "pysimdjson"}


def missing_module_message(module: str) -> str:
    """One line naming the package to install when a command's library is missing."""
    top = module.split(".", 1)[0]
    if top in ("tracetool", "tracetool_daemon", "pytest_tracetool"):
        return (
            f"this tracetool installation is incomplete ({module} is missing): reinstall it "
            "(pipx install --force tracetool, or uv tool install --reinstall tracetool)"
        )
    dist = _DISTRIBUTIONS.get(top, top)
    return (
        f"the Python package {dist} is not installed in tracetool's environment: "
        f"install it there (pipx inject tracetool {dist}, uv tool install tracetool --with "
        f"{dist}, or pip install {dist}), or reinstall tracetool"
    )


def fail(message: str, code: int = 1) -> None:
    """Print one error line and exit."""
    click.echo(f"tracetool: {message}", err=True)
    sys.exit(code)


_DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})


def disk_full_message(exc: BaseException) -> str | None:
    """One line for an error caused by a full disk (or quota), found anywhere in the chain of
    causes: ENOSPC / EDQUOT from the OS, SQLite's "database or disk is full"."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _DISK_FULL_ERRNOS:
            where = f" writing {current.filename}" if current.filename else ""
            return f"no space left on device{where}; free some space and run again"
        text = str(current)
        if type(current).__module__.startswith("sqlite3") and "disk is full" in text:
            return (
                "no space left on device for the query database (SQLite: database or disk is "
                "full); free some space and run again"
            )
        current = current.__cause__ or current.__context__
    return None


def is_one_shot() -> bool:
    """Whether this process is the command's own (the console script), which ends when the
    command does: a command may then leave its big objects to the exit to free
    (`leave_to_exit`)."""
    return _state["one_shot"]


def leave_to_exit() -> None:
    """In a one-shot run (`is_one_shot`; elsewhere nothing): the command's big objects are left
    to the exit to free (`tracetool.trace.document.free_at_exit`), and its heap is faulted in
    ahead of its use by a helper thread (`tracetool.accel.fault_ahead`)."""
    if not is_one_shot():
        return
    from tracetool.accel import fault_ahead
    from tracetool.trace.document import free_at_exit

    free_at_exit()
    fault_ahead()


def end_at_once() -> None:
    """In a one-shot run (`is_one_shot`): the command registered no exit handler that must
    run and holds nothing the interpreter's teardown must free, so a successful run ends the
    process at once (`exit_at_once`, `run_cli`), sparing that teardown (~40 M instructions
    after `tracetool index`, most of it freeing modules and their objects one at a time)."""
    _state["at_once"] = True


def _print_traceback() -> None:
    import traceback

    traceback.print_exc()


def subcommand_invoked() -> None:
    """Called by the group when it runs a subcommand (`run_cli`: until then only the group's
    own eager options, `--version` and `--help`, have run)."""
    _state["invoked"] = True


def exit_at_once(code: int) -> None:
    """End the process with `code` without the interpreter's teardown (~10 ms of freeing
    modules and objects one at a time): standard streams flushed, logging shut down, no other
    exit handler run (see `run_cli` for when there is none to run)."""
    logging = sys.modules.get("logging")
    if logging is not None:
        logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed pipe: nothing more to write
            pass
    os._exit(code)


def run_cli(group: click.Group, argv: list[str] | None = None, one_shot: bool = False) -> Any:
    """Run `group` with tracetool's single error path; always ends in `sys.exit`.

    `one_shot`: the process ends with the command (`is_one_shot`). A successful run then ends
    it at once (`exit_at_once`) when the command left its objects to the exit
    (`tracetool.trace.document.left_to_exit`) or said so (`end_at_once`), or when no
    subcommand ran (`--version`, `--help`): none registered an exit handler."""
    _state["verbose"] = False
    _state["one_shot"] = one_shot
    _state["invoked"] = False
    _state["at_once"] = False
    if (sys.argv[1:] if argv is None else argv) != ["--help"]:  # help alone never logs
        _configure_logging()
    try:
        rv = group.main(args=argv, prog_name="tracetool", standalone_mode=False)
        code = rv if isinstance(rv, int) else 0
        # (not under a profiler or tracer, `python -m cProfile` or coverage: they write their
        # data at the interpreter's exit)
        if one_shot and sys.getprofile() is None and sys.gettrace() is None:
            document = sys.modules.get("tracetool.trace.document")
            if (
                not _state["invoked"]
                or _state["at_once"]
                or (document is not None and document.left_to_exit())
            ):
                exit_at_once(code)
        sys.exit(code)
    except TraceToolError as exc:
        if is_verbose():
            _print_traceback()
        fail(str(exc), exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except SystemExit:
        raise
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except BrokenPipeError:
        # Output piped into `head` and closed early: not an error worth a traceback.
        sys.stderr.close()
        sys.exit(0)
    except ModuleNotFoundError as exc:
        if is_verbose():
            _print_traceback()
        fail(missing_module_message(exc.name or str(exc)), 1)
    except Exception as exc:
        if is_verbose():
            _print_traceback()
        full = disk_full_message(exc)
        if full is not None:
            fail(full, 1)
        detail = f"{type(exc).__name__}: {exc}"
        fail(f"internal error: {detail} (run with -v for the traceback)", 1)
    return None
