"""Django settings of the notes example (a throwaway SQLite file by default)."""

from __future__ import annotations

import os

SECRET_KEY = "notes-example-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
INSTALLED_APPS = ["notes"]
MIDDLEWARE: list[str] = []
ROOT_URLCONF = "notes.urls"
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("NOTES_DATABASE", "tmp/notes.db"),
    }
}
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
WEATHER_URL = os.environ.get("NOTES_WEATHER_URL", "http://127.0.0.1:8003")
LOGGING_CONFIG = None
