"""Conversation threads in SQLite: threads, messages, attachments and pinned items.

Contract:

- One database file (default `~/.trace/assistant.db`, under HOME so threads follow the user
  across projects and daemon restarts). Schema version in `PRAGMA user_version`; WAL mode.
- A thread has an id (client-chosen or a new uuid4 hex), a title (its first question, cut to
  80 characters), the code editor and project directories it was created with, timestamps.
- Messages: `user` or `assistant`, in order; a user message records the `step` of the answer
  being produced (`new`, `search-appmaps`, `collect-context`, `explain`, `complete`, `error`)
  and its error; an assistant message names the user message it answers (`reply_to`), so the
  status of an answer survives a restart.
- Attachments (`uri` and/or `content`) are added to a thread and taken by its next user message
  (or given to a message directly); pinned items stay in every prompt of the thread until
  unpinned. Both are persisted.
- Every method is safe to call from several threads (one connection, one lock: the store is
  small and writes are rare).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tracetool.assistant.records import (
    SCHEMA,
    SCHEMA_VERSION,
    attachment_json,
    pinned_json,
    thread_json,
)
from tracetool.errors import NotFoundError, UsageError

_TITLE_LENGTH = 80


def default_store_path() -> Path:
    return Path.home() / ".trace" / "assistant.db"


def new_id() -> str:
    return uuid.uuid4().hex


def _check_id(value: str, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 200:
        raise UsageError(f"{what} must be a non-empty string of at most 200 characters")
    return value


class ThreadStore:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_store_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA foreign_keys = ON")
        self._conn.execute("PRAGMA busy_timeout = 5000")
        with self._lock:
            self._conn.executescript(SCHEMA)
            self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _tx(self, statements: Iterable[tuple[str, tuple[Any, ...]]]) -> None:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                for sql, args in statements:
                    self._conn.execute(sql, args)
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def _one(self, sql: str, args: tuple[Any, ...]) -> sqlite3.Row | None:
        with self._lock:
            row: sqlite3.Row | None = self._conn.execute(sql, args).fetchone()
            return row

    def _all(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return list(self._conn.execute(sql, args))

    # --- threads --------------------------------------------------------------------------------

    def create_thread(
        self,
        thread_id: str | None = None,
        *,
        title: str = "",
        code_editor: str | None = None,
        project_directories: Iterable[str] = (),
    ) -> dict[str, Any]:
        tid = _check_id(thread_id, "threadId") if thread_id is not None else new_id()
        now = time.time()
        with self._lock:
            if self._one("SELECT 1 FROM threads WHERE id = ?", (tid,)) is not None:
                raise UsageError(f"thread {tid} already exists")
            self._tx(
                [
                    (
                        "INSERT INTO threads (id, title, code_editor, project_directories, "
                        "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                        (
                            tid,
                            title[:_TITLE_LENGTH],
                            code_editor,
                            json.dumps(list(project_directories)),
                            now,
                            now,
                        ),
                    )
                ]
            )
        return self.thread(tid)

    def ensure_thread(self, thread_id: str | None, **kwargs: Any) -> dict[str, Any]:
        """The thread `thread_id` (created if unknown) or a new thread when None."""
        with self._lock:
            if thread_id is not None and self.has_thread(thread_id):
                return self.thread(thread_id)
            return self.create_thread(thread_id, **kwargs)

    def has_thread(self, thread_id: str) -> bool:
        return self._one("SELECT 1 FROM threads WHERE id = ?", (thread_id,)) is not None

    def thread(self, thread_id: str) -> dict[str, Any]:
        row = self._one(
            "SELECT t.*, (SELECT count(*) FROM messages m WHERE m.thread_id = t.id) AS n "
            "FROM threads t WHERE t.id = ?",
            (thread_id,),
        )
        if row is None:
            raise NotFoundError(f"no thread {thread_id}")
        return thread_json(row)

    def query_threads(
        self,
        *,
        thread_id: str | None = None,
        max_created_at: float | None = None,
        project_directory: str | None = None,
        order_by: str = "updated",
        limit: int = 100,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        where: list[str] = []
        args: list[Any] = []
        if thread_id is not None:
            where.append("t.id = ?")
            args.append(thread_id)
        if max_created_at is not None:
            where.append("t.created_at <= ?")
            args.append(max_created_at)
        if project_directory is not None:
            where.append("EXISTS (SELECT 1 FROM json_each(t.project_directories) WHERE value = ?)")
            args.append(project_directory)
        order = {"updated": "t.updated_at DESC", "created": "t.created_at DESC"}.get(order_by)
        if order is None:
            raise UsageError("orderBy must be 'updated' or 'created'")
        sql = (
            "SELECT t.*, (SELECT count(*) FROM messages m WHERE m.thread_id = t.id) AS n "
            f"FROM threads t {'WHERE ' + ' AND '.join(where) if where else ''} "
            f"ORDER BY {order}, t.id LIMIT ? OFFSET ?"
        )
        rows = self._all(sql, (*args, limit, offset))
        return [thread_json(r) for r in rows]

    def _touch(self, thread_id: str) -> tuple[str, tuple[Any, ...]]:
        return ("UPDATE threads SET updated_at = ? WHERE id = ?", (time.time(), thread_id))

    # --- messages -------------------------------------------------------------------------------

    def add_message(
        self,
        thread_id: str,
        role: str,
        content: str,
        *,
        code_selection: str | None = None,
        appmaps: Iterable[str] = (),
        reply_to: str | None = None,
        step: str | None = None,
        error: str | None = None,
        provider: str | None = None,
    ) -> str:
        mid = new_id()
        with self._lock:
            thread = self.thread(thread_id)
            seq_row = self._one(
                "SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE thread_id = ?", (thread_id,)
            )
            seq = int(seq_row[0]) if seq_row is not None else 1
            statements: list[tuple[str, tuple[Any, ...]]] = [
                (
                    "INSERT INTO messages (id, seq, thread_id, role, content, code_selection, "
                    "appmaps, reply_to, step, error, provider, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        mid,
                        seq,
                        thread_id,
                        role,
                        content,
                        code_selection,
                        json.dumps(list(appmaps)),
                        reply_to,
                        step,
                        error,
                        provider,
                        time.time(),
                    ),
                ),
                self._touch(thread_id),
            ]
            if role == "user":
                # Pending attachments belong to the next user message.
                statements.append(
                    (
                        "UPDATE attachments SET message_id = ? "
                        "WHERE thread_id = ? AND message_id IS NULL",
                        (mid, thread_id),
                    )
                )
                if not thread["title"]:
                    statements.append(
                        (
                            "UPDATE threads SET title = ? WHERE id = ?",
                            (" ".join(content.split())[:_TITLE_LENGTH], thread_id),
                        )
                    )
            self._tx(statements)
        return mid

    def set_step(self, message_id: str, step: str, error: str | None = None) -> None:
        self._tx(
            [("UPDATE messages SET step = ?, error = ? WHERE id = ?", (step, error, message_id))]
        )

    def message(self, message_id: str) -> dict[str, Any]:
        row = self._one("SELECT * FROM messages WHERE id = ?", (message_id,))
        if row is None:
            raise NotFoundError(f"no message {message_id}")
        return self._message_json(row)

    def reply_to(self, message_id: str) -> dict[str, Any] | None:
        row = self._one(
            "SELECT * FROM messages WHERE reply_to = ? ORDER BY seq DESC LIMIT 1", (message_id,)
        )
        return None if row is None else self._message_json(row)

    def messages(self, thread_id: str, *, limit: int | None = None) -> list[dict[str, Any]]:
        self.thread(thread_id)
        rows = self._all("SELECT * FROM messages WHERE thread_id = ? ORDER BY seq", (thread_id,))
        if limit is not None:
            rows = rows[-limit:]
        return [self._message_json(r) for r in rows]

    def _message_json(self, row: sqlite3.Row) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": row["id"],
            "threadId": row["thread_id"],
            "role": row["role"],
            "content": row["content"],
            "createdAt": row["created_at"],
        }
        if row["code_selection"]:
            out["codeSelection"] = row["code_selection"]
        appmaps = json.loads(row["appmaps"] or "[]")
        if appmaps:
            out["appmaps"] = appmaps
        for key, column in (("replyTo", "reply_to"), ("step", "step"), ("error", "error")):
            if row[column] is not None:
                out[key] = row[column]
        if row["provider"]:
            out["provider"] = row["provider"]
        if row["role"] == "user":
            out["attachments"] = [
                attachment_json(a)
                for a in self._all(
                    "SELECT * FROM attachments WHERE message_id = ? ORDER BY created_at, id",
                    (row["id"],),
                )
            ]
        return out

    # --- attachments and pinned items ------------------------------------------------------------

    def add_attachment(
        self,
        thread_id: str,
        *,
        uri: str | None = None,
        content: str | None = None,
        message_id: str | None = None,
    ) -> dict[str, Any]:
        if not uri and content is None:
            raise UsageError("an attachment needs a uri or content")
        self.thread(thread_id)
        if message_id is not None and self.message(message_id)["threadId"] != thread_id:
            raise NotFoundError(f"no message {message_id} in thread {thread_id}")
        aid = new_id()
        self._tx(
            [
                (
                    "INSERT INTO attachments (id, thread_id, message_id, uri, content, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (aid, thread_id, message_id, uri, content, time.time()),
                ),
                self._touch(thread_id),
            ]
        )
        row = self._one("SELECT * FROM attachments WHERE id = ?", (aid,))
        assert row is not None
        return attachment_json(row)

    def remove_attachment(self, thread_id: str, attachment_id: str) -> bool:
        with self._lock:
            self.thread(thread_id)
            found = self._one(
                "SELECT 1 FROM attachments WHERE id = ? AND thread_id = ?",
                (attachment_id, thread_id),
            )
            if found is None:
                return False
            self._tx([("DELETE FROM attachments WHERE id = ?", (attachment_id,))])
            return True

    def pending_attachments(self, thread_id: str) -> list[dict[str, Any]]:
        return [
            attachment_json(a)
            for a in self._all(
                "SELECT * FROM attachments WHERE thread_id = ? AND message_id IS NULL "
                "ORDER BY created_at, id",
                (thread_id,),
            )
        ]

    def pin(
        self, thread_id: str, *, uri: str | None = None, content: str | None = None
    ) -> dict[str, Any]:
        if not uri and content is None:
            raise UsageError("a pinned item needs a uri or content")
        with self._lock:
            self.thread(thread_id)
            if uri:
                existing = self._one(
                    "SELECT * FROM pinned_items WHERE thread_id = ? AND uri = ?", (thread_id, uri)
                )
                if existing is not None:
                    if content is not None:
                        self._tx(
                            [
                                (
                                    "UPDATE pinned_items SET content = ? WHERE id = ?",
                                    (content, existing["id"]),
                                )
                            ]
                        )
                    row = self._one("SELECT * FROM pinned_items WHERE id = ?", (existing["id"],))
                    assert row is not None
                    return pinned_json(row)
            pid = new_id()
            self._tx(
                [
                    (
                        "INSERT INTO pinned_items (id, thread_id, uri, content, created_at) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (pid, thread_id, uri, content, time.time()),
                    ),
                    self._touch(thread_id),
                ]
            )
            row = self._one("SELECT * FROM pinned_items WHERE id = ?", (pid,))
            assert row is not None
            return pinned_json(row)

    def unpin(self, thread_id: str, *, uri: str | None = None, item_id: str | None = None) -> bool:
        if not uri and not item_id:
            raise UsageError("unpinning needs the item's uri or id")
        with self._lock:
            self.thread(thread_id)
            column, value = ("id", item_id) if item_id else ("uri", uri)
            row = self._one(
                f"SELECT id FROM pinned_items WHERE thread_id = ? AND {column} = ?",
                (thread_id, value),
            )
            if row is None:
                return False
            self._tx([("DELETE FROM pinned_items WHERE id = ?", (row["id"],))])
            return True

    def pinned(self, thread_id: str) -> list[dict[str, Any]]:
        return [
            pinned_json(r)
            for r in self._all(
                "SELECT * FROM pinned_items WHERE thread_id = ? ORDER BY created_at, id",
                (thread_id,),
            )
        ]
