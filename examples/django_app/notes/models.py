from __future__ import annotations

from django.db import models


class Note(models.Model):
    title = models.CharField(max_length=200)
    body = models.TextField(default="")
    tag = models.CharField(max_length=40, default="misc")

    class Meta:
        app_label = "notes"

    def as_dict(self) -> dict[str, object]:
        return {"id": self.pk, "title": self.title, "body": self.body, "tag": self.tag}
