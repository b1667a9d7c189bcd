"""The start-up hook: inert without TRACETOOL, recording a whole process with it."""

from __future__ import annotations

import os
import re
import site
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest

from tracetool.trace.tree import build_call_tree

PTH = "tracetool-agent.pth"


def _pth_installed() -> bool:
    dirs = [*site.getsitepackages(), site.getusersitepackages()]
    return any((Path(d) / PTH).is_file() for d in dirs)


pytestmark = pytest.mark.skipif(
    not _pth_installed(), reason=f"{PTH} is not installed in this interpreter's site-packages"
)


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TRACETOOL")}
    clean.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, *args],
        cwd=str(cwd),
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


PROBE = 'import sys; print("tracetool.agent" in sys.modules, "tracetool" in sys.modules)'


@pytest.mark.parametrize("value", [None, "", "0", "false", "no"])
def test_inert_unless_tracetool_is_truthy(tmp_path: Path, value: Any) -> None:
    (tmp_path / "trace.yml").write_text("packages: [app]\n")
    env = {} if value is None else {"TRACETOOL": value}
    proc = run(["-c", PROBE], tmp_path, **env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False False"
    assert proc.stderr == ""


def test_enabled_without_trace_yml_instruments_nothing(tmp_path: Path) -> None:
    probe = "from tracetool.agent import instrument; print(instrument.mechanism())"
    proc = run(["-c", probe], tmp_path, TRACETOOL="true")
    assert (proc.returncode, proc.stdout.strip()) == (0, "None"), proc.stderr


def test_broken_trace_yml_never_breaks_the_app(tmp_path: Path) -> None:
    (tmp_path / "trace.yml").write_text("packages: {not: [valid\n")
    proc = run(["-c", "print('app ran')"], tmp_path, TRACETOOL="1")
    assert proc.returncode == 0
    assert proc.stdout.strip() == "app ran"
    assert "tracetool:" in proc.stderr and "trace.yml" in proc.stderr


def make_app(root: Path) -> None:
    (root / "app").mkdir(parents=True)
    (root / "app" / "__init__.py").write_text("")
    (root / "app" / "logic.py").write_text(
        textwrap.dedent(
            """
            import threading

            class Cart:
                def __init__(self):
                    self.items = []

                def add(self, name, price):
                    self.items.append((name, price))
                    return len(self.items)

                def total(self):
                    return sum(price for _, price in self.items)

            def checkout():
                cart = Cart()
                cart.add("tea", 3)
                cart.add("cake", 4)
                return cart.total()

            def in_thread():
                t = threading.Thread(target=checkout)
                t.start()
                t.join()
            """
        )
    )
    (root / "main.py").write_text(
        "from app.logic import checkout, in_thread\nprint(checkout())\nin_thread()\n"
    )


def test_process_recording_written_at_exit(tmp_path: Path) -> None:
    make_app(tmp_path)
    (tmp_path / "trace.yml").write_text("name: shop\ntrace_dir: out\npackages:\n  - path: app\n")
    proc = run(["main.py"], tmp_path, TRACETOOL="true", TRACETOOL_RECORD_PROCESS="true")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "7"
    files = list((tmp_path / "out" / "process").glob("*.trace.json"))
    assert len(files) == 1, proc.stderr
    assert files[0].name.startswith("shop_") and files[0].name.endswith(
        f"_{proc_pid(files[0])}.trace.json"
    )
    doc = orjson.loads(files[0].read_bytes())
    assert doc["version"] == "1.12"
    assert doc["metadata"]["recorder"] == {"name": "process", "type": "process"}
    assert doc["metadata"]["app"] == "shop"
    calls = [e for e in doc["events"] if e["event"] == "call"]
    assert [(c["defined_class"], c["method_id"], c["thread_id"]) for c in calls] == [
        ("app.logic", "checkout", 1),
        ("app.logic.Cart", "__init__", 1),
        ("app.logic.Cart", "add", 1),
        ("app.logic.Cart", "add", 1),
        ("app.logic.Cart", "total", 1),
        ("app.logic", "in_thread", 1),
        ("app.logic", "checkout", 2),
        ("app.logic.Cart", "__init__", 2),
        ("app.logic.Cart", "add", 2),
        ("app.logic.Cart", "add", 2),
        ("app.logic.Cart", "total", 2),
    ]
    roots = build_call_tree(doc["events"]).roots
    assert [len(r.children) for r in roots] == [4, 0, 4]
    assert all(r.ret is not None for r in roots)
    add = next(c for c in calls if c["method_id"] == "add")
    assert [p["name"] for p in add["parameters"]] == ["name", "price"]
    assert add["path"] == "app/logic.py"
    class_map_names = [c["name"] for c in doc["classMap"][0]["children"]]
    assert class_map_names == ["logic", "logic"]  # module functions, then its classes


def proc_pid(path: Path) -> str:
    return path.name[: -len(".trace.json")].rsplit("_", 1)[1]


def test_config_from_tracetool_config(tmp_path: Path) -> None:
    make_app(tmp_path / "proj")
    conf = tmp_path / "elsewhere.yml"
    conf.write_text(f"trace_dir: {tmp_path / 'rec'}\npackages: [app]\n")
    proc = run(
        ["main.py"],
        tmp_path / "proj",
        TRACETOOL="yes",
        TRACETOOL_RECORD_PROCESS="1",
        TRACETOOL_CONFIG=str(conf),
    )
    assert proc.returncode == 0, proc.stderr
    assert len(list((tmp_path / "rec" / "process").glob("*.trace.json"))) == 1


@pytest.mark.skipif(sys.version_info < (3, 12), reason="only one mechanism below 3.12")
def test_both_mechanisms_record_the_same(tmp_path: Path) -> None:
    docs = []
    for mechanism in ("monitoring", "rewrite"):
        root = tmp_path / mechanism
        make_app(root)
        (root / "trace.yml").write_text("trace_dir: out\npackages: [app]\n")
        proc = run(
            ["main.py"],
            root,
            TRACETOOL="1",
            TRACETOOL_RECORD_PROCESS="1",
            TRACETOOL_INSTRUMENTATION=mechanism,
        )
        assert proc.returncode == 0, proc.stderr
        (path,) = (root / "out" / "process").glob("*.trace.json")
        docs.append(orjson.loads(path.read_bytes()))

    def clean(value: dict) -> dict:
        out = {k: v for k, v in value.items() if k != "object_id"}
        out["value"] = re.sub(r"0x[0-9a-f]+", "0x?", out["value"])
        return out

    def shape(doc: dict) -> list:
        out = []
        for e in doc["events"]:
            e = {k: v for k, v in e.items() if not k.startswith("elapsed")}
            for key in ("receiver", "return_value"):
                if key in e:
                    e[key] = clean(e[key])
            if "parameters" in e:
                e["parameters"] = [clean(p) for p in e["parameters"]]
            out.append(e)
        return out

    assert shape(docs[0]) == shape(docs[1])
    assert docs[0]["classMap"] == docs[1]["classMap"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_writes_its_own_process_recording(tmp_path: Path) -> None:
    make_app(tmp_path)
    (tmp_path / "trace.yml").write_text("trace_dir: out\npackages: [app]\n")
    (tmp_path / "forking.py").write_text(
        textwrap.dedent(
            """
            import os
            from app.logic import Cart, checkout
            checkout()
            pid = os.fork()
            if pid == 0:
                Cart().add("child", 1)  # then a normal exit: atexit writes the child's file
            else:
                os.waitpid(pid, 0)
                Cart().total()
            """
        )
    )
    proc = run(["forking.py"], tmp_path, TRACETOOL="1", TRACETOOL_RECORD_PROCESS="1")
    assert proc.returncode == 0, proc.stderr
    files = sorted((tmp_path / "out" / "process").glob("*.trace.json"))
    assert len(files) == 2
    recorded = []
    for path in files:
        doc = orjson.loads(path.read_bytes())
        recorded.append(sorted(e["method_id"] for e in doc["events"] if e["event"] == "call"))
    assert sorted(recorded) == sorted(
        [
            ["__init__", "__init__", "add", "add", "checkout", "total", "total"],  # parent
            ["__init__", "add"],  # child: only what it did after the fork
        ]
    )
