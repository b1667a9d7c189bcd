from __future__ import annotations

from django.urls import path, re_path

from notes import views

urlpatterns = [
    path("notes/", views.notes),
    path("notes/<int:note_id>/", views.note_detail),
    re_path(r"^tags/(?P<slug>[a-z]+)/$", views.by_tag),
    path("weather/", views.weather),
    path("crash/", views.crash),
    path("notebooks/<int:notebook_id>/digest/", views.notebook_digest),
]
