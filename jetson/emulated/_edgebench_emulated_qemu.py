"""A work-around for a QEMU user-mode emulation bug, installed by jetson/emulated/setup.sh into
the emulated root's venv only (a .pth file imports it when Python starts); never on a board.

QEMU answers a process's reads of its own /proc/self/stat and /proc/<its pid>/stat itself
(linux-user/syscall.c, open_self_stat; the path is canonicalised first, so no other spelling
escapes it) instead of letting the kernel answer, and the start time it writes there is the
one of the *thread that reads* (init_task_state() runs for every new thread; QEMU 7.2 to
10.0 at least). psutil identifies a process by (pid, start time), so a psutil.Process made
in one thread and used in another - edgebench's telemetry Monitor samples memory in its
own thread - raises NoSuchProcess ("its PID has been reused") on its first use there, and
the cell fails. /proc/<pid>/task/<pid>/stat, the main thread's entry, is not intercepted and
the kernel gives it the process's real start time: psutil reads that file instead of its
own process's /proc/<pid>/stat. (Its CPU times are then the main thread's; QEMU's own answer
has none at all.) Other processes' files are read as usual.
"""
import os

try:
    from psutil import _pslinux

    def _bcat(path, *args, _bcat=_pslinux.bcat, **kwargs):
        pid = os.getpid()
        if path == f"{_pslinux.get_procfs_path()}/{pid}/stat":
            path = f"{_pslinux.get_procfs_path()}/{pid}/task/{pid}/stat"
        return _bcat(path, *args, **kwargs)

    _pslinux.bcat = _bcat
except Exception:  # noqa: BLE001 - never stop an interpreter from starting
    pass
