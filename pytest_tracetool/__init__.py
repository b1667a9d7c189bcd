"""pytest plugin: one named, labeled trace document per test.

Installed with tracetool (entry point ``pytest11``: ``tracetool`` = `pytest_tracetool.plugin`);
inert unless switched on. Usage::

    pytest --trace-record                      # record each test in-process (also TRACETOOL=true,
                                               #   or ini: trace_record = true)
    pytest --trace-url http://127.0.0.1:8000   # record a running app through /_trace/record
                                               #   (also TRACETOOL_URL)
    pytest --trace-record --trace-dir DIR      # where to write (default: trace.yml's trace_dir)
    pytest --trace-record --trace-record-skipped
    pytest --no-trace-record                   # off, whatever the environment says
    pytest -p no:tracetool                     # not even loaded

Each test's document is ``<trace_dir>/pytest/<file-safe node id>.trace.json`` with metadata
``name``, ``labels`` (``pytest``, the outcome, the test's markers), ``test_status``,
``test_failure``, ``source_location``, ``recorder {pytest, tests}``, ``frameworks`` and the
agent's ``app``/``language``/``git``. Modules: `plugin` (options, mode; free to import),
`session` (per-test hooks), `testmeta` (names, outcomes, metadata), `remote` (/_trace/record
client), `inprocess` (the agent), `notify` (telling a running daemon about new files).
"""
