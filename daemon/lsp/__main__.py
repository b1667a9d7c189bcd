"""`python -m tracetool_daemon.lsp`: the language server on stdio."""

from __future__ import annotations

import sys

from tracetool_daemon.lsp import main

sys.exit(main())
