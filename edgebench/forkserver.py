"""A fork server: imports the heavy modules once, then forks one fresh child per cell.

    python -m edgebench.forkserver        (started by the runner; JSON lines on stdin/stdout)

or forked from the runner itself (``process.ForkServer``) where the runner has only imported,
as the CLI has before any model runs: the server then pays no import.

Every cell still runs in a process of its own, started from a parent that has imported
modules and nothing else: no model, no tensor, no thread pool. What a cell allocates dies
with it, so no cell's memory figure carries an earlier cell's allocations. The child calls
``setsid`` (its own process group: the runner kills the group on timeout) and dies with the
server, which dies with the runner.

Two levels, so that a cell maps only its own variant's runtime: the server imports what
every cell needs (numpy, timm and torch, edgebench); on a variant's first cell it forks a
branch for that variant, which imports the modules the variant declares fork-safe to
import (``Converter.preload``: JAX, inductor, TVM, onnx) and forks that variant's cells.
One server for all mapped JAX and inductor into every PyTorch and ONNX Runtime cell: 45 MB
more resident memory at each cell's start (experiments/FINDINGS.md#one-fork-server-branch-per-variant).
The run's availability probe is forked too, from a branch of its own that imports nothing
more (``runner.PROBE_BRANCH``): the server starts before the probe, so each request carries
the run's environment, which a variant's branch sets before its imports.

A third level for JIT variants (``Converter.compiles_in_process``: torch.compile on the
CPU), whose compiled model lives in the process and cannot be loaded from a file: a request
with a compile ``group`` (``Cell.compile_group``: one model and variant in one run) goes to a
model branch, forked from the variant's branch. Its first request compiles the model for
every batch shape the cells use (``model_branch.prepare``) and forks that cell, which counts the
compile as its ``convert_s``; later cells of the group are forked from the compiled branch
and compile nothing. The branch ends when a request of another group arrives. A model that
the branch built is shared, read-only, by its cells' processes as a long-running server's
requests share it; what a cell allocates still dies with it.

The compile runs in a thread of the model branch, not its main thread: GNU OpenMP's thread
pool (inductor's kernels, oneDNN) does not survive fork, and a child forked from a process
whose forking thread had run a parallel region waits forever on its team (seen: a hang in
``gomp_team_barrier_wait_end``). A pool belongs to the thread that ran the region, so the
main thread, which forks, keeps none. The main thread forks only once the helper's pool
threads have exited (``_threads_settled``): forked while they were still exiting, a child
could inherit MKL's allocator lock held and spin forever at its first matrix product.

Protocol, one JSON object per line (a branch speaks it too, to the server, over pipes):
  server -> runner  {"ready": true, "preload_s": ..., "preloaded": [...]}
  runner -> server  {"argv": [...worker args], "log": PATH, "variant": NAME, "group": G,
                    "env": {...}}     the run's settings, set in the branch before its imports
  server -> runner  {"pid": N}                 the child started
  server -> runner  {"pid": N, "returncode": R}   it ended (R < 0: killed by signal -R)
For the first cell of a group, N is the model branch: the cell runs in the branch's process
group, so a timeout kills the branch with it and the next cell gets a new one.
A variant branch that dies ends the server (the runner then spawns the cell and starts a
new one); a model branch that dies before it started its cell is replaced.
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
        except Exception:  # noqa: BLE001, S110 - the child imports it again and reports the error
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
    and two runs differ by more than their cells suggest (docs/compare.md#the-statistics). A random
    number of untouched pages (address space, no memory) shifts later mappings. The heap needs
    more: the server's free chunks serve a child's allocations at fixed addresses whatever one
    small block takes, so one random block at each power of two from 64 B to 32 MiB, malloc'd
    and never touched, eats into every size class's chunks (one block only: the same 1 MiB
    buffer landed at one address in 20 of 20 children; with these, at 20 distinct ones)."""
    import ctypes
    import mmap
    import random

    rng = random.SystemRandom()
    _LAYOUT_PADS.append(mmap.mmap(-1, rng.randrange(1, 1024) * mmap.PAGESIZE))
    try:
        malloc = ctypes.CDLL(None).malloc
        malloc.restype, malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    except (OSError, AttributeError):
        _LAYOUT_PADS.append(bytearray(rng.randrange(16, 1 << 16)))
        return
    for k in range(6, 26):
        _LAYOUT_PADS.append(malloc(rng.randrange(16, 1 << k)))


def _output_to(path: str) -> None:
    """This process's stdout and stderr to ``path`` (appended)."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _child(argv: list[str], log: str, close_fds=(), own_session: bool = True) -> None:
    """In the forked child: own session, output to the cell's log, then the worker."""
    for fd in close_fds:                     # a branch's pipes: not the cell's to hold
        with contextlib.suppress(OSError):
            os.close(fd)
    code = 1
    try:
        if own_session:
            os.setsid()
        _output_to(log)
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


def _wait(pid: int) -> int:
    """The return code of child ``pid`` (negative: killed by that signal)."""
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _fork_cell(req: dict, send, close_fds=()) -> None:
    pid = os.fork()
    if pid == 0:
        _child(req["argv"], req["log"], close_fds)
    send({"pid": pid})
    send({"pid": pid, "returncode": _wait(pid)})


def _serve(lines, send, close_fds=()) -> None:
    """A variant's branch: fork one child per request and report its pid, then its return
    code. A request with a compile group goes to that group's model branch."""
    model: _Branch | None = None
    try:
        for line in lines:
            if not line.strip():
                continue
            req = json.loads(line)
            group = req.get("group") or ""
            if model is not None and (model.group != group or model.dead):
                model.close()
                model = None
            if not group:
                _fork_cell(req, send, close_fds)
                continue
            for _ in range(2):              # a model branch gone before it started: once more
                if model is None:
                    model = _Branch(_serve_model, list(close_fds), group=group)
                if model.ask(line, send):
                    break
                model.close()
                model = None
            else:
                _fork_cell(req, send, close_fds)
    finally:
        if model is not None:
            model.close()


def _prepare_in_a_thread(cell_json: str) -> None:
    """``model_branch.prepare`` in a thread of its own (see the module's note on OpenMP and fork).
    A failure is printed to the first cell's log; its cells then convert the model themselves,
    and record the error where there is one."""
    import threading
    import traceback

    from edgebench import model_branch

    def prepare() -> None:
        try:
            model_branch.prepare(cell_json)
        except BaseException:  # noqa: BLE001
            traceback.print_exc()
            print("edgebench.forkserver: the model branch could not prepare the model; "
                  "each cell converts it itself", flush=True)

    t = time.perf_counter()
    thread = threading.Thread(target=prepare, name="edgebench-prepare")
    thread.start()
    thread.join()
    waited = _threads_settled()
    print(f"edgebench.forkserver: model branch {os.getpid()} prepared in "
          f"{time.perf_counter() - t:.1f} s (then {waited:.2f} s for exiting threads); "
          "forking the first cell", flush=True)


def _threads_settled(quiet_s: float = 0.25, limit_s: float = 10.0) -> float:
    """Wait until this process's set of threads has not changed for ``quiet_s``; returns the
    time waited. The prepare thread's OpenMP workers are still exiting when it has been
    joined, and a worker's exit frees its MKL buffers under MKL's allocator lock: a child
    forked in that moment inherits the lock held and spins forever in ``mkl_serv_allocate``
    at its first matrix product (seen: 2 of 6 first cells of a default run hung until their
    timeout; experiments/FINDINGS.md#a-cell-forked-right-after-a-compile)."""
    t0 = time.monotonic()
    last, since = None, t0
    while time.monotonic() - t0 < limit_s:
        try:
            now = frozenset(os.listdir("/proc/self/task"))
        except OSError:             # no /proc: nothing to watch
            break
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            break
        time.sleep(0.01)
    return time.monotonic() - t0


def _serve_model(lines, send, close_fds=()) -> None:
    """A model branch (see the module's docstring): compile at the first request, then fork
    every cell of the group from the compiled process."""
    from edgebench import model_branch

    os.setsid()          # the first cell runs in this group: its timeout ends this branch too
    first = True
    for line in lines:
        if not line.strip():
            continue
        req = json.loads(line)
        if first:
            first = False
            me = os.getpid()
            send({"pid": me})
            _output_to(req["log"])          # the compile's output is the first cell's
            _prepare_in_a_thread(req["argv"][0])
            _output_to(os.devnull)
            pid = os.fork()
            if pid == 0:
                _child(req["argv"], req["log"], close_fds, own_session=False)
            if model_branch.PREPARED is not None:
                model_branch.PREPARED.served += 1
            send({"pid": me, "returncode": _wait(pid)})
            continue
        _fork_cell(req, send, close_fds)
        if model_branch.PREPARED is not None:
            model_branch.PREPARED.served += 1


class _Branch:
    """A forked child that forks cells: a variant's branch of the server (which has
    imported the variant's modules), or a model branch of a variant's branch (which has
    compiled the model). Requests go down one pipe, its answers come up another."""

    def __init__(self, body, inherited_fds: list[int], group: str = ""):
        """``body(lines, send, close_fds)`` serves the requests in the branch."""
        self.group = group
        self.dead = False
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
                out = os.fdopen(up_w, "w", buffering=1)
                body(os.fdopen(down_r), lambda o: out.write(json.dumps(o) + "\n"),
                     (down_r, up_w))
            except BaseException:  # noqa: BLE001 - the parent sees the pipe close
                code = 1
            os._exit(code)
        os.close(down_r)
        os.close(up_w)
        self.down = os.fdopen(down_w, "w", buffering=1)
        self.up = os.fdopen(up_r)
        self.fds = [down_w, up_r]

    def ask(self, line: str, send) -> bool:
        """Pass a request on and its two answers back; False when the branch is gone. A
        model branch that ends after it started the cell (killed with its first cell on a
        timeout) is the cell's end: its return code is reported, and the branch is dead."""
        try:
            self.down.write(line if line.endswith("\n") else line + "\n")
            self.down.flush()
        except OSError:
            return False
        started = None
        for _ in range(2):
            answer = self.up.readline()
            if not answer:
                if started is None or not self.group:
                    return False
                self.dead = True
                send({"pid": started, "returncode": self._reap()})
                return True
            msg = json.loads(answer)
            started = msg["pid"]
            send(msg)
        return True

    def _reap(self) -> int:
        try:
            return _wait(self.pid)
        except ChildProcessError:
            return -signal.SIGKILL

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.down.close()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def _variant_body(variant: str, env: dict):
    def body(lines, send, close_fds) -> None:
        # Before the imports: inductor fixes its cache folder from the environment.
        os.environ.update(env)
        _import_all(_variant_modules(variant))
        _serve(lines, send, close_fds)
    return body


def main(origin: str = "spawned") -> int:
    """Serve the runner's requests; ``origin``: how this server started, for its log
    ("spawned", or "forked from the runner" by ``process.ForkServer``)."""
    from edgebench.worker import _die_with_parent

    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the runner decides what an interrupt ends
    t = time.perf_counter()
    preloaded = _import_all(COMMON)
    print(f"edgebench.forkserver: {origin} (pid {os.getpid()}), common modules ready in "
          f"{time.perf_counter() - t:.2f} s", file=sys.stderr, flush=True)
    _send({"ready": True, "preload_s": round(time.perf_counter() - t, 3), "preloaded": preloaded})
    branches: dict[str, _Branch] = {}
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            req = json.loads(line)
            variant = req.get("variant", "")
            branch = branches.get(variant)
            if branch is None:
                branch = branches[variant] = _Branch(
                    _variant_body(variant, req.get("env") or {}),
                    [fd for b in branches.values() for fd in b.fds])
            if not branch.ask(line, _send):
                return 1                    # the runner spawns this cell, then a new server
    finally:
        for branch in branches.values():
            branch.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
