"""A fork server: imports the heavy modules once, then forks one fresh child per cell.

    python -m edgebench.forkserver        (started by the runner; JSON lines on stdin/stdout)

Every cell still runs in a process of its own, started from a parent that has imported
modules and nothing else: no model, no tensor, no thread pool. What a cell allocates dies
with it, so no cell's memory figure carries an earlier cell's allocations. The child calls
``setsid`` (its own process group: the runner kills the group on timeout) and dies with the
server, which dies with the runner.

Two levels, so that a cell maps only its own variant's runtime: the server imports what
every cell needs (numpy, timm and torch, edgebench); on a variant's first cell it forks a
branch for that variant, which imports the modules the variant declares fork-safe to
import (``Converter.preload``: JAX, inductor) and forks that variant's cells. One server for
all mapped JAX and inductor into every PyTorch and ONNX Runtime cell: 45 MB more resident
memory at each cell's start (experiments/forkserver-branches).

Protocol, one JSON object per line (a branch speaks it too, to the server, over pipes):
  server -> runner  {"ready": true, "preload_s": ..., "preloaded": [...]}
  runner -> server  {"argv": [...worker args], "log": PATH, "variant": NAME}
  server -> runner  {"pid": N}                 the child started
  server -> runner  {"pid": N, "returncode": R}   it ended (R < 0: killed by signal -R)
A branch that dies ends the server (the runner then spawns the cell and starts a new one).
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


COMMON = ["numpy", "timm", "edgebench.worker", "edgebench.measure", "edgebench.models",
          "edgebench.data", "edgebench.telemetry"]


def _import_all(mods) -> list[str]:
    done = []
    for mod in dict.fromkeys(mods):
        try:
            importlib.import_module(mod)
            done.append(mod)
        except Exception:  # noqa: BLE001 - the child imports it again and reports the error
            pass
    return done


def _variant_modules(variant: str) -> list[str]:
    import converters

    with contextlib.suppress(Exception):
        return list(converters.get(variant).preload)
    return []


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


def _child(argv: list[str], log: str, close_fds=()) -> None:
    """In the forked child: own session, output to the cell's log, then the worker."""
    for fd in close_fds:                     # a branch's pipes: not the cell's to hold
        with contextlib.suppress(OSError):
            os.close(fd)
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


def _serve(lines, send, close_fds=()) -> None:
    """Fork one child per request and report its pid, then its return code."""
    for line in lines:
        if not line.strip():
            continue
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(req["argv"], req["log"], close_fds)
        send({"pid": pid})
        _, status = os.waitpid(pid, 0)
        rc = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        send({"pid": pid, "returncode": rc})


class _Branch:
    """A forked child of the server that has imported one variant's modules and forks that
    variant's cells; requests go down one pipe, its answers come up another."""

    def __init__(self, variant: str, inherited_fds: list[int]):
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:                   # the branch
            code = 0
            try:
                from edgebench.worker import _die_with_parent

                _die_with_parent()          # not inherited across fork
                for fd in (down_w, up_r, *inherited_fds):
                    os.close(fd)
                _import_all(_variant_modules(variant))
                out = os.fdopen(up_w, "w", buffering=1)
                _serve(os.fdopen(down_r), lambda o: out.write(json.dumps(o) + "\n"),
                       close_fds=(down_r, up_w))
            except BaseException:  # noqa: BLE001 - the server sees the pipe close
                code = 1
            os._exit(code)
        os.close(down_r)
        os.close(up_w)
        self.down = os.fdopen(down_w, "w", buffering=1)
        self.up = os.fdopen(up_r)
        self.fds = [down_w, up_r]

    def ask(self, line: str, send) -> bool:
        """Pass a request on and its two answers back; False when the branch is gone."""
        try:
            self.down.write(line if line.endswith("\n") else line + "\n")
            self.down.flush()
        except OSError:
            return False
        for _ in range(2):
            answer = self.up.readline()
            if not answer:
                return False
            send(json.loads(answer))
        return True

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.down.close()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def main() -> int:
    from edgebench.worker import _die_with_parent

    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the runner decides what an interrupt ends
    t = time.perf_counter()
    preloaded = _import_all(COMMON)
    _send({"ready": True, "preload_s": round(time.perf_counter() - t, 3), "preloaded": preloaded})
    branches: dict[str, _Branch] = {}
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            variant = json.loads(line).get("variant", "")
            branch = branches.get(variant)
            if branch is None:
                branch = branches[variant] = _Branch(
                    variant, [fd for b in branches.values() for fd in b.fds])
            if not branch.ask(line, _send):
                return 1                    # the runner spawns this cell, then a new server
    finally:
        for branch in branches.values():
            branch.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
