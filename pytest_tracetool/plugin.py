"""pytest entry point (``pytest11``) for tracetool.

Importing this module must stay free: it is loaded into every pytest run of every project that has
tracetool installed, recording or not. Hooks import the agent lazily.
"""

from __future__ import annotations
