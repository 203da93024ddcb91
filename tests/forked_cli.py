"""Commands run as ``python -m MODULE ARGS`` would run them, each in a process of its own, but
forked from one interpreter that imported the heavy libraries once (torch, timm, ONNX Runtime,
TVM). A sweep of bad-input cases is then a fork per case, not an interpreter start-up and
those imports (5-20 s each on 2 busy cores).

What a case sees is a fresh process: ``runpy`` runs the module as ``__main__`` with its own
``sys.argv``, its stdout and stderr go to files, and its exit status is the process's, from
``SystemExit`` or an uncaught exception (a traceback on stderr, exit 1), as the interpreter
gives it. What differs from a cold start: the modules were imported before the case, so a
case cannot show what a command imports (tests/test_bad_input.py keeps a cold start for the
one case that checks that)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

_SERVER = r"""
import importlib, json, os, runpy, signal, sys, traceback
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception:
        pass
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            signal.alarm(int(req["timeout"]))
            os.chdir(req["cwd"])
            os.environ.update(req["env"])
            for fd, path in ((1, req["stdout"]), (2, req["stderr"])):
                os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
            sys.argv = [req["module"], *req["args"]]
            try:
                runpy.run_module(req["module"], run_name="__main__", alter_sys=True)
                code = 0
            except SystemExit as e:
                if e.code is None:
                    code = 0
                elif isinstance(e.code, int):
                    code = e.code
                else:
                    print(e.code, file=sys.stderr)
                    code = 1
            except BaseException:
                traceback.print_exc()
                code = 1
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    _, status = os.waitpid(pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    print(json.dumps({"rc": rc}), flush=True)
"""

PRELOAD = ("numpy", "torch", "timm", "onnx", "onnxruntime", "tvm", "edgebench.cli",
           "edgebench.models", "converters")


class ForkedCli:
    """``run(module, *args)`` -> an object with returncode, stdout and stderr, as
    ``subprocess.run`` gives them. One server process; close() ends it."""

    def __init__(self, env: dict, cwd: Path, preload=PRELOAD):
        self.cwd = cwd
        self.dir = Path(tempfile.mkdtemp(prefix="forked-cli-"))
        self.proc = subprocess.Popen([sys.executable, "-c", _SERVER, *preload], cwd=cwd,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        ready = self.proc.stdout.readline()
        if not ready:
            raise RuntimeError("the forked-CLI server died while importing")
        self.n = 0

    def run(self, module: str, *args: str, timeout: float = 180, env: dict | None = None):
        self.n += 1
        out, err = self.dir / f"{self.n}.out", self.dir / f"{self.n}.err"
        req = {"module": module, "args": list(args), "cwd": str(self.cwd), "env": env or {},
               "stdout": str(out), "stderr": str(err), "timeout": timeout}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the forked-CLI server died")
        rc = json.loads(line)["rc"]
        return SimpleNamespace(returncode=rc, stdout=out.read_text(encoding="utf-8"),
                               stderr=err.read_text(encoding="utf-8"))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        for f in self.dir.iterdir():
            f.unlink()
        self.dir.rmdir()
