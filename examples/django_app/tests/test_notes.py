"""The notes example's suite (pytest-django): lazy QuerySets handed to recorded functions and a
model whose `__str__` follows a foreign key — the query counts hold with `--trace-record` too."""

from __future__ import annotations

import pytest
from django.test import TestCase
from notes import digest
from notes.models import Note, Notebook


def _notebook(name: str, *titles: str) -> Notebook:
    notebook = Notebook.objects.create(name=name)
    for title in titles:
        Note.objects.create(title=title, notebook=notebook)
    return notebook


@pytest.mark.django_db
def test_digest_view_runs_one_query(client, django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    notebook = _notebook("work", "plan", "review", "ship")
    with django_assert_num_queries(1):
        response = client.get(f"/notebooks/{notebook.pk}/digest/")
    assert response.json() == {"notebook": notebook.pk, "titles": ["plan", "review", "ship"]}


@pytest.mark.django_db
def test_notes_api(client) -> None:  # type: ignore[no-untyped-def]
    created = client.post(
        "/notes/", {"title": "hello", "tag": "misc"}, content_type="application/json"
    )
    assert created.status_code == 201
    assert client.get(f"/notes/{created.json()['id']}/").json()["title"] == "hello"


class DigestTests(TestCase):
    def test_a_lazy_queryset_passed_to_a_function_runs_only_when_iterated(self) -> None:
        notebook = _notebook("home", "milk", "bread")
        notes = Note.objects.filter(notebook=notebook).order_by("id")
        with self.assertNumQueries(1):
            self.assertEqual(digest.titles_of(notes), ["milk", "bread"])

    def test_returning_a_model_does_not_follow_its_foreign_key(self) -> None:
        notebook = _notebook("trip", "tickets")
        with self.assertNumQueries(1):
            note = digest.first_note(Note.objects.filter(notebook=notebook).order_by("id"))
        assert note is not None
        with self.assertNumQueries(1):  # the app's own str(): the one foreign-key query
            self.assertEqual(str(note), "trip/tickets")
