"""The assistant: `explain`, `explain.status` and conversation threads (`thread.*`)."""

from __future__ import annotations

from typing import Any

from tracetool_daemon.methods._params import opt_int, opt_str, req_str, str_list
from tracetool_daemon.registry import ParamError, method
from tracetool_daemon.service import Service


@method(
    "explain",
    summary="Ask a question about the recorded behaviour; answered in the background.",
    params="{question, codeSelection?, appmaps?: [path], threadId?}",
)
def explain(
    service: Service,
    question: Any,
    codeSelection: Any = None,
    appmaps: Any = None,
    threadId: Any = None,
) -> dict[str, str]:
    return service.assistant.ask(
        req_str(question, "question"),
        code_selection=opt_str(codeSelection, "codeSelection"),
        appmaps=str_list(appmaps, "appmaps"),
        thread_id=opt_str(threadId, "threadId"),
    )


@method(
    "explain.status",
    summary="Progress and answer of a question: step, search and context responses, explanation.",
    params="{userMessageId, threadId?}",
)
def explain_status(service: Service, userMessageId: Any, threadId: Any = None) -> dict[str, Any]:
    return service.assistant.status(
        req_str(userMessageId, "userMessageId"), opt_str(threadId, "threadId")
    )


@method(
    "thread.create",
    summary="Start a conversation thread (optionally with a chosen id and title).",
    params="{threadId?, title?}",
)
def create(service: Service, threadId: Any = None, title: Any = None) -> dict[str, Any]:
    a = service.assistant
    return a.store.create_thread(
        opt_str(threadId, "threadId"),
        title=opt_str(title, "title") or "",
        code_editor=a.options.code_editor,
        project_directories=a.options.project_directories,
    )


@method(
    "thread.list",
    summary="Threads, most recently active first.",
    params="{limit?, offset?}",
)
def list_threads(service: Service, limit: Any = None, offset: Any = None) -> list[dict[str, Any]]:
    return service.assistant.store.query_threads(
        limit=opt_int(limit, "limit", minimum=1, maximum=10_000) or 100,
        offset=opt_int(offset, "offset") or 0,
    )


@method(
    "thread.query",
    summary="Threads matching: threadId, maxCreatedAt, projectDirectory; ordered and paged.",
    params="{threadId?, maxCreatedAt?, projectDirectory?, orderBy?: updated|created, "
    "limit?, offset?}",
)
def query(
    service: Service,
    threadId: Any = None,
    maxCreatedAt: Any = None,
    projectDirectory: Any = None,
    orderBy: Any = None,
    limit: Any = None,
    offset: Any = None,
) -> list[dict[str, Any]]:
    if maxCreatedAt is not None and (
        isinstance(maxCreatedAt, bool) or not isinstance(maxCreatedAt, (int, float))
    ):
        raise ParamError("maxCreatedAt must be a number (epoch seconds)")
    return service.assistant.store.query_threads(
        thread_id=opt_str(threadId, "threadId"),
        max_created_at=maxCreatedAt,
        project_directory=opt_str(projectDirectory, "projectDirectory"),
        order_by=opt_str(orderBy, "orderBy") or "updated",
        limit=opt_int(limit, "limit", minimum=1, maximum=10_000) or 100,
        offset=opt_int(offset, "offset") or 0,
    )


@method(
    "thread.get",
    summary="A thread with its message history, pinned items and pending attachments.",
    params="{threadId}",
)
def get(service: Service, threadId: Any) -> dict[str, Any]:
    store = service.assistant.store
    tid = req_str(threadId, "threadId")
    return {
        "thread": store.thread(tid),
        "messages": store.messages(tid),
        "pinnedItems": store.pinned(tid),
        "pendingAttachments": store.pending_attachments(tid),
    }


@method(
    "thread.sendMessage",
    summary="Ask in an existing thread (like explain); follow it with explain.status.",
    params="{threadId, content, codeSelection?, appmaps?}",
)
def send_message(
    service: Service,
    threadId: Any,
    content: Any,
    codeSelection: Any = None,
    appmaps: Any = None,
) -> dict[str, str]:
    return service.assistant.ask(
        req_str(content, "content"),
        code_selection=opt_str(codeSelection, "codeSelection"),
        appmaps=str_list(appmaps, "appmaps"),
        thread_id=req_str(threadId, "threadId"),
        new_thread=False,
    )


@method(
    "thread.stopCompletion",
    summary="Stop the answers being written in a thread.",
    params="{threadId}",
)
def stop(service: Service, threadId: Any) -> dict[str, bool]:
    return {"stopped": service.assistant.stop(req_str(threadId, "threadId"))}


@method(
    "thread.pinItem",
    summary="Pin an item (uri and/or content) to a thread: it goes into every prompt.",
    params="{threadId, uri?, content?}",
)
def pin(service: Service, threadId: Any, uri: Any = None, content: Any = None) -> dict[str, Any]:
    return service.assistant.store.pin(
        req_str(threadId, "threadId"),
        uri=opt_str(uri, "uri"),
        content=opt_str(content, "content"),
    )


@method(
    "thread.unpinItem",
    summary="Unpin an item by uri or id.",
    params="{threadId, uri? | id?}",
)
def unpin(service: Service, threadId: Any, uri: Any = None, id: Any = None) -> dict[str, bool]:
    removed = service.assistant.store.unpin(
        req_str(threadId, "threadId"), uri=opt_str(uri, "uri"), item_id=opt_str(id, "id")
    )
    return {"removed": removed}


@method(
    "thread.addMessageAttachment",
    summary="Attach a uri and/or content to the thread's next message (or to messageId).",
    params="{threadId, uri?, content?, messageId?}",
)
def add_attachment(
    service: Service,
    threadId: Any,
    uri: Any = None,
    content: Any = None,
    messageId: Any = None,
) -> dict[str, Any]:
    return service.assistant.store.add_attachment(
        req_str(threadId, "threadId"),
        uri=opt_str(uri, "uri"),
        content=opt_str(content, "content"),
        message_id=opt_str(messageId, "messageId"),
    )


@method(
    "thread.removeMessageAttachment",
    summary="Remove an attachment by id.",
    params="{threadId, attachmentId}",
)
def remove_attachment(service: Service, threadId: Any, attachmentId: Any) -> dict[str, bool]:
    removed = service.assistant.store.remove_attachment(
        req_str(threadId, "threadId"), req_str(attachmentId, "attachmentId")
    )
    return {"removed": removed}
