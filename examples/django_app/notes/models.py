from __future__ import annotations

from django.db import models


class Notebook(models.Model):
    name = models.CharField(max_length=100)

    class Meta:
        app_label = "notes"

    def __str__(self) -> str:
        return self.name


class Note(models.Model):
    title = models.CharField(max_length=200)
    body = models.TextField(default="")
    tag = models.CharField(max_length=40, default="misc")
    notebook = models.ForeignKey(Notebook, null=True, blank=True, on_delete=models.CASCADE)

    class Meta:
        app_label = "notes"

    def __str__(self) -> str:
        # follows the foreign key: one query per note unless the notebook is already loaded
        return f"{self.notebook}/{self.title}" if self.notebook_id else self.title

    def as_dict(self) -> dict[str, object]:
        return {"id": self.pk, "title": self.title, "body": self.body, "tag": self.tag}
