"""The assistant on its own: thread store, providers (offline and OpenAI-compatible), explain."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.conftest import FakeAI
from tracetool.assistant import (
    OFFLINE_NOTICE,
    AIConfig,
    Assistant,
    AssistantError,
    AssistantOptions,
    Context,
    OpenAIProvider,
    Prompt,
    ThreadStore,
    Trajectory,
    load_prompts,
    search_terms,
)
from tracetool.errors import NotFoundError, UsageError


class FakeRetriever:
    def __init__(self) -> None:
        self.searched: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = []

    def search(
        self, question: str, terms: Sequence[str], appmaps: Sequence[str], limit: int
    ) -> list[dict[str, Any]]:
        self.searched.append((question, tuple(terms), tuple(appmaps)))
        return [{"path": "orders/create.trace.json", "name": "create order", "score": 2.0}]

    def context(
        self, question: str, terms: Sequence[str], recordings: Sequence[dict[str, Any]]
    ) -> Context:
        return Context(
            recordings=tuple(recordings),
            routes=(
                {"method": "POST", "route": "/orders", "count": 1, "statuses": [500], "avgMs": 4.0},
            ),
            queries=({"sql": "INSERT INTO orders (total) VALUES (?)", "count": 1, "totalMs": 1.0},),
            call_paths=(
                {"recording": "orders/create.trace.json", "path": ["POST /orders", "Order.create"]},
            ),
        )


def test_search_terms_split_identifiers_and_drop_stop_words() -> None:
    assert search_terms("How does the OrderController create an order_item?") == (
        "ordercontroller",
        "order",
        "controller",
        "create",
        "order_item",
        "item",
    )


def test_store_persists_threads_messages_pins_and_attachments(tmp_path: Path) -> None:
    path = tmp_path / "assistant.db"
    store = ThreadStore(path)
    thread = store.create_thread("t1", code_editor="vscode", project_directories=["/p"])
    assert thread["id"] == "t1" and thread["messageCount"] == 0
    attachment = store.add_attachment("t1", uri="file:///a.py", content="print(1)")
    pinned = store.pin("t1", uri="file:///b.py", content="x = 1")
    mid = store.add_message("t1", "user", "Why does POST /orders fail?", step="new")
    store.add_message("t1", "assistant", "Because.", reply_to=mid)
    store.set_step(mid, "complete")
    with pytest.raises(UsageError, match="already exists"):
        store.create_thread("t1")
    store.close()

    again = ThreadStore(path)
    thread = again.thread("t1")
    assert thread["title"] == "Why does POST /orders fail?"
    assert thread["messageCount"] == 2 and thread["codeEditor"] == "vscode"
    messages = again.messages("t1")
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["step"] == "complete"
    assert messages[0]["attachments"] == [
        {**attachment, "messageId": mid}
    ]  # a pending attachment goes with the next user message
    assert again.pending_attachments("t1") == []
    assert again.pinned("t1") == [pinned]
    assert again.reply_to(mid)["content"] == "Because."
    assert again.query_threads(project_directory="/p")[0]["id"] == "t1"
    assert again.query_threads(project_directory="/other") == []
    assert again.unpin("t1", uri="file:///b.py") is True
    assert again.unpin("t1", uri="file:///b.py") is False
    assert again.remove_attachment("t1", attachment["id"]) is True
    with pytest.raises(NotFoundError):
        again.thread("nope")
    again.close()


def test_ai_config_from_options_and_environment() -> None:
    assert AIConfig.resolve({}, {}).provider == "offline"
    env = {"TRACETOOL_AI_BASE_URL": "http://127.0.0.1:9/v1/", "TRACETOOL_AI_MODEL": "m1"}
    config = AIConfig.resolve({"top_p": "0.5", "stream": "false"}, env)
    assert (config.provider, config.base_url, config.model) == (
        "openai",
        "http://127.0.0.1:9/v1",
        "m1",
    )
    assert config.stream is False and config.extra == {"top_p": 0.5}
    assert AIConfig.resolve({}, {"OPENAI_API_KEY": "k"}).base_url == "https://api.openai.com/v1"
    assert AIConfig.resolve({"model": "m2"}, env).model == "m2"  # the flag wins
    with pytest.raises(UsageError, match="provider"):
        AIConfig.resolve({"provider": "magic"}, {})
    with pytest.raises(UsageError, match="bad value"):
        AIConfig.resolve({"temperature": "hot", "key": "k"}, {})


def _prompt() -> Prompt:
    return Prompt(
        ({"role": "system", "content": "sys"}, {"role": "user", "content": "q?"}),
        "q?",
        Context(),
    )


def test_openai_provider_streams_and_writes_the_trajectory(tmp_path: Path, fake_ai: FakeAI) -> None:
    config = AIConfig.resolve({"base_url": fake_ai.base_url, "key": "sk-test", "model": "m1"}, {})
    trajectory = tmp_path / "t.jsonl"
    provider = OpenAIProvider(config, Trajectory(trajectory))
    tokens: list[str] = []
    text = provider.answer(_prompt(), tokens.append, lambda: False)
    assert text.strip() == fake_ai.reply
    assert len(tokens) == len(fake_ai.reply.split(" ")) > 1  # arrived piece by piece
    sent = fake_ai.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["Authorization"] == "Bearer sk-test"
    assert sent["body"] == {"model": "m1", "messages": list(_prompt().messages), "stream": True}
    lines = [json.loads(line) for line in trajectory.read_text().splitlines()]
    assert [line["type"] for line in lines] == ["request", "response"]
    assert lines[0]["body"]["messages"][1]["content"] == "q?"
    assert "sk-test" not in trajectory.read_text()
    assert lines[1]["content"] == text


def test_openai_provider_without_streaming_and_on_errors(fake_ai: FakeAI) -> None:
    config = AIConfig.resolve({"base_url": fake_ai.base_url, "stream": "false"}, {})
    provider = OpenAIProvider(config)
    assert provider.answer(_prompt(), lambda t: None, lambda: False) == fake_ai.reply
    assert "Authorization" not in fake_ai.requests[0]["headers"]  # no key, no header
    fake_ai.status = 503
    with pytest.raises(AssistantError, match="HTTP 503: model overloaded"):
        provider.answer(_prompt(), lambda t: None, lambda: False)
    gone = OpenAIProvider(AIConfig.resolve({"base_url": "http://127.0.0.1:9/v1"}, {}))
    with pytest.raises(AssistantError, match="cannot reach"):
        gone.answer(_prompt(), lambda t: None, lambda: False)


def _assistant(tmp_path: Path, **options: Any) -> Assistant:
    return Assistant(ThreadStore(tmp_path / "a.db"), FakeRetriever(), AssistantOptions(**options))


def test_offline_explain_runs_all_steps_and_says_no_model_was_used(tmp_path: Path) -> None:
    assistant = _assistant(tmp_path)
    ids = assistant.ask("Why does creating an order fail?", appmaps=["orders/create.trace.json"])
    assert assistant.wait(10)
    status = assistant.status(ids["userMessageId"])
    assert status["step"] == "complete" and status["threadId"] == ids["threadId"]
    answer = "".join(status["explanation"])
    assert answer.startswith(OFFLINE_NOTICE)
    assert "POST /orders" in answer and "INSERT INTO orders" in answer
    assert "Order.create" in answer
    assert status["searchResponse"]["numResults"] == 1
    assert status["vectorTerms"] == ["creating", "order", "fail"]
    assistant.store.close()

    # After a restart the answer comes from the store.
    again = _assistant(tmp_path)
    stored = again.status(ids["userMessageId"])
    assert stored["step"] == "complete" and stored["explanation"] == [answer]
    history = again.store.messages(ids["threadId"])
    assert [m["role"] for m in history] == ["user", "assistant"]


def test_prompt_holds_system_prompt_history_pins_attachments_and_selection(
    tmp_path: Path, fake_ai: FakeAI
) -> None:
    prompt_file = tmp_path / "prompt.txt"
    prompt_file.write_text("You are a terse reviewer.\n")
    config = AIConfig.resolve({"base_url": fake_ai.base_url, "model": "m"}, {})
    assistant = _assistant(
        tmp_path, ai=config, prompts=load_prompts(prompt_file), code_editor="vscode"
    )
    first = assistant.ask("What does POST /orders do?")
    assert assistant.wait(10)
    tid = first["threadId"]
    assistant.store.pin(tid, uri="file:///orders.py", content="def create(): ...")
    assistant.store.add_attachment(tid, content="traceback: IntegrityError")
    second = assistant.ask("And why 500?", thread_id=tid, code_selection="Order.create()")
    assert assistant.wait(10)
    assert assistant.status(second["userMessageId"])["step"] == "complete"
    messages = fake_ai.requests[1]["body"]["messages"]
    assert messages[0] == {
        "role": "system",
        "content": "You are a terse reviewer.\n\nThe user works in the code editor vscode.",
    }
    assert [m["role"] for m in messages[1:]] == ["user", "assistant", "user"]
    assert messages[1]["content"] == "What does POST /orders do?"
    last = messages[-1]["content"]
    for expected in (
        "POST /orders",
        "def create(): ...",
        "traceback: IntegrityError",
        "Order.create()",
        "Question: And why 500?",
    ):
        assert expected in last


def test_provider_failure_ends_in_error_step(tmp_path: Path, fake_ai: FakeAI) -> None:
    fake_ai.status = 500
    config = AIConfig.resolve({"base_url": fake_ai.base_url}, {})
    assistant = _assistant(tmp_path, ai=config)
    ids = assistant.ask("anything about orders?")
    assert assistant.wait(10)
    status = assistant.status(ids["userMessageId"])
    assert status["step"] == "error" and "HTTP 500" in status["err"]
    with pytest.raises(UsageError):
        assistant.ask("  ")
    with pytest.raises(NotFoundError):
        assistant.ask("q", thread_id="missing", new_thread=False)


def test_prompt_file_mapping_and_errors(tmp_path: Path) -> None:
    yaml_file = tmp_path / "p.yml"
    yaml_file.write_text("system: Be brief.\ncontext: 'Data:'\n")
    prompts = load_prompts(yaml_file)
    assert (prompts.system, prompts.context) == ("Be brief.", "Data:")
    with pytest.raises(UsageError, match="cannot read"):
        load_prompts(tmp_path / "missing.txt")
