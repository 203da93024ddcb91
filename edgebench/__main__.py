"""``python -m edgebench``: the ``edgebench`` command (``edgebench.commands``)."""
import sys

from .commands import main

sys.exit(main())
