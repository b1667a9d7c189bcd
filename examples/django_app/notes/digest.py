"""Digests of a notebook: functions handed lazy QuerySets (recorded: package `notes`)."""

from __future__ import annotations

from django.db.models import QuerySet

from notes.models import Note


def titles_of(notes: QuerySet[Note]) -> list[str]:
    """The titles, in one query (the QuerySet runs here, when iterated)."""
    return [note.title for note in notes]


def first_note(notes: QuerySet[Note]) -> Note | None:
    """The first note (one query); its `__str__` would follow the foreign key."""
    return notes.first()
