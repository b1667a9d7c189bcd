"""Rows of the thread store as JSON, and its schema (see `tracetool.assistant.store`)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
  id TEXT PRIMARY KEY,
  title TEXT NOT NULL DEFAULT '',
  code_editor TEXT,
  project_directories TEXT NOT NULL DEFAULT '[]',
  created_at REAL NOT NULL,
  updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
  id TEXT PRIMARY KEY,
  seq INTEGER NOT NULL,
  thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
  role TEXT NOT NULL,
  content TEXT NOT NULL,
  code_selection TEXT,
  appmaps TEXT NOT NULL DEFAULT '[]',
  reply_to TEXT,
  step TEXT,
  error TEXT,
  provider TEXT,
  created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_thread ON messages (thread_id, seq);
CREATE INDEX IF NOT EXISTS messages_reply ON messages (reply_to);
CREATE TABLE IF NOT EXISTS attachments (
  id TEXT PRIMARY KEY,
  thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
  message_id TEXT,
  uri TEXT,
  content TEXT,
  created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS pinned_items (
  id TEXT PRIMARY KEY,
  thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
  uri TEXT,
  content TEXT,
  created_at REAL NOT NULL
);
"""


def thread_json(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "title": row["title"],
        "codeEditor": row["code_editor"],
        "projectDirectories": json.loads(row["project_directories"] or "[]"),
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
        "messageCount": int(row["n"]),
    }


def attachment_json(row: sqlite3.Row) -> dict[str, Any]:
    out: dict[str, Any] = {"id": row["id"], "createdAt": row["created_at"]}
    if row["uri"]:
        out["uri"] = row["uri"]
    if row["content"] is not None:
        out["content"] = row["content"]
    if row["message_id"]:
        out["messageId"] = row["message_id"]
    return out


def pinned_json(row: sqlite3.Row) -> dict[str, Any]:
    out: dict[str, Any] = {"id": row["id"], "createdAt": row["created_at"]}
    if row["uri"]:
        out["uri"] = row["uri"]
    if row["content"] is not None:
        out["content"] = row["content"]
    return out
