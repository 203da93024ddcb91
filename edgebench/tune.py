"""``python -m edgebench.tune``: tune a model offline for a variant family that tunes, and/or
export its compiled artifact. The command belongs to the converter that declares it
(``Converter.commands``); this entry point only dispatches. ``--help`` explains it."""
from __future__ import annotations

import sys


def main(argv=None) -> int:
    import converters

    return converters.command("tune")(argv)


if __name__ == "__main__":
    sys.exit(main())
