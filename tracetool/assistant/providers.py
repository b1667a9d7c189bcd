"""AI providers behind one interface: an OpenAI-compatible chat endpoint, or offline retrieval.

Contract:

- `AIConfig.resolve(options, env)` reads `--ai-option key=value` pairs first, then the
  environment: `base_url` (`TRACETOOL_AI_BASE_URL`, `OPENAI_BASE_URL`), `model`
  (`TRACETOOL_AI_MODEL`), `key` (`TRACETOOL_AI_KEY`, `OPENAI_API_KEY`), plus `provider`
  (`openai` or `offline`), `temperature`, `max_tokens`, `stream` (default true) and `timeout`
  (seconds, default 120). Any other key is sent as-is in the request body (its value parsed as
  JSON when it is JSON, e.g. `top_p=0.9`). Without a base URL or a key the provider is offline.
- `make_provider(config, trajectory)` → a `Provider`: `answer(prompt, on_token, cancelled)`
  returns the whole answer text and calls `on_token` with each piece as it arrives.
- `OpenAIProvider` POSTs `{base_url}/chat/completions` with `{model, messages, stream, ...}` and
  `Authorization: Bearer <key>` (no header without a key, for local servers); with `stream`
  it reads server-sent events (`data: {...}` lines, `data: [DONE]`) and joins
  `choices[0].delta.content`; otherwise it reads `choices[0].message.content`. HTTP and network
  failures raise `AssistantError` with one line naming the URL and the provider's message.
- `OfflineProvider` uses no language model: it writes the answer from the retrieved context
  (relevant recordings, routes, queries, call paths, exceptions) and its first line says so.
- With a trajectory, every request and response (or failure) is appended as a JSON line.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from tracetool.assistant.context import Context
from tracetool.assistant.trajectory import Trajectory
from tracetool.errors import TraceToolError, UsageError

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
OFFLINE_NOTICE = (
    "No language model was used: this answer was assembled from the recordings index "
    "(configure one with --ai-option base_url=... model=... key=..., or TRACETOOL_AI_* variables)."
)

_KNOWN = {"provider", "base_url", "model", "key", "temperature", "max_tokens", "stream", "timeout"}
_ALIASES = {"baseUrl": "base_url", "url": "base_url", "api_key": "key", "apiKey": "key"}


class AssistantError(TraceToolError):
    """The AI provider failed or is misconfigured."""


@dataclass(frozen=True)
class AIConfig:
    provider: str = "offline"
    base_url: str | None = None
    model: str | None = None
    key: str | None = field(default=None, repr=False)
    temperature: float | None = None
    max_tokens: int | None = None
    stream: bool = True
    timeout: float = 120.0
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def resolve(cls, options: Mapping[str, str], env: Mapping[str, str]) -> AIConfig:
        opts = {_ALIASES.get(k, k): v for k, v in options.items()}

        def pick(key: str, *names: str) -> str | None:
            if opts.get(key):
                return opts[key]
            for name in names:
                if env.get(name):
                    return env[name]
            return None

        base_url = pick("base_url", "TRACETOOL_AI_BASE_URL", "OPENAI_BASE_URL")
        key = pick("key", "TRACETOOL_AI_KEY", "OPENAI_API_KEY")
        model = pick("model", "TRACETOOL_AI_MODEL")
        provider = (opts.get("provider") or ("openai" if base_url or key else "offline")).lower()
        if provider not in ("openai", "offline"):
            raise UsageError(f"--ai-option provider={provider}: expected openai or offline")
        extra = {k: _value(v) for k, v in opts.items() if k not in _KNOWN}
        try:
            return cls(
                provider=provider,
                base_url=(base_url or DEFAULT_BASE_URL).rstrip("/")
                if provider == "openai"
                else None,
                model=(model or DEFAULT_MODEL) if provider == "openai" else None,
                key=key,
                temperature=float(opts["temperature"]) if opts.get("temperature") else None,
                max_tokens=int(opts["max_tokens"]) if opts.get("max_tokens") else None,
                stream=_flag(opts.get("stream", "true")),
                timeout=float(opts.get("timeout") or 120.0),
                extra=extra,
            )
        except ValueError as exc:
            raise UsageError(f"--ai-option: bad value ({exc})") from None


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _flag(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"stream={text!r} is not a boolean")


@dataclass(frozen=True)
class Prompt:
    """One request to a provider: chat messages for a model, plus what an offline answer needs."""

    messages: tuple[dict[str, str], ...]
    question: str
    context: Context
    terms: tuple[str, ...] = ()


TokenSink = Callable[[str], None]
Cancelled = Callable[[], bool]


class Provider(Protocol):
    name: str
    model: str | None

    def answer(self, prompt: Prompt, on_token: TokenSink, cancelled: Cancelled) -> str: ...


class OpenAIProvider:
    name = "openai"

    def __init__(self, config: AIConfig, trajectory: Trajectory | None = None) -> None:
        self.config = config
        self.model = config.model
        self.url = f"{config.base_url}/chat/completions"
        self.trajectory = trajectory

    def body(self, prompt: Prompt) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": list(prompt.messages),
            "stream": self.config.stream,
        }
        if self.config.temperature is not None:
            body["temperature"] = self.config.temperature
        if self.config.max_tokens is not None:
            body["max_tokens"] = self.config.max_tokens
        body.update(self.config.extra)
        return body

    def answer(self, prompt: Prompt, on_token: TokenSink, cancelled: Cancelled) -> str:
        body = self.body(prompt)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.config.key:
            headers["Authorization"] = f"Bearer {self.config.key}"
        if self.trajectory:
            self.trajectory.write("request", provider=self.name, url=self.url, body=body)
        started = time.monotonic()
        request = urllib.request.Request(
            self.url, data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        try:
            with _opener(self.url).open(request, timeout=self.config.timeout) as response:
                if body["stream"]:
                    text = self._read_stream(response, on_token, cancelled)
                else:
                    text = self._read_whole(response)
                    on_token(text)
        except urllib.error.HTTPError as exc:
            detail = _error_detail(exc.read())
            self._fail(f"AI provider at {self.url} answered HTTP {exc.code}: {detail}")
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            self._fail(f"cannot reach AI provider at {self.url}: {reason}")
        if self.trajectory:
            self.trajectory.write(
                "response",
                provider=self.name,
                model=self.model,
                content=text,
                seconds=round(time.monotonic() - started, 3),
            )
        return text

    def _fail(self, message: str) -> None:
        if self.trajectory:
            self.trajectory.write("error", provider=self.name, error=message)
        raise AssistantError(message)

    def _read_whole(self, response: Any) -> str:
        try:
            data = json.loads(response.read())
            return str(data["choices"][0]["message"]["content"] or "")
        except (ValueError, KeyError, IndexError, TypeError):
            self._fail(f"AI provider at {self.url} sent an answer without choices[0].message")
            return ""

    def _read_stream(self, response: Any, on_token: TokenSink, cancelled: Cancelled) -> str:
        pieces: list[str] = []
        for raw in response:
            if cancelled():
                break
            line = raw.decode("utf-8", errors="replace").strip()
            if not line.startswith("data:"):
                continue  # blank separators, comments, `event:` lines
            payload = line[5:].strip()
            if payload == "[DONE]":
                break
            try:
                chunk = json.loads(payload)
            except ValueError:
                continue
            if isinstance(chunk, dict) and "error" in chunk:
                self._fail(f"AI provider at {self.url} failed mid-answer: {_error_detail(payload)}")
            for choice in chunk.get("choices") or ():
                piece = (choice.get("delta") or {}).get("content") or ""
                if piece:
                    pieces.append(piece)
                    on_token(piece)
        return "".join(pieces)


def _opener(url: str) -> urllib.request.OpenerDirector:
    # A loopback endpoint (a local model server) must never go through an HTTP proxy.
    if urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1"):
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener()


def _error_detail(raw: bytes | str) -> str:
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    try:
        data = json.loads(text)
        error = data.get("error", data) if isinstance(data, dict) else data
        if isinstance(error, dict):
            text = str(error.get("message") or error)
        else:
            text = str(error)
    except ValueError:
        pass
    return " ".join(text.split())[:300] or "no details"


class OfflineProvider:
    """Answers from retrieval only (see module doc)."""

    name = "offline"
    model: str | None = None

    def __init__(self, trajectory: Trajectory | None = None) -> None:
        self.trajectory = trajectory

    def answer(self, prompt: Prompt, on_token: TokenSink, cancelled: Cancelled) -> str:
        if self.trajectory:
            self.trajectory.write(
                "request", provider=self.name, question=prompt.question, terms=list(prompt.terms)
            )
        parts = offline_answer(prompt.question, prompt.context, prompt.terms)
        for part in parts:
            if cancelled():
                break
            on_token(part)
        text = "".join(parts)
        if self.trajectory:
            self.trajectory.write("response", provider=self.name, content=text)
        return text


def offline_answer(question: str, context: Context, terms: tuple[str, ...]) -> list[str]:
    """The offline answer as paragraphs (each ends with a blank line)."""
    parts = [OFFLINE_NOTICE + "\n\n"]
    if not context.recordings:
        looked = f" for {', '.join(terms)}" if terms else ""
        parts.append(
            f"I found no recordings{looked} that match the question. Record the behaviour you "
            "are asking about (run the tests or the app with the agent), index it, and ask again.\n\n"
        )
        parts.extend(note + "\n\n" for note in context.notes)
        return parts
    top = context.recordings[0]
    parts.append(
        f"The most relevant recording is **{top.get('name') or top['path']}** (`{top['path']}`)"
        + (
            f", out of {len(context.recordings)} that match."
            if len(context.recordings) > 1
            else "."
        )
        + "\n\n"
    )
    sections = [
        ("Relevant recordings", [_recording_line(r) for r in context.recordings]),
        (
            "HTTP routes involved",
            [
                f"- `{r['method']} {r['route']}` — {r['count']} request(s), status "
                f"{', '.join(str(s) for s in r.get('statuses', [])) or 'unknown'}, "
                f"{r.get('avgMs', 0):.1f} ms on average"
                for r in context.routes
            ],
        ),
        (
            "SQL queries run",
            [
                f"- `{q['sql']}` — {q['count']}x, {q.get('totalMs', 0):.1f} ms in total"
                for q in context.queries
            ],
        ),
        (
            "Call paths",
            [
                f"- {p['recording']}: " + " → ".join(f"`{n}`" for n in p["path"])
                for p in context.call_paths
            ],
        ),
        (
            "Exceptions",
            [
                f"- `{e['class']}`: {e.get('message') or ''} (in {e['recording']})"
                for e in context.exceptions
            ],
        ),
    ]
    for title, lines in sections:
        if lines:
            parts.append(f"### {title}\n" + "\n".join(lines) + "\n\n")
    parts.extend(note + "\n\n" for note in context.notes)
    return parts


def _recording_line(rec: Mapping[str, Any]) -> str:
    bits = [f"- `{rec['path']}`"]
    if rec.get("name"):
        bits.append(f"“{rec['name']}”")
    if rec.get("testStatus"):
        bits.append(f"(test {rec['testStatus']})")
    return " ".join(bits)


def make_provider(config: AIConfig, trajectory: Trajectory | None = None) -> Provider:
    if config.provider == "openai":
        return OpenAIProvider(config, trajectory)
    return OfflineProvider(trajectory)
