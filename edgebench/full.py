"""``python -m edgebench.full``: the main command, kept under the name users know.
The command itself lives in ``edgebench.cli``."""
from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
