"""Entry point of the PyInstaller build (scripts/build-binary): `tracetool` and `tracetool-lsp`.

One executable serves both: the build copies it to `tracetool-lsp` beside it, and the name it was
started under chooses the program. Nothing heavy is imported before the choice; `tracetool
--version` and `tracetool --help` alone answer before click is imported (--help from texts
click rendered at build time for every width; benchmarks/binary_startup.py).
"""

import os
import sys


def _program() -> str:
    name = os.path.basename(sys.argv[0] or sys.executable).lower()
    return "lsp" if name.startswith("tracetool-lsp") else "cli"


def _multiprocessing_child() -> bool:
    """A worker process started by multiprocessing (spawn / forkserver re-run this executable)."""
    args = sys.argv[1:2]
    return "--multiprocessing-fork" in sys.argv or args in (["-c"], ["-B"], ["-S"], ["-E"], ["-I"])


def _prerendered_help() -> "str | None":
    """`tracetool --help` as click renders it at this terminal's width (built by tracetool.spec).

    click's width: max(min(columns, max_content_width=100) - 2, 50), columns from COLUMNS or
    the terminal, as shutil.get_terminal_size gives them.
    """
    import shutil

    width = max(min(shutil.get_terminal_size().columns, 100) - 2, 50)
    base = getattr(sys, "_MEIPASS", os.path.dirname(os.path.abspath(__file__)))
    try:
        with open(os.path.join(base, "help", f"{width}.txt"), encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return None


if __name__ == "__main__":
    if _multiprocessing_child():
        import multiprocessing

        multiprocessing.freeze_support()
    if sys.argv[1:] == ["--version"] and _program() == "cli":
        # the same answer as click's version option, without importing click
        from tracetool import __version__

        print(__version__)
        sys.exit(0)
    if sys.argv[1:] == ["--help"] and _program() == "cli":
        text = _prerendered_help()
        if text is not None:
            sys.stdout.write(text)
            sys.exit(0)
    if _program() == "lsp":
        from tracetool_daemon.lsp import main as lsp_main

        sys.exit(lsp_main())
    from tracetool.cli import main

    main()
