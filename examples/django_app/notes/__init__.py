"""A tiny Django notes app (ORM on SQLite, urllib call, a regex route), the Django example for
tracetool's agent. `python -m notes.server` serves it on an OS-chosen port."""
