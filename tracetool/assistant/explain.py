"""The assistant: answer questions about recorded behaviour, in persistent threads.

Contract:

- `Assistant(store, retriever, options)`. `ask(question, ...)` stores the user message in its
  thread (a new thread, the given one, or `--thread-id`'s; an unknown id creates that thread),
  starts the answer in a background thread and returns `{userMessageId, threadId}` at once.
- The answer goes through the steps `new` → `search-appmaps` (rank recordings) →
  `collect-context` (routes, queries, call paths of the ranked ones) → `explain` (the provider
  writes, tokens arrive as they stream) → `complete`, or `error` with one line. Steps are
  persisted on the user message; the answer is persisted as an assistant message replying to it.
- `status(userMessageId)` → `{step, threadId, userMessageId, vectorTerms, searchResponse,
  contextResponse, explanation: [pieces], provider, err?, assistantMessageId?}` — live while the
  daemon runs (kept 5 minutes after the end), from the store afterwards and across restarts.
- The prompt: the system prompt (`--prompt` replaces it; the code editor is named when known),
  the thread's last `history` messages, then one user message holding the retrieved context,
  the thread's pinned items, this message's attachments, the code selection and the question.
- `stop(threadId)` cancels the running answers of a thread (they end `complete`, cut short).
- `wait(timeout)` waits for running answers (the in-process rpc-client uses it before exit).
- With `log_events`, every step is logged at INFO on the `tracetool.assistant` logger.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracetool.assistant.context import Context, Retriever, search_terms
from tracetool.assistant.prompts import Prompts
from tracetool.assistant.providers import AIConfig, Prompt, Provider, make_provider
from tracetool.assistant.store import ThreadStore
from tracetool.assistant.trajectory import Trajectory
from tracetool.errors import TraceToolError, UsageError

log = logging.getLogger("tracetool.assistant")

STEPS = ("new", "search-appmaps", "collect-context", "explain", "complete", "error")
KEEP_SECONDS = 300.0


@dataclass(frozen=True)
class AssistantOptions:
    ai: AIConfig = field(default_factory=AIConfig)
    prompts: Prompts = field(default_factory=Prompts)
    trajectory_file: Path | None = None
    log_events: bool = False
    code_editor: str | None = None
    default_thread_id: str | None = None
    project_directories: tuple[str, ...] = ()
    history: int = 20
    max_recordings: int = 5


@dataclass
class _Job:
    thread_id: str
    user_message_id: str
    step: str = "new"
    terms: tuple[str, ...] = ()
    search: list[dict[str, Any]] = field(default_factory=list)
    context: dict[str, Any] | None = None
    pieces: list[str] = field(default_factory=list)
    error: str | None = None
    assistant_message_id: str | None = None
    ended_at: float | None = None
    cancelled: bool = False


class Assistant:
    def __init__(self, store: ThreadStore, retriever: Retriever, options: AssistantOptions) -> None:
        self.store = store
        self.retriever = retriever
        self.options = options
        self.trajectory = Trajectory(options.trajectory_file) if options.trajectory_file else None
        self.provider: Provider = make_provider(options.ai, self.trajectory)
        self._jobs: dict[str, _Job] = {}
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def _event(self, message: str, *args: Any) -> None:
        if self.options.log_events:
            log.info(message, *args)

    # --- asking ---------------------------------------------------------------------------------

    def ask(
        self,
        question: str,
        *,
        code_selection: str | None = None,
        appmaps: Sequence[str] = (),
        thread_id: str | None = None,
        new_thread: bool = True,
    ) -> dict[str, str]:
        if not isinstance(question, str) or not question.strip():
            raise UsageError("question must be a non-empty string")
        if code_selection is not None and not isinstance(code_selection, str):
            raise UsageError("codeSelection must be a string")
        if not isinstance(appmaps, (list, tuple)) or not all(isinstance(a, str) for a in appmaps):
            raise UsageError("appmaps must be a list of recording paths")
        tid = thread_id or self.options.default_thread_id
        if new_thread:
            thread = self.store.ensure_thread(
                tid,
                code_editor=self.options.code_editor,
                project_directories=self.options.project_directories,
            )
        elif tid is None:
            raise UsageError("threadId is required")
        else:
            thread = self.store.thread(tid)
        mid = self.store.add_message(
            thread["id"],
            "user",
            question,
            code_selection=code_selection,
            appmaps=appmaps,
            step="new",
            provider=self.provider.name,
        )
        job = _Job(thread["id"], mid)
        with self._lock:
            self._prune()
            self._jobs[mid] = job
        self._event("question %s in thread %s: %s", mid, job.thread_id, question[:200])
        worker = threading.Thread(
            target=self._run,
            args=(job, question, code_selection, list(appmaps)),
            name=f"explain-{mid[:8]}",
        )
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(worker)
        worker.start()
        return {"userMessageId": mid, "threadId": job.thread_id}

    def _step(self, job: _Job, step: str, error: str | None = None) -> None:
        job.step = step
        job.error = error
        self.store.set_step(job.user_message_id, step, error)
        self._event("answer %s: %s%s", job.user_message_id, step, f" ({error})" if error else "")

    def _run(
        self, job: _Job, question: str, code_selection: str | None, appmaps: list[str]
    ) -> None:
        try:
            job.terms = search_terms(question + " " + (code_selection or ""))
            self._step(job, "search-appmaps")
            job.search = self.retriever.search(
                question, job.terms, appmaps, self.options.max_recordings
            )
            self._step(job, "collect-context")
            context = self.retriever.context(question, job.terms, job.search)
            job.context = context.to_json()
            self._step(job, "explain")
            prompt = self.build_prompt(job, question, code_selection, context)
            text = self.provider.answer(prompt, job.pieces.append, lambda: job.cancelled)
            job.assistant_message_id = self.store.add_message(
                job.thread_id,
                "assistant",
                text,
                reply_to=job.user_message_id,
                provider=self.provider.name,
            )
            self._step(job, "complete")
        except TraceToolError as exc:
            self._step(job, "error", str(exc))
        except Exception as exc:  # a failed answer must not take the daemon down
            log.exception("answer %s failed", job.user_message_id)
            self._step(job, "error", f"{type(exc).__name__}: {exc}")
        finally:
            job.ended_at = time.monotonic()

    def build_prompt(
        self, job: _Job, question: str, code_selection: str | None, context: Context
    ) -> Prompt:
        system = self.options.prompts.system
        if self.options.code_editor:
            system += f"\n\nThe user works in the code editor {self.options.code_editor}."
        messages: list[dict[str, str]] = [{"role": "system", "content": system}]
        history = [
            m
            for m in self.store.messages(job.thread_id)
            if m["id"] != job.user_message_id and m.get("step", "complete") != "error"
        ]
        for m in history[-self.options.history :]:
            messages.append({"role": m["role"], "content": m["content"]})
        blocks = [self.options.prompts.context, context.to_text() or "(nothing relevant found)"]
        pinned = self.store.pinned(job.thread_id)
        if pinned:
            blocks.append("Pinned items:")
            blocks.extend(_item_text(p) for p in pinned)
        attachments = self.store.message(job.user_message_id).get("attachments") or []
        if attachments:
            blocks.append("Attached:")
            blocks.extend(_item_text(a) for a in attachments)
        if code_selection:
            blocks.append(f"Selected code:\n```\n{code_selection}\n```")
        blocks.append(f"Question: {question}")
        messages.append({"role": "user", "content": "\n\n".join(blocks)})
        return Prompt(tuple(messages), question, context, job.terms)

    # --- status ---------------------------------------------------------------------------------

    def status(self, user_message_id: str, thread_id: str | None = None) -> dict[str, Any]:
        with self._lock:
            job = self._jobs.get(user_message_id)
        if job is not None:
            out: dict[str, Any] = {
                "step": job.step,
                "threadId": job.thread_id,
                "userMessageId": job.user_message_id,
                "vectorTerms": list(job.terms),
                "searchResponse": {"results": job.search, "numResults": len(job.search)},
                "contextResponse": job.context,
                "explanation": list(job.pieces),
                "provider": self.provider.name,
            }
            if job.error:
                out["err"] = job.error
            if job.assistant_message_id:
                out["assistantMessageId"] = job.assistant_message_id
            return out
        message = self.store.message(user_message_id)
        if thread_id is not None and message["threadId"] != thread_id:
            raise UsageError(f"message {user_message_id} is not in thread {thread_id}")
        if message["role"] != "user":
            raise UsageError(f"message {user_message_id} is not a question")
        reply = self.store.reply_to(user_message_id)
        step = message.get("step") or ("complete" if reply else "error")
        out = {
            "step": step,
            "threadId": message["threadId"],
            "userMessageId": user_message_id,
            "explanation": [reply["content"]] if reply else [],
            "provider": message.get("provider"),
        }
        if reply:
            out["assistantMessageId"] = reply["id"]
        if message.get("error"):
            out["err"] = message["error"]
        elif step not in ("complete", "error"):
            # Not running here and not finished: the daemon that ran it stopped mid-answer.
            out["step"] = "error"
            out["err"] = "the answer was interrupted (the daemon stopped); ask again"
        return out

    def stop(self, thread_id: str) -> bool:
        self.store.thread(thread_id)
        stopped = False
        with self._lock:
            for job in self._jobs.values():
                if job.thread_id == thread_id and job.ended_at is None:
                    job.cancelled = True
                    stopped = True
        return stopped

    def _prune(self) -> None:
        now = time.monotonic()
        for mid in [
            m for m, j in self._jobs.items() if j.ended_at and now - j.ended_at > KEEP_SECONDS
        ]:
            del self._jobs[mid]

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for running answers; True when none is left."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            threads = list(self._threads)
        for t in threads:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in threads)


def _item_text(item: dict[str, Any]) -> str:
    head = f"- {item['uri']}" if item.get("uri") else "-"
    content = item.get("content")
    return f"{head}\n{content}" if content else head
