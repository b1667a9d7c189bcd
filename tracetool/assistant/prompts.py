"""System prompts for the language model, and the `--prompt` file that replaces them.

Contract: `Prompts` holds the `system` prompt (who the assistant is and how to use the context)
and the `context` preamble (the line introducing retrieved runtime data). `load_prompts(path)`
reads a `--prompt` file: a YAML/JSON mapping with `system` and/or `context` keys replaces
those prompts; any other text replaces the system prompt as a whole. A missing or unreadable
file is a `UsageError` naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from tracetool.errors import UsageError

SYSTEM_PROMPT = """\
You are tracetool's assistant. You answer questions about how a software application behaves \
at runtime. Your evidence is recordings of the application's execution (trace documents in the \
AppMap format): HTTP requests it served and made, SQL queries, function calls with their \
callers, exceptions and log messages. Ground every statement in the runtime context you are \
given; cite recordings by their path and code by its class and method names. When the context \
does not contain the answer, say so and suggest what to record. Be concise; use Markdown."""

CONTEXT_PREAMBLE = "Runtime context retrieved from the recordings index:"


@dataclass(frozen=True)
class Prompts:
    system: str = SYSTEM_PROMPT
    context: str = CONTEXT_PREAMBLE


def load_prompts(path: Path | None) -> Prompts:
    if path is None:
        return Prompts()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--prompt {path}: cannot read ({exc.strerror})") from None
    if not text.strip():
        raise UsageError(f"--prompt {path}: the file is empty")
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        data = None
    prompts = Prompts()
    if isinstance(data, dict) and ({"system", "context"} & set(data)):
        for key in ("system", "context"):
            value = data.get(key)
            if value is not None and not isinstance(value, str):
                raise UsageError(f"--prompt {path}: `{key}` must be text")
        return replace(
            prompts,
            system=data.get("system") or prompts.system,
            context=data.get("context") or prompts.context,
        )
    return replace(prompts, system=text.strip())
