"""A fork server: imports the heavy modules once, then forks one fresh child per cell.

    python -m edgebench.forkserver        (started by the runner; JSON lines on stdin/stdout)

Every cell still runs in a process of its own, started from a parent that has imported
modules and nothing else: no model, no tensor, no thread pool (the modules preloaded are
the ones the variants declare fork-safe to import, ``Converter.preload``). What a cell
allocates dies with it, so no cell's memory figure carries an earlier cell's allocations.
The child calls ``setsid`` (its own process group: the runner kills the group on timeout)
and dies with the server, which dies with the runner.

Protocol, one JSON object per line:
  server -> runner  {"ready": true, "preload_s": ..., "preloaded": [...]}
  runner -> server  {"argv": [...worker args], "log": PATH}
  server -> runner  {"pid": N}                 the child started
  server -> runner  {"pid": N, "returncode": R}   it ended (R < 0: killed by signal -R)
"""
from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import sys
import time


def _send(obj: dict) -> None:
    os.write(1, (json.dumps(obj) + "\n").encode())


def _preload() -> list[str]:
    import converters

    done = []
    mods = ["numpy", "timm", "edgebench.worker", "edgebench.measure", "edgebench.models",
            "edgebench.data", "edgebench.telemetry"]
    for name in converters.names():
        with contextlib.suppress(Exception):
            mods += list(converters.get(name).preload)
    for mod in dict.fromkeys(mods):
        try:
            importlib.import_module(mod)
            done.append(mod)
        except Exception:  # noqa: BLE001 - the child imports it again and reports the error
            pass
    return done


_LAYOUT_PADS: list = []


def _own_layout() -> None:
    """Give this child a memory layout of its own, as an exec'd process gets from ASLR.
    Forked children of one server would otherwise place the model and its buffers at the same
    addresses, so a layout that happens to be slow (or fast) is shared by every cell of a run
    and two runs differ by more than their cells suggest (experiments/compare-noise). A random
    number of untouched pages (address space, no memory) shifts later mappings, and a random
    small block shifts the heap."""
    import mmap
    import random

    rng = random.SystemRandom()
    _LAYOUT_PADS.append(mmap.mmap(-1, rng.randrange(1, 1024) * mmap.PAGESIZE))
    _LAYOUT_PADS.append(bytearray(rng.randrange(16, 1 << 16)))


def _child(argv: list[str], log: str) -> None:
    """In the forked child: own session, output to the cell's log, then the worker."""
    code = 1
    try:
        os.setsid()
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _own_layout()
        from edgebench import worker

        code = worker.main(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # noqa: BLE001 - print it to the log, like an interpreter would
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def main() -> int:
    from edgebench.worker import _die_with_parent

    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the runner decides what an interrupt ends
    t = time.perf_counter()
    preloaded = _preload()
    _send({"ready": True, "preload_s": round(time.perf_counter() - t, 3), "preloaded": preloaded})
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(req["argv"], req["log"])
        _send({"pid": pid})
        _, status = os.waitpid(pid, 0)
        rc = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        _send({"pid": pid, "returncode": rc})
    return 0


if __name__ == "__main__":
    sys.exit(main())
