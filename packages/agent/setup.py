"""The agent's start-up hook: `tracetool-agent.pth` must land in site-packages itself.

`build_py` copies it to the root of the build (wheels, `pip install .`) or, for
`pip install -e .`, into the root of the editable wheel. The hook imports nothing unless
`TRACETOOL` is set (see tracetool/agent/startup.py). Everything else is in pyproject.toml.
"""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "tracetool-agent.pth"
HERE = os.path.dirname(os.path.abspath(__file__))


class build_py_with_pth(build_py):
    def run(self):
        super().run()
        self.copy_file(os.path.join(HERE, PTH), os.path.join(self._pth_dir(), PTH))

    def _pth_dir(self):
        if getattr(self, "editable_mode", False):
            # editable_wheel points `install_lib` at the unpacked editable wheel's root
            return self.get_finalized_command("install").install_lib
        return self.build_lib

    def get_outputs(self, include_bytecode=1):
        outputs = super().get_outputs(include_bytecode)
        if not getattr(self, "editable_mode", False):
            outputs.append(os.path.join(self.build_lib, PTH))
        return outputs


setup(cmdclass={"build_py": build_py_with_pth})
