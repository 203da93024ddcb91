"""How much memory a process tree and the whole machine use (the monitor samples both; a
model branch takes them as the baseline of the cells it forks)."""
from __future__ import annotations

import contextlib

import psutil

SYSTEM_MEMORY_SOURCE = ("system-wide used memory, MemTotal - MemFree - Buffers - Cached from "
                        "/proc/meminfo (the way jtop counts it; every process on "
                        "the machine included)")


def system_used_mb() -> float | None:
    """Used memory of the whole machine in MiB (jtop's formula, see SYSTEM_MEMORY_SOURCE);
    psutil's ``used`` where /proc/meminfo is absent; None when neither reads."""
    from .sysfs import jetson_memory_mb

    m = jetson_memory_mb()
    if m is not None and m["total"]:
        return m["used"]
    try:
        return psutil.virtual_memory().used / 2**20
    except Exception:  # noqa: BLE001
        return None


def tree_rss_mb(proc: psutil.Process) -> float:
    """Resident memory of a process and all its children, in MiB."""
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total / 2**20
