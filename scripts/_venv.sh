# Sourced by scripts/test and scripts/demo: make ./.venv with tracetool and its extras installed.
# Both distributions of this tree, editable: the agent (packages/agent, `tracetool-agent`) first,
# so the tool's dependency on it resolves here and not on a package index.
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# shellcheck disable=SC1091
source .venv/bin/activate
stamp=.venv/.tracetool-installed
# (tracetool/_speedups*.c are compiled by the editable install: a changed one is built again)
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ] ||
  [ packages/agent/pyproject.toml -nt "$stamp" ] || [ tracetool/_speedups.c -nt "$stamp" ] ||
  [ tracetool/_speedups_diagram.c -nt "$stamp" ] || [ tracetool/_speedups_extract.c -nt "$stamp" ] ||
  [ tracetool/_speedups_json.c -nt "$stamp" ] || [ tracetool/_speedups_arena.c -nt "$stamp" ]; then
  echo "== installing tracetool[dev] into .venv"
  # (grep drops pip's notes about unused local mirror folders on some machines)
  { python -m pip install -q --disable-pip-version-check --upgrade pip &&
    python -m pip install -q --disable-pip-version-check -e packages/agent &&
    python -m pip install -q --disable-pip-version-check -e '.[dev]'; } 2>&1 |
    { grep -v -e "^WARNING: Location 'file:" -e BuildBackendWarning || true; }
  [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "pip install failed" >&2; exit 1; }
  # An editable install leaves out the agent's start-up hook, which a wheel puts in
  # site-packages: put it there, as `pip install tracetool-agent` does.
  cp packages/agent/tracetool-agent.pth \
    "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/"
  touch "$stamp"
fi
