"""Views of the notes app."""

from __future__ import annotations

import json
import logging
import urllib.request

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from notes import digest
from notes.models import Note

log = logging.getLogger("notes")


@csrf_exempt
def notes(request: HttpRequest) -> JsonResponse:
    if request.method == "POST":
        data = json.loads(request.body or b"{}")
        note = Note.objects.create(
            title=data.get("title", "untitled"),
            body=data.get("body", ""),
            tag=data.get("tag", "misc"),
        )
        log.info("created note %s", note.pk)
        return JsonResponse(note.as_dict(), status=201)
    return JsonResponse([n.as_dict() for n in Note.objects.order_by("id")], safe=False)


def note_detail(request: HttpRequest, note_id: int) -> JsonResponse:
    note = Note.objects.filter(pk=note_id).first()
    if note is None:
        return JsonResponse({"error": "no such note"}, status=404)
    return JsonResponse(note.as_dict())


def by_tag(request: HttpRequest, slug: str) -> JsonResponse:
    return JsonResponse([n.as_dict() for n in Note.objects.filter(tag=slug)], safe=False)


def weather(request: HttpRequest) -> JsonResponse:
    city = request.GET.get("city", "Paris")
    with urllib.request.urlopen(f"{settings.WEATHER_URL}/weather?city={city}", timeout=5) as r:
        return JsonResponse({"city": city, "forecast": json.loads(r.read())})


def crash(request: HttpRequest) -> JsonResponse:
    raise KeyError("notes crashed")


def notebook_digest(request: HttpRequest, notebook_id: int) -> JsonResponse:
    notes = Note.objects.filter(notebook_id=notebook_id).order_by("id")  # lazy: no query yet
    return JsonResponse({"notebook": notebook_id, "titles": digest.titles_of(notes)})
