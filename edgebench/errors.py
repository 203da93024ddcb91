"""What every command shares about failing: the usage error, the exit codes, a parser whose
errors are one line, and the checks of an output path made before anything is written.
(A leaf module, so a command's helpers can raise UsageError without importing the CLI.)

Every command (edgebench.full, .parity, .tune, .fleet, .telemetry, .report, .compare) answers
bad input the same way: exit code 2 and one line on stderr, ``<command>: error: <message>``,
the message naming the option or file and the value at fault; no traceback."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

EXIT_OK, EXIT_CELLS_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_STORAGE = 74           # sysexits EX_IOERR: the disk refused a write (full, read-only)

# Storage errors a command cannot work around: it stops, saying where, and what to do.
_STORAGE_ERRNOS = {"ENOSPC", "EDQUOT", "EROFS", "EFBIG"}


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
    except OSError as e:
        if not _is_storage_error(e):
            raise
        where = f" writing {e.filename}" if e.filename else ""
        print(f"{prog}: error: {e.strerror or e}{where}; what was written before stays valid "
              "(records are appended whole); free space, then rerun with --resume",
              file=sys.stderr)
        return EXIT_STORAGE


def _is_storage_error(e: OSError) -> bool:
    import errno

    return errno.errorcode.get(e.errno or 0, "") in _STORAGE_ERRNOS


class ArgumentParser(argparse.ArgumentParser):
    """argparse, with its errors in the commands' one form: ``<name>: error: <message>`` on
    one line (no usage block: ``--help`` has it) and exit code 2. ``error_name`` is the
    command's name in its messages ("edgebench compare"); subparsers inherit it."""

    def __init__(self, *args, error_name: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.error_name = error_name

    def add_subparsers(self, **kwargs):
        import functools

        kwargs.setdefault("parser_class", functools.partial(type(self), error_name=self.error_name))
        return super().add_subparsers(**kwargs)

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.error_name or self.prog}: error: {message} (see --help)\n")


def check_out_dir(flag: str, path) -> Path:
    """Check that ``path`` can be (or already is) a folder this command writes into, without
    creating anything: it is a folder, or nothing yet and its nearest existing parent is a
    writable folder. Raise UsageError naming ``flag`` and the path otherwise."""
    p = Path(path).expanduser()
    if p.exists():
        if not p.is_dir():
            raise UsageError(f"{flag} {path}: exists and is not a folder")
        if not os.access(p, os.W_OK | os.X_OK):
            raise UsageError(f"{flag} {path}: the folder is not writable")
        return p
    parent = p.absolute().parent
    while not parent.exists() and parent != parent.parent:
        if parent.is_symlink():      # a dangling link: mkdir cannot go through it
            raise UsageError(f"{flag} {path}: {parent} is a broken symbolic link")
        parent = parent.parent
    if not parent.is_dir():
        raise UsageError(f"{flag} {path}: cannot create it, {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: cannot create it, {parent} is not writable")
    return p


def make_out_dir(flag: str, path) -> Path:
    """Create the folder ``path`` (and its parents), or raise UsageError naming ``flag``:
    what ``check_out_dir`` cannot see beforehand (a read-only file system, a full disk)."""
    p = Path(path).expanduser()
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{flag} {path}: cannot create it ({e.strerror or e})") from None
    if not os.access(p, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: the folder is not writable")
    return p
