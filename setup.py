"""Package list of the `tracetool` (tool) distribution.

The tree builds two distributions. `packages/agent/` is `tracetool-agent`: the agent, the pytest
plugin, the start-up hook and the core modules they import (its pyproject.toml lists them). This
one is everything else — CLI, index, query, daemon, LSP, MCP, UI — and depends on it, so
`build_py` leaves out every module the agent distribution ships (the two wheels never hold the
same file; the `tracetool` package directory is shared).

`daemon/` is installed under the import name `tracetool_daemon`: the bare name `daemon` belongs to
the python-daemon package, which may be installed beside us.

An editable install (`pip install -e .`, scripts/_venv.sh) maps the whole `tracetool` source
folder, agent included; scripts/_venv.sh installs `-e packages/agent` first so the dependency on
`tracetool-agent` resolves to this tree.
"""

import os
import shutil
import sys

from setuptools import Extension, find_packages, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the tool needs 3.11; this keeps an old pip's error readable
    raise SystemExit("the tracetool tool distribution needs Python 3.11 or newer")


def agent_modules():
    """(packages, modules) that the tracetool-agent distribution ships."""
    with open(os.path.join(HERE, "packages", "agent", "pyproject.toml"), "rb") as f:
        cfg = tomllib.load(f)["tool"]["setuptools"]
    modules = set(cfg["py-modules"])
    # each listed module's package __init__ ships with the agent too
    for name in list(modules):
        parts = name.split(".")
        for i in range(1, len(parts)):
            modules.add(".".join(parts[:i]) + ".__init__")
    return set(cfg["packages"]), modules


AGENT_PACKAGES, AGENT_MODULES = agent_modules()


class build_py_without_agent(build_py):
    def run(self):
        if not getattr(self, "editable_mode", False):
            self._drop_stale_agent_files()
        super().run()

    def _drop_stale_agent_files(self):
        """A reused build/ folder may hold agent files from an older layout: never ship them."""
        for name in AGENT_PACKAGES:
            shutil.rmtree(os.path.join(self.build_lib, *name.split(".")), ignore_errors=True)
        stale = [os.path.join(*m.split(".")) + ".py" for m in AGENT_MODULES]
        for path in [*stale, "tracetool-agent.pth"]:
            path = os.path.join(self.build_lib, path)
            if os.path.exists(path):
                os.remove(path)

    def find_package_modules(self, package, package_dir):
        found = super().find_package_modules(package, package_dir)
        if getattr(self, "editable_mode", False):
            return found
        return [m for m in found if f"{m[0]}.{m[1]}" not in AGENT_MODULES]


packages = [
    p
    for p in find_packages(include=["tracetool", "tracetool.*"])
    if not any(p == a or p.startswith(a + ".") for a in AGENT_PACKAGES)
]
daemon = ["tracetool_daemon"] + [f"tracetool_daemon.{p}" for p in find_packages("daemon")]

# The optional C accelerator of directory-mode stats (tracetool/_speedups.c), of the sequence
# diagram's walk (tracetool/_speedups_diagram.c) and json text (_speedups_json.c), of the
# index's walk (_speedups_extract.c), and a one-shot command's arenas faulted in ahead
# (_speedups_arena.c): a machine without a compiler builds and installs without
# it, and the pure-Python paths run instead.
# TRACETOOL_PURE_WHEEL=1 builds the pure-Python wheel (py3-none-any) that the release ships beside
# the platform one, for the platforms and Pythons it has no build for.
speedups = Extension(
    "tracetool._speedups",
    [
        "tracetool/_speedups.c",
        "tracetool/_speedups_arena.c",
        "tracetool/_speedups_diagram.c",
        "tracetool/_speedups_extract.c",
        "tracetool/_speedups_json.c",
    ],
    optional=True,
)
ext_modules = [] if os.environ.get("TRACETOOL_PURE_WHEEL") == "1" else [speedups]

setup(
    packages=packages + daemon,
    package_dir={"tracetool_daemon": "daemon"},
    cmdclass={"build_py": build_py_without_agent},
    ext_modules=ext_modules,
)
