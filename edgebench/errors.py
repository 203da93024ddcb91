"""What every command shares about failing: the usage error and the exit codes.
(A leaf module, so a command's helpers can raise UsageError without importing the CLI.)"""
from __future__ import annotations

EXIT_OK, EXIT_CELLS_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    """Bad input found before any work ran: the command prints one line and exits 2."""
