"""The assistant through a real daemon: an OpenAI-compatible provider on 127.0.0.1, thread
persistence across a restart, and `rpc-client` with and without a daemon."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.conftest import DaemonProcess, FakeAI, daemon_env, poll

pytestmark = pytest.mark.e2e

Start = Callable[..., DaemonProcess]


def finished(d: DaemonProcess, ids: dict[str, str]) -> dict[str, Any]:
    def check() -> Any:
        status = d.call("explain.status", {"userMessageId": ids["userMessageId"]})
        return status if status["step"] in ("complete", "error") else None

    result: dict[str, Any] = poll(check)
    return result


def test_openai_provider_prompt_trajectory_and_log(
    start_daemon: Start, project: Path, fake_ai: FakeAI, tmp_path: Path, home: Path
) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Answer like a pirate.")
    trajectory = tmp_path / "out" / "trajectory.jsonl"
    d = start_daemon(
        "rpc",
        "--ai-option",
        f"base_url={fake_ai.base_url}",
        "--ai-option",
        "model=local-model",
        "--ai-option",
        "temperature=0.1",
        "--prompt",
        str(prompt),
        "--trajectory-file",
        str(trajectory),
        "--code-editor",
        "vim",
        "--log-assistant",
        cwd=project,
        env=daemon_env(home, TRACETOOL_AI_KEY="sk-local"),
    )
    poll(lambda: d.call("index.status")["state"] == "ready")
    ids = d.call(
        "explain", {"question": "Why does POST /orders fail?", "codeSelection": "Order.create"}
    )
    status = finished(d, ids)
    assert status["step"] == "complete", status
    assert "".join(status["explanation"]).strip() == fake_ai.reply
    assert status["provider"] == "openai"
    sent = fake_ai.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["Authorization"] == "Bearer sk-local"
    body = sent["body"]
    assert body["model"] == "local-model" and body["stream"] is True and body["temperature"] == 0.1
    assert body["messages"][0] == {
        "role": "system",
        "content": "Answer like a pirate.\n\nThe user works in the code editor vim.",
    }
    question = body["messages"][-1]["content"]
    assert "create order fails" in question and "POST /orders" in question
    assert "Selected code:\n```\nOrder.create\n```" in question
    lines = [json.loads(line) for line in trajectory.read_text().splitlines()]
    assert [line["type"] for line in lines] == ["request", "response"]
    assert lines[0]["body"] == body and lines[1]["content"].strip() == fake_ai.reply
    assert d.stop() == 0
    log = d.stderr_text
    assert f"assistant: question {ids['userMessageId']}" in log
    assert f"answer {ids['userMessageId']}: complete" in log


def test_threads_survive_a_restart(start_daemon: Start, project: Path) -> None:
    first = start_daemon("rpc", "--thread-id", "standing", cwd=project)
    poll(lambda: first.call("index.status")["state"] == "ready")
    ids = first.call("explain", {"question": "Which SQL does listing orders run?"})
    assert ids["threadId"] == "standing"  # --thread-id is the default thread
    answer = "".join(finished(first, ids)["explanation"])
    first.call("thread.pinItem", {"threadId": "standing", "uri": "file:///orders.py"})
    assert first.stop() == 0

    second = start_daemon("rpc", cwd=project)
    history = second.call("thread.get", {"threadId": "standing"})
    assert [m["content"] for m in history["messages"]] == [
        "Which SQL does listing orders run?",
        answer,
    ]
    assert [p["uri"] for p in history["pinnedItems"]] == ["file:///orders.py"]
    status = second.call("explain.status", {"userMessageId": ids["userMessageId"]})
    assert status["step"] == "complete" and status["explanation"] == [answer]
    assert [t["id"] for t in second.call("thread.list")] == ["standing"]


def rpc_client(
    project: Path, home: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracetool", "rpc-client", *args],
        cwd=project,
        env=daemon_env(home),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_rpc_client_in_process_and_against_the_daemon(
    start_daemon: Start, project: Path, home: Path
) -> None:
    trace = (project / "tmp" / "trace").resolve()
    # No daemon: runs in-process (index.files builds the index synchronously).
    paths = [str(p) for p in sorted(trace.rglob("*.trace.json"))]
    run = rpc_client(project, home, "index.files", "-", stdin=json.dumps({"paths": paths}))
    assert run.returncode == 0, run.stderr
    assert set(json.loads(run.stdout)["outcomes"].values()) == {"added"}
    run = rpc_client(project, home, "search", '{"query": "orders"}')
    assert run.returncode == 0 and json.loads(run.stdout)["numResults"] == 2
    # An explain in-process finishes before the command exits; its answer is stored.
    run = rpc_client(project, home, "explain", '{"question": "What does GET /users do?"}')
    ids = json.loads(run.stdout)
    run = rpc_client(
        project, home, "explain.status", json.dumps({"userMessageId": ids["userMessageId"]})
    )
    assert json.loads(run.stdout)["step"] == "complete"
    # Errors: one line, non-zero exit.
    run = rpc_client(project, home, "no.such.method")
    assert run.returncode == 1
    assert run.stderr.strip() == (
        "tracetool: Method not found: 'no.such.method' (list them with "
        "`tracetool rpc-client system.listMethods`) (JSON-RPC error -32601)"
    )
    run = rpc_client(project, home, "search", "{bad json")
    assert run.returncode == 2 and "not valid JSON" in run.stderr
    # With a daemon: the call goes to it.
    d = start_daemon("rpc", cwd=project)
    run = rpc_client(project, home, "system.version")
    assert json.loads(run.stdout)["pid"] == d.proc.pid
