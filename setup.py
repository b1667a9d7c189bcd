"""Package list: `daemon/` is installed under the import name `tracetool_daemon`.

The bare name `daemon` belongs to the python-daemon package, which may be installed beside us.
"""

from setuptools import find_packages, setup

packages = find_packages(
    include=["tracetool", "tracetool.*", "pytest_tracetool", "pytest_tracetool.*"]
)
daemon = ["tracetool_daemon"] + [f"tracetool_daemon.{p}" for p in find_packages("daemon")]

setup(packages=packages + daemon, package_dir={"tracetool_daemon": "daemon"})
