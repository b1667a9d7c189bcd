"""`python -m tracetool` runs the CLI."""

from __future__ import annotations

from tracetool.cli import main

if __name__ == "__main__":
    main()
