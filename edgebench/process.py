"""Worker processes: start one in its own process group (a new interpreter, or a child of
the fork server), kill the whole group on timeout, and say in one line why one ended
without a result."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .cell import partial_path
from .util import REPO_ROOT


def worker_env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    # A variant's own interpreter (e.g. a separate JAX venv) still imports this checkout.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    # Weights were resolved (and downloaded, if at all) by the main process: never fetch here.
    env["HF_HUB_OFFLINE"] = "1"
    env.update(run_env(extra))
    return env


def run_env(extra: dict | None) -> dict:
    """The run's own environment settings (a fleet config's, the variants' from the probe)
    as its workers get them: the machine's own setting wins."""
    from . import USER_ENV

    return {k: str(v) for k, v in (extra or {}).items() if k not in USER_ENV}


def spawn(cmd: list[str], log: Path, timeout: float, extra_env: dict | None = None):
    """Run ``cmd`` with its output appended to ``log``, in its own process group; kill the
    group on timeout or when this process is interrupted. Returns (returncode, or None on
    timeout; seconds)."""
    t = time.perf_counter()
    with open(log, "ab") as lf:
        proc = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT,
                                env=worker_env(extra_env), cwd=REPO_ROOT, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
            kill_group(proc)
        except BaseException:
            kill_group(proc)
            raise
    return rc, time.perf_counter() - t


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def log_tail(log: Path, n: int = 6) -> str:
    try:
        text = Path(log).read_text(encoding="utf-8", errors="replace")
        lines = [ln for ln in text.splitlines() if ln.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])[-800:]


def failure_reason(rc: int | None, timeout: float, log: Path) -> tuple[str, str]:
    """(status, reason) of a worker that wrote no record."""
    if rc is None:
        return "timeout", f"cell exceeded --cell-timeout {timeout:g} s and was killed"
    if rc < 0:
        sig = signal.Signals(-rc).name
        hint = " (the kernel's OOM killer sends SIGKILL: likely out of memory)" if rc == -9 else ""
        return "failed", f"worker killed by {sig}{hint}; log: {log_tail(log)}"
    return "failed", f"worker exited with code {rc} without a result; log: {log_tail(log)}"


def partial_record(record_path: Path, reason: str) -> dict | None:
    """For a worker that ended without its record (``reason`` from ``failure_reason``): the
    record it had written as far as it got, now ``partial``, its reason saying why the worker
    ended and what it had measured; None if it wrote none."""
    try:
        rec = json.loads(partial_path(record_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or not rec.get("by_batch"):
        return None
    sizes = ", ".join(str(b.get("batch_size")) for b in rec["by_batch"])
    rec.update(status="partial", reason=f"{reason} (after batch sizes {sizes} were measured: "
                                        f"their figures are kept)")
    return rec


class ServerDied(OSError):
    """The fork server ended while a cell it had started was running."""

    def __init__(self, message: str, wall_s: float):
        super().__init__(message)
        self.wall_s = wall_s


# The threads this process had once numpy was imported (its BLAS pool), before it computed
# anything: ``note_imports_only``. None: never noted (then the fork server is spawned).
# Their ids, not their number: OpenBLAS ends its pool before every fork (its atfork
# handler) and a computation starts others, so a count could come out the same.
_IMPORT_THREADS: frozenset[int] | None = None


def _os_threads() -> frozenset[int] | None:
    try:
        return frozenset(int(t) for t in os.listdir("/proc/self/task"))
    except OSError:
        return None


def note_imports_only() -> None:
    """Say that this process has run nothing yet (called by the CLI before its checks): from
    here on, while it starts no thread, it may be the fork server's parent."""
    global _IMPORT_THREADS
    import numpy  # noqa: F401 - its BLAS pool's threads belong to the baseline

    if _IMPORT_THREADS is None:
        _IMPORT_THREADS = _os_threads()


# What the server's environment (``worker_env``) may add to this process's and the forked
# start still honour: the path is already imported, stdio is made unbuffered, and the hub's
# offline flag (read at import) is set by hand (``_serve_forked``).
_APPLIED_AFTER_FORK = frozenset({"PYTHONPATH", "PYTHONUNBUFFERED", "HF_HUB_OFFLINE"})


def _forkable(python: str, env: dict) -> bool:
    """Whether the fork server can be forked from this process rather than spawned: the same
    interpreter, on Linux, no thread started since ``note_imports_only`` (fewer is fine), and
    ``env`` (the server's) adding nothing else to this process's environment, which the
    modules imported here (numpy's BLAS, torch) read as they loaded: a run's env (a fleet
    config's) gets a spawned server that imports them under it.
    A model run here (a factory or ONNX file checked, a download, data prepared) starts
    OpenMP's, MKL's or ONNX Runtime's threads; a child forked from a process whose OpenMP
    pool exists hangs at its first parallel region (forkserver's note), so such a process
    spawns its server as before. EDGEBENCH_FORK_MAIN=0 spawns it always."""
    import threading

    threads = _os_threads()
    return (python == sys.executable and sys.platform == "linux"
            and os.environ.get("EDGEBENCH_FORK_MAIN", "1") != "0"
            and all(os.environ.get(k) == v for k, v in env.items()
                    if k not in _APPLIED_AFTER_FORK)
            and _IMPORT_THREADS is not None and threads is not None
            and threading.active_count() == 1 and threads <= _IMPORT_THREADS)


def _max_fd() -> int:
    try:
        return os.sysconf("SC_OPEN_MAX")
    except (ValueError, OSError):
        return 4096


def _serve_forked(down_r: int, up_w: int, log_fd: int, env: dict) -> None:
    """The server as a child forked from the runner (``_ForkedServer``): what ``python
    -m edgebench.forkserver`` would be, on the runner's imports (the seconds of importing
    torch and timm again are what the fork saves). Its stdin, stdout and stderr become
    ``down_r``, ``up_w`` and ``log_fd``; never returns."""
    import gc
    import io

    code = 1
    try:
        os.setsid()
        os.dup2(down_r, 0)
        os.dup2(up_w, 1)
        os.dup2(log_fd, 2)
        # No descriptor of the parent's stays open here (its ends of these pipes, another
        # server's stdin, the run's lock): each would outlive the parent's own close. Garbage
        # is collected first, so that no file object left to collect closes a number that the
        # server has opened again since; what is reachable lives until os._exit.
        gc.collect()
        os.closerange(3, _max_fd())
        os.chdir(REPO_ROOT)
        os.environ.update(env)
        # As PYTHONUNBUFFERED gives a spawned server: a cell's output reaches its log as it
        # is written, and nothing read or buffered by the parent is inherited.
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
        sys.argv = [str(REPO_ROOT / "edgebench" / "forkserver.py")]
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        # Read at import in the parent, which may fetch weights; a cell never does.
        hub = sys.modules.get("huggingface_hub.constants")
        if hub is not None and env.get("HF_HUB_OFFLINE") == "1":
            hub.HF_HUB_OFFLINE = True
        from .forkserver import main

        code = main(origin="forked from the runner")
    except BaseException:  # noqa: BLE001 - to the server's log, as an interpreter would
        import traceback

        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        os._exit(code)


class _ForkedServer:
    """The fork server as a child of this process (``os.fork``, no new interpreter): the
    part of ``subprocess.Popen`` that ``ForkServer`` uses."""

    def __init__(self, log: Path, env: dict):
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        for stream in (sys.stdout, sys.stderr):    # else the child would write it out again
            with contextlib.suppress(Exception):
                stream.flush()
        pid = os.fork()
        if pid == 0:
            _serve_forked(down_r, up_w, log_fd, env)   # never returns
        for fd in (down_r, up_w, log_fd):
            os.close(fd)
        self.pid = pid
        self.returncode: int | None = None
        self.stdin = os.fdopen(down_w, "wb")
        self.stdout = os.fdopen(up_r, "rb")

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:          # reaped elsewhere: it has ended
                self.returncode = -signal.SIGKILL
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired("edgebench.forkserver (forked)", timeout)
            time.sleep(0.01)
        return self.returncode


class ForkServer:
    """Client of ``python -m edgebench.forkserver`` in interpreter ``python``: runs worker
    argv lists in children forked from one warm parent. ``run`` has ``spawn``'s contract.
    The server is forked from this process where ``_forkable`` says it may be (its imports
    are then the server's), else spawned."""

    READY_TIMEOUT_S = 300

    def __init__(self, python: str, log: Path, extra_env: dict | None = None):
        self.log = log
        env = worker_env(extra_env)
        self.forked = _forkable(python, env)
        if self.forked:
            self.proc = _ForkedServer(log, env)
        else:
            with open(log, "ab") as lf:
                self.proc = subprocess.Popen([python, "-m", "edgebench.forkserver"],
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             stderr=lf, env=env, cwd=REPO_ROOT,
                                             start_new_session=True)
        self._buf = b""
        self._eof = False        # its stdout closed: the server has ended
        hello = self._read(time.monotonic() + self.READY_TIMEOUT_S)
        if not hello or not hello.get("ready"):
            self.close()
            raise OSError(f"fork server did not start: {log_tail(log)}")
        self.preload_s = hello.get("preload_s", 0.0)
        self.preloaded = hello.get("preloaded", [])

    def _read(self, deadline: float) -> dict | None:
        """The next line from the server, or None at the deadline or when it is gone."""
        import select

        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    self._eof = True
                    return None
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, argv: list[str], log: Path, timeout: float, variant: str = "",
            group: str = "", env: dict | None = None):
        """Run the worker with ``argv`` in a child forked from ``variant``'s branch of the
        server (which has imported that variant's modules), or, with a compile ``group``
        (``Cell.compile_group``), from the branch that compiled the group's model. ``env``:
        the run's settings (``run_env``), set in the variant's branch before its imports (the
        server may have started before the probe settled them)."""
        t = time.perf_counter()
        req = {"argv": argv, "log": str(log), "variant": variant, "group": group,
               "env": run_env(env)}
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()
        started = self._read(time.monotonic() + 60)
        if started is None:
            raise OSError(f"fork server stopped answering: {log_tail(self.log)}")
        pid = started["pid"]
        try:
            ended = self._read(time.monotonic() + timeout)
        except BaseException:
            _killpg(pid)
            raise
        if ended is None:                    # timed out: kill the cell's whole group
            _killpg(pid)
            if self._eof:                    # no: the server itself ended, mid-cell
                raise ServerDied("the fork server ended while this cell ran (the OOM killer "
                                 "may pick it); the cell was killed with it; server log: "
                                 f"{log_tail(self.log)}", time.perf_counter() - t)
            self._read(time.monotonic() + 60)
            return None, time.perf_counter() - t
        return ended["returncode"], time.perf_counter() - t

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kill_group(self.proc)


def _killpg(pid: int) -> None:
    for kill in (os.killpg, os.kill):    # os.kill too: a child killed before its setsid
        try:
            kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
