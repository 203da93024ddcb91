"""The tune command's last step: the ``edgebench.full`` command that measures what it tuned
or exported (TVM beside ONNX Runtime, parity and latency), printed, and run with --measure."""
from __future__ import annotations

import datetime as dt
import shlex
import subprocess
import sys
from pathlib import Path

from . import database
from .cli_checks import _cross

CACHE_DIR = "results/cache"      # the tune command's --cache-dir default, as edgebench.full's


def measure_command(args, parsed, model: str, db_dir, out_dir: str | None = None) -> list:
    """The ``edgebench.full`` command that measures what this run tuned (or exported): TVM
    and ONNX Runtime, parity and latency, recorded in a run directory (``out_dir``)."""
    cmd = ["python", "-m", "edgebench.full", "--models", model,
           "--variants", "tvm", "onnxruntime", "--tasks", "parity", "latency"]
    if args.weights != "auto":
        cmd += ["--weights", args.weights]
    if args.seed:
        cmd += ["--seed", str(args.seed)]
    for flag, value in (("--num-classes", args.num_classes), ("--model-path", args.model_path),
                        ("--input-size", args.input_size)):
        if value is not None:
            cmd += [flag, str(value)]
    if args.export:
        cmd += ["--tvm-artifact", str(args.export)]
    else:
        cmd += ["--tuning-dir", str(args.tuning_dir)]
        if parsed["target_name"] != "host":
            cmd += ["--tvm-target", args.target]
        if not database.database_exists(db_dir):
            cmd.append("--tvm-untuned")     # else the quick profile skips untuned TVM
    if args.cache_dir != CACHE_DIR:
        cmd += ["--cache-dir", str(args.cache_dir)]
    if out_dir:
        cmd += ["--out", out_dir]
    return cmd


def measure(args, parsed, spec, db_dir) -> dict:
    """Print (and with --measure run) the command that measures the result."""
    out_dir = args.measure or (
        None if args.measure is None
        else f"results/run-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}")
    cmd = measure_command(args, parsed, spec.name, db_dir, out_dir)
    out = {"command": shlex.join(cmd)}
    where = "on the device" if _cross(parsed["target"]) else "here"
    print(f"measure it ({where}): {out['command']}", file=sys.stderr, flush=True)
    if out_dir is not None:
        proc = subprocess.run([sys.executable, *cmd[1:]], check=False)
        out.update(out_dir=out_dir, returncode=proc.returncode,
                   results=str(Path(out_dir) / "results.jsonl"))
    return out
