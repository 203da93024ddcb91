"""The ``tune`` command (``python -m edgebench.tune``): tune a model with TVM MetaSchedule
and/or export a compiled TVM artifact for a device, then say how to measure the result.

    python -m edgebench.tune --model mobilenetv2_100 --trials 512
    python -m edgebench.tune --model mobilenetv2_100 --target jetson-agx-orin --trials 0 --export out/orin
    python -m edgebench.tune --model resnet152 --target jetson-agx-orin --trials 2000 \\
        --rpc-tracker 10.0.0.5:9190 --rpc-key orin          # measure candidates on the board

Every figure of the result is measured by edgebench itself (``edgebench.full``: parity and
latency records in a run's results.jsonl, next to ONNX Runtime): the command prints that
``edgebench.full`` command, and ``--measure`` runs it.

Exit codes: 0 done, 1 TVM failed (message says why) or the --measure run failed, 2 bad
arguments, 130 interrupted (every trial measured so far is in the database; run the same
command again to resume).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import shlex
import subprocess
import sys
from pathlib import Path

from edgebench.errors import ArgumentParser, UsageError
from edgebench.util import atomic_write_text

from . import (database, design_space, export, machine_speed, passes, runner, scheduler,
               targets, tuning, winograd)
from .cli_checks import _cross, validate
from .errors import ExportError, RpcError, TvmError
from .progress import Progress

CACHE_DIR = "results/cache"

EPILOG = """\
targets:
  host              LLVM for this machine's CPU (mcpu detected, e.g. znver5; all physical cores)
  jetson-agx-orin   TVM tag nvidia/jetson-agx-orin-64gb: CUDA sm_87 kernels + aarch64 host code
  jetson-agx-orin-cpu  the Orin's 12 Cortex-A78AE cores alone: LLVM aarch64-linux-gnu
                    (tune over RPC on a board or on jetson/emulated/'s emulated Orin)
  <tag>             any TVM target tag, e.g. nvidia/jetson-agx-orin-32gb
  '{"kind": ...}'   a JSON target, e.g. '{"kind": "llvm", "mcpu": "neoverse-v2", "num-cores": 8}'

tuning database:
  <tuning-dir>/<target-slug>/<model>-CxHxW/database_{workload,tuning_record}.json (MetaSchedule
  JSON database; every measured candidate is appended at once) + tuning.json (sessions, seconds).
  --trials is the TOTAL budget for the model on that target: records already in the database
  count toward it, so re-running the same command resumes an interrupted run and a larger
  --trials continues a finished one. The edgebench "tvm" variant applies the database
  automatically (option tuning_dir).

reuse across models (on unless --no-reuse):
  A task whose kernel (same workload, same target) is already in another model's database
  under --tuning-dir (or --transfer-from) starts from that database's 32 best records, copied
  in: they are measurements of this very kernel on this target, and they count toward
  --trials. ResNet-50, -101 and -152 share all 29 tasks: resnet152's 512-trial database
  gives 491 records (32 per task at most), so a 512-trial ResNet-50 session after it runs 21
  trials; the six study models share only the input's transpose.
  tuning.json and every record (tuning.reused_from) say which databases were drawn on.

cost-model transfer (off unless asked for):
  --transfer trains MetaSchedule's cost model, before the first search, on the measurements
  in the other models' databases for the same target (siblings of this model's database);
  --transfer-from DIR adds (or names alone) other databases. Only databases tuned in the
  same layout and design space are used. It helped in NCHW with MetaSchedule's default
  space (network p50 4-5% lower over three seeds at 512 trials), but not in today's CPU
  default, NHWC with vector-width tiling: 8% slower with a SqueezeNet database of that kind,
  75% slower with the NCHW ones (docs/tvm.md, "Cost-model transfer"). Only the choice of
  candidates changes; every record is still measured on this target. tuning.json records
  which databases were used.

design space:
  On CPUs in NHWC, every conv and matmul whose output channels are a multiple of the vector
  width tiles them at exactly one vector (16 floats on AVX-512, else 8 or 4); the other loops
  are sampled as in MetaSchedule's default space. --design-space default turns it off.
  mobilenetv2_100 at 512 trials: tuner estimate 1.74 ms against 3.04 ms (seed 0,
  docs/tvm.md, "Vector-width tiling").

conv2d algorithm (--conv2d; default: the database's, else direct):
  winograd rewrites every 3x3 stride-1 conv with 16+ channels into F(4x4,3x3) Winograd
  (NHWC only): a quarter of the multiplies, a weight four times larger, about twice the
  tuning time. At 512 trials on a 2-core AVX2 CPU: vgg16 0.63x the direct build's p50
  (0.93x ONNX Runtime's), squeezenet1_1 0.98x, resnet152 1.01x (docs/tvm.md,
  "Winograd"). tuning.json records the choice, and builds from that database follow it.

spatial means (--spatial-mean; default: the database's, reduce for one from before the
choice, else matmul):
  In NHWC a mean over height and width (squeeze-excitation, global pooling) is one reduction
  whose channel loop sits outside its pixel loops: no schedule vectorises it. matmul computes
  it as a GEMV by a row of 1/HW, from 28x28 pixels up. EfficientNet-B0's means at 16 trials:
  0.16-0.38x the reduction's time from 28x28 up (112x112x32: 60 against 381 us); in the
  network its pool family went from 2.91x ORT's to 0.94x (docs/tvm.md, "Spatial means").
  Give an older database the GEMV form by tuning only its new tasks:
  --spatial-mean matmul --only-tasks spatial_mean --trials 80.

trial allocation (--allocation; default uniform):
  A round gives every task one batch of candidates, then MetaSchedule's gradient rule picks
  the task with the largest expected gain. With even batches (uniform) that first round took
  29 x 17 = 493 of ResNet-152's 512 trials, and the 3x3 conv at 14x14 that holds 35% of its
  arithmetic got 51. share sizes each task's batches by its share of the network's
  arithmetic (calls x FLOPs; at least 2 candidates), and a task may take its share of the
  budget. At 512 trials, network p50 against the uniform database (one process): ResNet-152
  0.819x (that conv got 153 trials), but Swin-T 1.082x and MobileNetV2 1.210x: FLOPs miss
  the time of memory-bound kernels (layer norms, softmaxes, depthwise convs), whose batches
  shrank. So share is for networks whose time is in large convs (docs/tvm.md, "Trial
  allocation").

re-ranking (--rerank [K]; off unless asked for):
  A task's best record is the minimum over all its candidates of one ~50 ms measurement; on a
  CPU whose speed drifts, that minimum goes to a candidate measured at a fast moment. --rerank
  builds each task's K best records again, runs them 3 times each in round robin, and writes
  the fastest by median to <database>/reranked/ (rerank.json says what was measured), which
  builds apply first; the original records stay. With --trials 0 it re-ranks an existing
  database. ResNet-152's 14x14 conv after 128 more trials: its best re-ran at 1.88x its
  stored time, its 4th record at 1.00x; --rerank 8 then made the network 0.835x. On the
  512-trial database alone it changed nothing (1.009x): docs/tvm.md, "Re-ranking".

remote measurement:
  --rpc-tracker HOST:PORT --rpc-key KEY builds candidates here and measures them on the
  device registered with that key, e.g. on the Orin:
    python -m tvm.exec.rpc_server --tracker HOST:PORT --key orin
  (see docs/tvm.md).

export:
  --export DIR writes DIR/model-b<B>.so (one per --batch-sizes value) and DIR/manifest.json
  (target, TVM version, sha256 of each file, tuned or not). For jetson-agx-orin it
  cross-compiles: aarch64 host code (needs aarch64-linux-gnu-g++) and CUDA kernels compiled
  with NVRTC 12.2 to a cubin (or --cuda-format ptx) for sm_87. Load it with
  --variants tvm --tvm-artifact DIR, or with the TVM runtime alone (docs/tvm.md).

measuring the result:
  The command ends by printing the edgebench.full command that measures the tuned database
  (or the exported artifact) against ONNX Runtime: parity and latency, as records in a run
  directory. --measure [DIR] runs it here, writing the run to DIR (default
  results/run-<UTC timestamp>).
"""


NAME = "edgebench tune"     # the command in its error messages ("edgebench tune: error: ...")


def build_parser() -> argparse.ArgumentParser:

    p = ArgumentParser(
        prog="python -m edgebench.tune", error_name=NAME,
        description="Tune a vision model with TVM MetaSchedule (resumable, local or remote "
                    "measurement) and/or export a compiled TVM artifact for a target device.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="timm/torchvision model name")
    p.add_argument("--target", default="host",
                   help="host | jetson-agx-orin | jetson-agx-orin-cpu | a TVM tag | a JSON "
                        "target (default: host)")
    p.add_argument("--trials", type=int, default=512,
                   help="total tuning budget in measured candidates, database records "
                        "included (0: no tuning; default 512)")
    p.add_argument("--tuning-dir", default="results/tuning",
                   help="root of the tuning databases (default results/tuning)")
    p.add_argument("--export", metavar="DIR", help="write a loadable artifact to DIR")
    p.add_argument("--batch-size", type=int, default=1, help="batch size to tune (default 1)")
    p.add_argument("--batch-sizes", default=None,
                   help="comma list of batch sizes to export (default: --batch-size)")
    p.add_argument("--rpc-tracker", metavar="HOST:PORT",
                   help="measure candidates remotely through this TVM RPC tracker")
    p.add_argument("--rpc-key", metavar="KEY", help="device key registered with the tracker")
    p.add_argument("--weights", default="auto",
                   help="auto | pretrained | random | PATH (as for edgebench; default auto)")
    p.add_argument("--seed", type=int, default=0, help="seed for random weights and the tuner")
    p.add_argument("--input-size", metavar="CxHxW",
                   help="override the model's input size, e.g. 3x96x96")
    p.add_argument("--layout", choices=["NCHW", "NHWC"], default=None,
                   help="conv2d layout TVM computes in (default: the database's, else NHWC "
                        "on CPUs, NCHW on GPUs)")
    p.add_argument("--conv2d", choices=list(winograd.CHOICES), default=None,
                   help="how 3x3 stride-1 convs are computed: direct, or winograd (F(4x4,3x3), "
                        "NHWC only; fewer multiplies, a larger weight; default: the "
                        "database's, else direct)")
    p.add_argument("--spatial-mean", choices=list(passes.SPATIAL_MEANS), default=None,
                   help="how NHWC means over height and width (squeeze-excitation, global "
                        "pooling) are computed: reduce, or matmul (a GEMV by a row of 1/HW, "
                        "which the tuner vectorises over the channels; default: the "
                        "database's, reduce for one from before the choice, else matmul)")
    p.add_argument("--importer", choices=["auto", "torch.export", "onnx"], default="auto",
                   help="model importer (default auto: torch.export, ONNX if that fails)")
    p.add_argument("--cuda-format", choices=["cubin", "ptx"], default="cubin",
                   help="compiled GPU kernel format in exported artifacts (default cubin)")
    p.add_argument("--trials-per-iter", type=int, default=None,
                   help="candidates per task per round (default: budget/tasks, 4..64)")
    p.add_argument("--only-tasks", nargs="+", metavar="SUBSTRING", default=None,
                   help="tune only the tasks whose name contains one of these (e.g. "
                        "spatial_mean after --spatial-mean matmul on a database tuned before "
                        "it); --trials then counts those tasks' records alone")
    p.add_argument("--allocation", choices=scheduler.ALLOCATIONS, default="uniform",
                   help="uniform (default): every task the same batch, as MetaSchedule does; "
                        "share: a task's batch size and trial cap follow its share of the "
                        "network's arithmetic (calls x FLOPs): helped ResNet-152, hurt "
                        "Swin-T and MobileNetV2; see below")
    p.add_argument("--max-trials-per-task", type=int, default=None,
                   help="cap per task (default 4x an even share)")
    p.add_argument("--population", type=int, default=256,
                   help="evolutionary-search population (default 256)")
    p.add_argument("--transfer-from", nargs="+", metavar="DIR", default=None,
                   help="also pre-train the cost model on these tuning databases (a database "
                        "folder, a target folder, or a tuning dir)")
    p.add_argument("--transfer", action="store_true",
                   help="pre-train the cost model on the other models' databases for this "
                        "target under --tuning-dir (same layout and design space only; off "
                        "by default: no gain measured in the CPU default space)")
    p.add_argument("--no-reuse", dest="reuse", action="store_false",
                   help="do not copy the records of kernels other models' databases for this "
                        "target already tuned (default: reuse them; see below)")
    p.add_argument("--design-space", choices=design_space.CHOICES, default="auto",
                   help="auto (default): on CPUs, channels-last convs and matmuls tile their "
                        "output's innermost axis at the vector width; default: MetaSchedule's "
                        "own space for every task")
    p.add_argument("--rerank", nargs="?", type=int, const=4, default=None, metavar="K",
                   help="afterwards, re-measure each task's K best records side by side "
                        "(default 4; 3 rounds) and apply the fastest; see below")
    p.add_argument("--measure", nargs="?", const="", default=None, metavar="DIR",
                   help="afterwards, run the printed edgebench.full command (TVM and ONNX "
                        "Runtime, parity and latency) with its run directory in DIR "
                        "(default results/run-<UTC timestamp>)")
    p.add_argument("--cache-dir", default=CACHE_DIR,
                   help="cache for the ONNX fallback importer (default results/cache)")
    p.add_argument("--summary", metavar="PATH", help="also write the summary as JSON here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("-v", "--verbose", action="store_true", help="MetaSchedule's own log too")
    return p


def _load_model(args, input_size):
    from edgebench.models import make_spec, resolve_weights

    weights, note = resolve_weights(args.model, args.weights, args.seed)
    spec = make_spec(args.model, weights)
    if input_size:
        spec.input_size = tuple(input_size)
    return spec, note


def run(args, parsed) -> dict:
    target = parsed["target"]
    spec, weights_note = _load_model(args, parsed["input_size"])
    db_dir = database.db_dir_for(args.tuning_dir, target, spec.name, spec.input_size)
    lowering = passes.lowering_for(target, db_dir, args.layout, args.conv2d, args.spatial_mean)
    layout, conv2d, spatial_mean = (lowering[k] for k in ("layout", "conv2d", "spatial_mean"))
    summary: dict = {"model": spec.name, "weights": spec.weights, "weights_note": weights_note,
                     "input_size": list(spec.input_size), "target": targets.target_dict(target),
                     "target_name": parsed["target_name"], "database": str(db_dir),
                     "layout": layout, "conv2d": conv2d, "spatial_mean": spatial_mean,
                     **targets.tvm_versions()}
    model = spec.build()
    if args.rpc_tracker:
        summary["rpc"] = runner.check_rpc(args.rpc_tracker, args.rpc_key)
    if args.trials > 0:
        cfg = tuning.TuneConfig(
            trials=args.trials, trials_per_iter=args.trials_per_iter,
            max_trials_per_task=args.max_trials_per_task, population=args.population,
            rpc_tracker=args.rpc_tracker, rpc_key=args.rpc_key, seed=args.seed,
            layout=layout, conv2d=conv2d, spatial_mean=spatial_mean, verbose=args.verbose,
            transfer=args.transfer,
            transfer_from=args.transfer_from, design_space=args.design_space,
            reuse=args.reuse, allocation=args.allocation, op_names=args.only_tasks)
        prog = Progress(enabled=not args.no_progress and sys.stderr.isatty())
        try:
            res = tuning.tune(model, spec.input_size, args.batch_size, target, db_dir, cfg,
                              importer=args.importer, spec=spec, cache=Path(args.cache_dir),
                              on_start=prog.start, on_update=prog.update)
        finally:
            prog.stop()
        if res["machine_speed"] and res["machine_speed"].get("samples"):
            print(f"[tune] {machine_speed.describe(res['machine_speed'])}", file=sys.stderr,
                  flush=True)
        summary["tuning"] = {k: v for k, v in res.items() if k != "per_task"}
        summary["tuning_per_task"] = res["per_task"]
        if res["interrupted"]:
            summary["interrupted"] = True
            return summary
    if args.rerank:
        summary["rerank"] = _rerank(args, spec, model, target, db_dir, layout, conv2d,
                                    spatial_mean)
    if args.export:
        summary["export"] = export.export_artifact(
            args.export, spec, model, target, parsed["target_name"], parsed["batch_sizes"],
            db_dir=db_dir, layout=layout, conv2d=conv2d, spatial_mean=spatial_mean,
            importer=args.importer,
            cuda_format=args.cuda_format, cache=Path(args.cache_dir))
    summary["measure"] = measure(args, parsed, spec, db_dir)
    return summary


def _rerank(args, spec, model, target, db_dir, layout, conv2d, spatial_mean) -> dict:
    """--rerank: the model's tasks, each task's best records re-measured (rerank.py)."""
    from . import rerank
    from .importer import import_model

    if not database.database_exists(db_dir):
        raise TvmError(f"--rerank: no tuning database in {db_dir}")
    mod, _, _ = import_model(model, (args.batch_size, *spec.input_size), args.importer,
                             spec=spec, cache=Path(args.cache_dir))
    tasks = passes.extract_tasks(passes.lower_for_tuning(mod, target, layout, conv2d,
                                                         spatial_mean=spatial_mean), target)
    cfg = tuning.TuneConfig(rpc_tracker=args.rpc_tracker, rpc_key=args.rpc_key)

    def say(i, n, row):
        print(f"rerank {i}/{n} {row['task']}: picked #{row['picked']} "
              f"(re-measured us: {row['remeasured_us']}; stored: {row['stored_us']})",
              file=sys.stderr, flush=True)
    res = rerank.rerank(db_dir, target, tasks, cfg, top_k=args.rerank, on_task=say)
    print(f"reranked {res['tasks']} tasks in {res['seconds']} s, {res['changed']} changed: "
          f"{database.reranked_dir(db_dir)}", file=sys.stderr, flush=True)
    return {k: v for k, v in res.items() if k != "per_task"}


def measure_command(args, parsed, model: str, db_dir, out_dir: str | None = None) -> list:
    """The ``edgebench.full`` command that measures what this run tuned (or exported): TVM
    and ONNX Runtime, parity and latency, recorded in a run directory (``out_dir``)."""
    cmd = ["python", "-m", "edgebench.full", "--models", model,
           "--variants", "tvm", "onnxruntime", "--tasks", "parity", "latency"]
    if args.weights != "auto":
        cmd += ["--weights", args.weights]
    if args.seed:
        cmd += ["--seed", str(args.seed)]
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
    if args.input_size:
        out["note"] = (f"edgebench.full measures {spec.name} at its own input size, not "
                       f"{args.input_size}")
    where = "on the device" if _cross(parsed["target"]) else "here"
    print(f"measure it ({where}): {out['command']}", file=sys.stderr, flush=True)
    if out_dir is not None:
        proc = subprocess.run([sys.executable, *cmd[1:]], check=False)
        out.update(out_dir=out_dir, returncode=proc.returncode,
                   results=str(Path(out_dir) / "results.jsonl"))
    return out


def main(argv=None) -> int:
    from edgebench.models import ModelError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        parsed = validate(args)
    except UsageError as e:
        print(f"{NAME}: error: {e}", file=sys.stderr)
        return 2
    try:
        summary = run(args, parsed)
    except KeyboardInterrupt:
        print("interrupted; the trials measured so far are in the database (run the same "
              "command to resume)", file=sys.stderr)
        return 130
    except (RpcError, ModelError) as e:    # the tracker, or the weights (e.g. pretrained offline)
        print(f"{NAME}: error: {e}", file=sys.stderr)
        return 2
    except (TvmError, ExportError) as e:
        print(f"{NAME}: failed: {e}", file=sys.stderr)
        return 1
    text = json.dumps(summary, indent=1, default=str)
    if args.summary:
        Path(args.summary).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.summary, text + "\n")
    brief = {k: v for k, v in summary.items() if k != "tuning_per_task"}
    if "tuning" in brief:       # the speed trace is in the --summary file and tuning.json
        brief["tuning"] = {**brief["tuning"],
                           "machine_speed": machine_speed.without_trace(
                               brief["tuning"].get("machine_speed"))}
    print(json.dumps(brief, indent=1, default=str))
    if summary.get("interrupted"):
        print("interrupted; the trials measured so far are in the database (run the same "
              "command to resume)", file=sys.stderr)
        return 130
    rc = summary["measure"].get("returncode", 0)
    if rc:
        print(f"{NAME}: the measurement run exited with {rc} (its records: "
              f"{summary['measure']['results']})", file=sys.stderr)
        return 130 if rc == 130 else 1
    return 0

