"""Transforms of recordings: `trim` (shorten captured values) and `sanitize` (mask them).

Which fields are captured runtime data is defined once, in `tracetool.transform.captured`.
Both commands stream a document event by event (`tracetool.transform.stream`), so memory stays
a small multiple of the file size, and share the many-files driver in
`tracetool.transform.files`. Import the submodules directly: `tracetool.transform.trim`,
`tracetool.transform.sanitize`.
"""

from __future__ import annotations
