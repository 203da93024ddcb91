"""Tune a model with TVM MetaSchedule, and/or export a compiled TVM artifact for a device.

    python -m edgebench.tune --model mobilenetv2_100 --trials 512
    python -m edgebench.tune --model mobilenetv2_100 --target jetson-agx-orin --trials 0 --export out/orin
    python -m edgebench.tune --model resnet152 --target jetson-agx-orin --trials 2000 \\
        --rpc-tracker 10.0.0.5:9190 --rpc-key orin          # measure candidates on the board

Exit codes: 0 done, 1 TVM failed (message says why), 2 bad arguments, 130 interrupted
(every trial measured so far is in the database; run the same command again to resume).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

EPILOG = """\
targets:
  host              LLVM for this machine's CPU (mcpu detected, e.g. znver5; all physical cores)
  jetson-agx-orin   TVM tag nvidia/jetson-agx-orin-64gb: CUDA sm_87 kernels + aarch64 host code
  <tag>             any TVM target tag, e.g. nvidia/jetson-agx-orin-32gb
  '{"kind": ...}'   a JSON target, e.g. '{"kind": "llvm", "mcpu": "neoverse-v2", "num-cores": 8}'

tuning database:
  <tuning-dir>/<target-slug>/<model>-CxHxW/database_{workload,tuning_record}.json (MetaSchedule
  JSON database; every measured candidate is appended at once) + tuning.json (sessions, seconds).
  --trials is the TOTAL budget for the model on that target: records already in the database
  count toward it, so re-running the same command resumes an interrupted run and a larger
  --trials continues a finished one. The edgebench "tvm" variant applies the database
  automatically (option tuning_dir).

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
  --variants tvm and option tvm_artifact=DIR, or with the TVM runtime alone (docs/tvm.md).
"""


class UsageError(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    from converters.tvm import design_space      # light: no TVM import

    p = argparse.ArgumentParser(
        prog="python -m edgebench.tune",
        description="Tune a vision model with TVM MetaSchedule (resumable, local or remote "
                    "measurement) and/or export a compiled TVM artifact for a target device.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="timm/torchvision model name")
    p.add_argument("--target", default="host",
                   help="host | jetson-agx-orin | a TVM tag | a JSON target (default: host)")
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
    p.add_argument("--importer", choices=["auto", "torch.export", "onnx"], default="auto",
                   help="model importer (default auto: torch.export, ONNX if that fails)")
    p.add_argument("--cuda-format", choices=["cubin", "ptx"], default="cubin",
                   help="compiled GPU kernel format in exported artifacts (default cubin)")
    p.add_argument("--trials-per-iter", type=int, default=None,
                   help="candidates per task per round (default: budget/tasks, 4..64)")
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
    p.add_argument("--design-space", choices=design_space.CHOICES, default="auto",
                   help="auto (default): on CPUs, channels-last convs and matmuls tile their "
                        "output's innermost axis at the vector width; default: MetaSchedule's "
                        "own space for every task")
    p.add_argument("--benchmark", action="store_true",
                   help="afterwards, compile with the database and compare batch-1 latency "
                        "(p50) with ONNX Runtime and PyTorch on this machine, plus parity")
    p.add_argument("--cache-dir", default="results/cache",
                   help="cache for the ONNX fallback importer (default results/cache)")
    p.add_argument("--summary", metavar="PATH", help="also write the summary as JSON here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("-v", "--verbose", action="store_true", help="MetaSchedule's own log too")
    return p


def _parse_size(s: str) -> tuple:
    try:
        parts = tuple(int(x) for x in s.lower().split("x"))
    except ValueError:
        raise UsageError(f"--input-size must look like 3x224x224 (got '{s}')") from None
    if len(parts) != 3 or min(parts) < 1:
        raise UsageError(f"--input-size must look like 3x224x224 (got '{s}')")
    return parts


def validate(args) -> dict:
    """Check the arguments; raise UsageError (exit 2) with the reason."""
    from converters.tvm import core

    if args.trials < 0:
        raise UsageError("--trials must be >= 0")
    if args.batch_size < 1:
        raise UsageError("--batch-size must be >= 1")
    if bool(args.rpc_tracker) != bool(args.rpc_key):
        raise UsageError("--rpc-tracker and --rpc-key go together")
    if args.rpc_tracker:
        from converters.tvm.tuning import parse_tracker

        try:
            parse_tracker(args.rpc_tracker)
        except ValueError as e:
            raise UsageError(str(e)) from None
    if args.trials == 0 and not args.export and not args.benchmark:
        raise UsageError("nothing to do: --trials 0 without --export or --benchmark")
    for name in ("trials_per_iter", "max_trials_per_task", "population"):
        v = getattr(args, name)
        if v is not None and v < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 1")
    batch_sizes = [args.batch_size]
    if args.batch_sizes:
        try:
            batch_sizes = sorted({int(b) for b in args.batch_sizes.split(",") if b.strip()})
        except ValueError:
            raise UsageError(f"--batch-sizes must be a comma list of integers "
                             f"(got '{args.batch_sizes}')") from None
        if not batch_sizes or min(batch_sizes) < 1:
            raise UsageError("--batch-sizes must be positive integers")
        if not args.export:
            raise UsageError("--batch-sizes only applies to --export")
    try:
        target, tname = core.resolve_target(args.target)
    except core.TargetError as e:
        raise UsageError(f"--target: {e}") from None
    if args.export:
        out = Path(args.export)
        if out.exists() and not out.is_dir():
            raise UsageError(f"--export {out}: exists and is not a directory")
        if out.is_dir() and any(out.iterdir()) and not (out / "manifest.json").is_file():
            raise UsageError(f"--export {out}: directory is not empty and holds no "
                             "edgebench artifact (refusing to overwrite)")
        from converters.tvm import export

        try:
            export.cross_compiler_for(target)
        except export.ExportError as e:
            raise UsageError(f"--export: {e}") from None
    if args.benchmark and (core.is_gpu(target) or _cross(target)):
        raise UsageError("--benchmark measures on this machine: use it with a host target")
    if args.trials > 0 and not args.rpc_tracker and (core.is_gpu(target) or _cross(target)):
        if not (core.is_gpu(target) and core.device_for(target).exist and not _cross(target)):
            raise UsageError(f"--target {args.target} cannot run here, so its candidates "
                             "cannot be measured locally: add --rpc-tracker HOST:PORT "
                             "--rpc-key KEY (a device running tvm.exec.rpc_server), or use "
                             "--trials 0 to export untuned")
    if args.transfer_from:
        from converters.tvm.tuning import transfer_databases

        here = Path(args.tuning_dir) / core.target_slug(target) / "-"
        try:
            transfer_databases(here, args.transfer_from, auto=False)
        except ValueError as e:
            raise UsageError(str(e)) from None
    from edgebench.models import ModelError, check_name

    try:
        check_name(args.model)
    except ModelError as e:
        raise UsageError(str(e)) from None
    return {"target": target, "target_name": tname, "batch_sizes": batch_sizes,
            "input_size": _parse_size(args.input_size) if args.input_size else None}


def _cross(target) -> bool:
    from converters.tvm import export

    try:
        return export.cross_compiler_for(target) is not None
    except export.ExportError:
        return True


class _Progress:
    """A rich progress bar: trials, elapsed, the best latency estimate so far."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.bar = None
        self.last_line = 0.0

    def start(self, info: dict):
        from rich.console import Console

        c = Console(stderr=True)
        c.print(f"[bold]tuning[/] {info['model_tasks']} tasks, budget {info['budget']} trials "
                f"({info['trials_before']} already in the database, {info['remaining']} to run; "
                f"{info['trials_per_iter']} per task per round), runner: {info['runner']}"
                + (f", {info['measure_threads']} thread(s) per candidate"
                   if info.get("measure_threads") else ""))
        c.print(f"database: {info['database']}")
        if info.get("transfer_from") and info["remaining"] > 0:
            names = ", ".join(Path(p).name for p in info["transfer_from"])
            c.print(f"cost model: pre-trained on {len(info['transfer_from'])} other "
                    f"database(s) ({names})")
        if info.get("transfer_skipped") and info["remaining"] > 0:
            kinds = sorted({f"{x['layout']}/{x['design_space']}"
                            for x in info["transfer_skipped"]})
            c.print(f"cost model: not trained on {len(info['transfer_skipped'])} database(s) "
                    f"tuned another way ({', '.join(kinds)}; this session: "
                    f"{info['layout']}/{info['session_design_space']})")
        if not self.enabled or info["remaining"] <= 0:
            return
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)

        self.bar = Progress(TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                            TextColumn("{task.fields[best]}"), console=c, transient=False)
        self.task = self.bar.add_task("tune", total=info["remaining"], best="best: -")
        self.bar.start()

    def update(self, done, est_ms, n_tuned, n_total, state):
        err = f", {state['errors']} failed" if state.get("errors") else ""
        if self.bar is None:  # no terminal: a plain line every 30 s
            if time.monotonic() - self.last_line > 30:
                self.last_line = time.monotonic()
                print(f"[tune] {done} trials, best est. {est_ms:.3f} ms over {n_tuned}/{n_total}"
                      f" tuned tasks{err}", file=sys.stderr, flush=True)
            return
        self.bar.update(self.task, completed=done,
                        best=f"best est. {est_ms:.3f} ms over {n_tuned}/{n_total} tuned tasks{err}")

    def stop(self):
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _load_model(args, input_size):
    from edgebench.models import make_spec, resolve_weights

    weights, note = resolve_weights(args.model, args.weights, args.seed)
    spec = make_spec(args.model, weights)
    if input_size:
        spec.input_size = tuple(input_size)
    return spec, note


def run(args, parsed) -> dict:
    from converters.tvm import core, tuning

    target = parsed["target"]
    spec, weights_note = _load_model(args, parsed["input_size"])
    db_dir = core.db_dir_for(args.tuning_dir, target, spec.name, spec.input_size)
    layout = core.layout_for(target, db_dir, args.layout)
    summary: dict = {"model": spec.name, "weights": spec.weights, "weights_note": weights_note,
                     "input_size": list(spec.input_size), "target": core.target_dict(target),
                     "target_name": parsed["target_name"], "database": str(db_dir),
                     "layout": layout, **core.tvm_versions()}
    model = spec.build()
    if args.rpc_tracker:
        summary["rpc"] = tuning.check_rpc(args.rpc_tracker, args.rpc_key)
    if args.trials > 0:
        cfg = tuning.TuneConfig(
            trials=args.trials, trials_per_iter=args.trials_per_iter,
            max_trials_per_task=args.max_trials_per_task, population=args.population,
            rpc_tracker=args.rpc_tracker, rpc_key=args.rpc_key, seed=args.seed,
            layout=layout, verbose=args.verbose, transfer=args.transfer,
            transfer_from=args.transfer_from, design_space=args.design_space)
        prog = _Progress(enabled=not args.no_progress and sys.stderr.isatty())
        try:
            res = tuning.tune(model, spec.input_size, args.batch_size, target, db_dir, cfg,
                              importer=args.importer, spec=spec, cache=Path(args.cache_dir),
                              on_start=prog.start, on_update=prog.update)
        finally:
            prog.stop()
        summary["tuning"] = {k: v for k, v in res.items() if k != "per_task"}
        summary["tuning_per_task"] = res["per_task"]
        if res["interrupted"]:
            summary["interrupted"] = True
            return summary
    if args.export:
        summary["export"] = do_export(args, parsed, spec, model, db_dir, layout)
    if args.benchmark:
        summary["benchmark"] = benchmark(spec, model, target, db_dir, layout, args.importer,
                                         cache=Path(args.cache_dir))
    return summary


def do_export(args, parsed, spec, model, db_dir, layout) -> dict:
    from converters.tvm import core, export

    target = parsed["target"]
    out = Path(args.export)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("model-b*.so"):
        old.unlink()
    use_db = db_dir if core.database_exists(db_dir) else None
    libs, tuning_by_batch, infos = {}, {}, {}
    importer = None
    for b in parsed["batch_sizes"]:
        res = core.build_library(model, spec.input_size, b, target, db_dir=use_db,
                                 importer=args.importer, layout=layout, spec=spec,
                                 cache=Path(args.cache_dir))
        name = f"model-b{b}.so"
        infos[b] = export.export_executable(res["executable"], out / name, target,
                                            args.cuda_format)
        libs[str(b)] = name
        tuning_by_batch[str(b)] = core.tuning_meta(use_db, res["tuning"])
        importer = res["importer"]
    first = str(parsed["batch_sizes"][0])
    arch, gpu = export.target_arch(target)
    manifest = {
        "model": spec.name, "weights": spec.weights, "input_size": list(spec.input_size),
        "input": {"name": "input", "dtype": "float32", "layout": "NCHW"},
        "output": {"dtype": "float32", "shape": ["batch", spec.num_classes]},
        "target": core.target_dict(target), "target_name": parsed["target_name"],
        "device": "cuda" if target.kind.name == "cuda" else "cpu", "host_arch": arch,
        "libraries": libs, "tuning": tuning_by_batch[first], "tuning_by_batch": tuning_by_batch,
        "importer": importer, "layout": layout, "entry": "main",
        "build": {str(b): i for b, i in infos.items()},
        "load": ("import tvm; from tvm import relax; lib = tvm.runtime.load_module('model-b1.so');"
                 f" vm = relax.VirtualMachine(lib, tvm.{'cuda' if gpu else 'cpu'}(0)); "
                 "logits = vm['main'](tvm.runtime.tensor(x, device=...)).numpy()"),
        **core.tvm_versions()}
    path = export.write_manifest(out, manifest)
    checks = {}
    for b, name in libs.items():
        p = out / name
        checks[name] = {"elf": export.elf_machine(p)}
        if gpu:
            checks[name]["gpu_code"] = export.gpu_code_in(p)
    return {"dir": str(out), "manifest": str(path), "libraries": libs, "checks": checks,
            "tuning": manifest["tuning"]}


def benchmark(spec, model, target, db_dir, layout, importer, cache=None, n_min: int = 200,
              min_s: float = 5.0) -> dict:
    """Batch-1 p50 of TVM (with the database), ONNX Runtime (ORT_ENABLE_ALL, intra-op threads
    = physical cores) and PyTorch eager, interleaved in rounds on the same input; parity of
    TVM and ORT against PyTorch."""
    import numpy as np
    import torch
    import tvm
    from tvm import relax

    from converters.tvm import core

    use_db = db_dir if core.database_exists(db_dir) else None
    threads = core.configure_threads(target)
    t = time.perf_counter()
    res = core.build_library(model, spec.input_size, 1, target, db_dir=use_db,
                             importer=importer, layout=layout, spec=spec, cache=cache)
    build_s = time.perf_counter() - t
    vm = relax.VirtualMachine(res["executable"], tvm.cpu())
    fn = vm["main"]
    x = np.random.RandomState(0).standard_normal((1, *spec.input_size)).astype("float32")
    xt = tvm.runtime.tensor(x)

    def run_tvm():
        xt.copyfrom(x)
        out = fn(xt)
        return (out if hasattr(out, "numpy") else out[0]).numpy()

    runners = {"tvm": run_tvm}
    ort_err = None
    try:
        import io

        import onnxruntime as ort

        buf = io.BytesIO()
        torch.onnx.export(model, (torch.from_numpy(x),), buf, dynamo=False, opset_version=18,
                          input_names=["input"], output_names=["logits"])
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = core.physical_cores()
        so.inter_op_num_threads = 1
        sess = ort.InferenceSession(buf.getvalue(), so, providers=["CPUExecutionProvider"])
        runners["onnxruntime"] = lambda: sess.run(None, {"input": x})[0]
    except Exception as e:  # noqa: BLE001
        ort_err = f"{type(e).__name__}: {e}"
    torch.set_num_threads(core.physical_cores())

    def run_torch():
        with torch.inference_mode():
            return model(torch.from_numpy(x)).numpy()

    runners["pytorch"] = run_torch
    ref = run_torch()
    out = {"input": list(x.shape), "tvm_build_s": round(build_s, 1),
           "tuning": core.tuning_meta(use_db, res["tuning"]), "tvm_threads": threads}
    for name, f in runners.items():
        for _ in range(10):
            f()
    times = {k: [] for k in runners}
    reps = {k: (1 if k == "pytorch" else 5) for k in runners}   # eager torch is slow here
    t_end = time.perf_counter() + min_s
    while min(len(v) for k, v in times.items() if k != "pytorch") < n_min \
            or time.perf_counter() < t_end:
        for name, f in runners.items():       # interleaved: load changes hit all alike
            for _ in range(reps[name]):
                t0 = time.perf_counter()
                f()
                times[name].append((time.perf_counter() - t0) * 1e3)
        if time.perf_counter() > t_end + 180:
            break
    for name, v in times.items():
        a = np.asarray(v)
        out[name] = {"p50_ms": round(float(np.median(a)), 3),
                     "min_ms": round(float(a.min()), 3),
                     "p10_ms": round(float(np.percentile(a, 10)), 3),
                     "p90_ms": round(float(np.percentile(a, 90)), 3), "n": int(a.size)}
        if name != "pytorch":
            o = runners[name]()
            out[name]["max_abs_diff_vs_torch"] = float(np.abs(o - ref).max())
    if ort_err:
        out["onnxruntime"] = {"error": ort_err}
    if "p50_ms" in out.get("onnxruntime", {}):
        out["tvm_over_ort"] = round(out["tvm"]["p50_ms"] / out["onnxruntime"]["p50_ms"], 3)
        out["tvm_over_ort_min"] = round(out["tvm"]["min_ms"] / out["onnxruntime"]["min_ms"], 3)
    try:
        out["load_avg_1m"] = round(os.getloadavg()[0], 2)   # other jobs on this machine
    except OSError:
        pass
    return out


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        parsed = validate(args)
    except UsageError as e:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return 2
    from converters.tvm import core, export, tuning

    try:
        summary = run(args, parsed)
    except KeyboardInterrupt:
        print("interrupted; the trials measured so far are in the database (run the same "
              "command to resume)", file=sys.stderr)
        return 130
    except tuning.RpcError as e:
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return 2
    except (core.TvmError, export.ExportError) as e:
        print(f"{parser.prog}: failed: {e}", file=sys.stderr)
        return 1
    text = json.dumps(summary, indent=1, default=str)
    if args.summary:
        Path(args.summary).parent.mkdir(parents=True, exist_ok=True)
        Path(args.summary).write_text(text + "\n")
    brief = {k: v for k, v in summary.items() if k != "tuning_per_task"}
    print(json.dumps(brief, indent=1, default=str))
    if summary.get("interrupted"):
        print("interrupted; the trials measured so far are in the database (run the same "
              "command to resume)", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
