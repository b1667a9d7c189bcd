"""Transforms that shrink or mask recordings: prune, trim, sanitize.

Which fields are captured runtime data (what `trim` and `sanitize` may touch) is defined once, in
`tracetool.transform.captured`. `trim` and `sanitize` stream a document event by event
(`tracetool.trace.rawdoc`), so memory stays a small multiple of the file size, and share the
many-files driver in `tracetool.transform.files`. Import the submodules directly:
`tracetool.transform.prune`, `tracetool.transform.trim`, `tracetool.transform.sanitize`.
"""

from __future__ import annotations
