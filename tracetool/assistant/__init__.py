"""The assistant: questions about recorded behaviour, answered in persistent threads.

Public API (the daemon's JSON-RPC methods use these):

- `Assistant(store, retriever, AssistantOptions(...))` — `ask`, `status`, `stop`, `wait`
  (`tracetool.assistant.explain`).
- `ThreadStore(path=None)` — threads, messages, attachments, pinned items in SQLite
  (`~/.trace/assistant.db` by default).
- `AIConfig.resolve(ai_options, os.environ)`, `make_provider`, `OpenAIProvider`,
  `OfflineProvider`, `AssistantError` (`tracetool.assistant.providers`).
- `Context`, `Retriever`, `NoRetriever`, `search_terms` (`tracetool.assistant.context`).
- `Prompts`, `load_prompts(path)` (`tracetool.assistant.prompts`); `Trajectory(path)`.

The assistant does not read the index itself: retrieval is a `Retriever` handed in by the
caller (the daemon implements it over query.db), so this package depends on nothing but the
standard library and core modules.
"""

from __future__ import annotations

from tracetool.assistant.context import Context, NoRetriever, Retriever, search_terms
from tracetool.assistant.explain import Assistant, AssistantOptions
from tracetool.assistant.prompts import Prompts, load_prompts
from tracetool.assistant.providers import (
    OFFLINE_NOTICE,
    AIConfig,
    AssistantError,
    OfflineProvider,
    OpenAIProvider,
    Prompt,
    Provider,
    make_provider,
)
from tracetool.assistant.store import ThreadStore, default_store_path
from tracetool.assistant.trajectory import Trajectory

__all__ = [
    "OFFLINE_NOTICE",
    "AIConfig",
    "Assistant",
    "AssistantError",
    "AssistantOptions",
    "Context",
    "NoRetriever",
    "OfflineProvider",
    "OpenAIProvider",
    "Prompt",
    "Prompts",
    "Provider",
    "Retriever",
    "ThreadStore",
    "Trajectory",
    "default_store_path",
    "load_prompts",
    "make_provider",
    "search_terms",
]
