"""Transforms that shrink or mask recordings: prune, trim, sanitize."""
