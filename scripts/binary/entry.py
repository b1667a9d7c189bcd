"""Entry point of the PyInstaller build (scripts/build-binary): `tracetool` and `tracetool-lsp`.

One executable serves both: the build copies it to `tracetool-lsp` beside it, and the name it was
started under chooses the program. Nothing heavy is imported before the choice; `tracetool
--version` and `tracetool --help` alone answer before click is imported (tracetool.cli.answer_alone,
--help from tracetool/cli/help_texts.txt; benchmarks/binary_startup.py), and before
PyInstaller's runtime hooks for multiprocessing and pkgutil, which tracetool.spec defers to here.
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


def _deferred_runtime_hooks() -> None:
    """PyInstaller's runtime hooks that tracetool.spec bundles as modules instead of running them
    before this script (they import multiprocessing and pkgutil, half of a bare start-up)."""
    import importlib

    for module in ("tracetool_rth_pkgutil", "tracetool_rth_multiprocessing"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:  # run from the source tree: nothing to defer
            if exc.name != module or getattr(sys, "frozen", False):
                raise


if __name__ == "__main__":
    if _program() == "cli":
        from tracetool.cli import answer_alone

        answer_alone()  # `--version`, `--help`: answered (and ended) before the deferred hooks
    _deferred_runtime_hooks()
    if _multiprocessing_child():
        import multiprocessing

        multiprocessing.freeze_support()
    if _program() == "lsp":
        from tracetool_daemon.lsp import main as lsp_main

        sys.exit(lsp_main())
    from tracetool.cli import main

    main()
