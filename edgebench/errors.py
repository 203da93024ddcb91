"""What every command shares about failing: the usage error and the exit codes.
(A leaf module, so a command's helpers can raise UsageError without importing the CLI.)"""
from __future__ import annotations

EXIT_OK, EXIT_CELLS_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    """Bad input found before any work ran: the command prints one line and exits 2."""


def run_command(prog: str, body) -> int:
    """Run a command's ``body()`` and turn the two ways it ends early into exit codes: bad
    input (one line, exit 2) and Ctrl-C (exit 130; finished cells stay in results.jsonl)."""
    import sys

    try:
        return body()
    except UsageError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; finished cells are in results.jsonl (use --resume)",
              file=sys.stderr)
        return EXIT_INTERRUPTED
