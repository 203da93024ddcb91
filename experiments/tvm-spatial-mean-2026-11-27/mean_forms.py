"""Issue 33: TVM's spatial means in NHWC, as a reduction and as a matmul, beside ONNX Runtime's.

EfficientNet-B0's squeeze-excitation means took 1134 us per inference in TVM against ORT's
527 us (``../tvm-six-models-2026-11-25/runs/efficientnet_b0/profile-512.*``); the largest,
over 112x112x32, 489 us per call in the network and 263 us as its database's best, where
ORT's largest ReduceMean took 52 us. In NHWC, Relax's ``mean(x, axis=[1, 2])`` lowers to one
reduction block whose spatial loop (the channels) sits outside its reduction loops (the
pixels), so each step of the sum reads one float C floats after the last, and no schedule
in MetaSchedule's CPU space puts the channels innermost to vectorise the sum. Written as a
matmul, ``(1, 1, HW) x (1, HW, C)`` with a constant row of 1/HW, the same sum is a GEMV that
the tuner's matmul tiling (vector-width channels innermost) covers: the suite's
``passes.spatial_mean_as_matmul`` (``edgebench.tune --spatial-mean matmul``).

For each spatial mean of EfficientNet-B0 (and its head's global pool) this tunes both forms
with the tuner's own loop, builder and runner (``converters.tvm``: design space ``auto``) into
a fresh database per form, builds each form alone as the suite builds a network (the
database applied, compiled, run by the Relax VM), and times the two forms and ORT's
``ReduceMean`` on the NCHW tensor (as ORT runs the model; the suite's session options) in
alternating rounds, in one process. Both forms are checked against numpy.

    .venv/bin/python experiments/tvm-spatial-mean-2026-11-27/mean_forms.py \\
        --work results/experiments/tvm-spatial-mean-2026-11-27 --json runs/mean_forms.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

# (H, W, C) of EfficientNet-B0's squeeze-excitation means, then its head's global pool.
SHAPES = [(112, 112, 32), (56, 56, 96), (56, 56, 144), (28, 28, 144), (28, 28, 240),
          (14, 14, 480), (14, 14, 672), (7, 7, 672), (7, 7, 1152), (7, 7, 1280)]
FORMS = ("reduce", "matmul")


def relax_module(h: int, w: int, c: int, form: str):
    """``mean`` over H and W of a (1, H, W, C) tensor, keepdims, in the given form (``matmul``:
    the suite's own rewrite, ``passes.spatial_mean_as_matmul``)."""
    from tvm import relax

    from converters.tvm import passes

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, h, w, c), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(relax.op.mean(x, axis=[1, 2], keepdims=True)))
        bb.emit_func_output(out)
    mod = bb.get()
    # min_pixels 0: the GEMV at every size (what sets the suite's threshold)
    return passes.spatial_mean_as_matmul(mod, min_pixels=0) if form == "matmul" else mod


def lower(mod, target):
    import tvm
    from tvm import relax

    with target:
        return tvm.transform.Sequential([
            relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
            relax.transform.FoldConstant(), relax.transform.FuseOps(),
            relax.transform.FuseTIR()])(mod)


def tune(lowered, target, db_dir: Path, trials_per_task: int) -> dict:
    """The tuner's own loop over this module's tasks: (trials, seconds, best us per task)."""
    from tvm.s_tir import meta_schedule as ms

    from converters.tvm import passes, runner, scheduler, tuning
    from edgebench.util import physical_cores

    cfg = tuning.TuneConfig(trials=trials_per_task, trials_per_iter=8,
                            max_trials_per_task=trials_per_task)
    tasks = passes.extract_tasks(lowered, target)
    db_dir.mkdir(parents=True, exist_ok=True)
    contexts, weights, spaces = tuning._tune_contexts(tasks, db_dir, target, "NHWC", cfg)
    db = ms.database.JSONDatabase(work_dir=str(db_dir))
    cost_model = ms.cost_model.XGBModel(extractor=ms.feature_extractor.PerStoreFeature(),
                                        adaptive_training=True,
                                        num_tuning_cores=physical_cores())
    n = len(tasks)
    existing = [{"trials": 0, "best_us": None}] * n
    loop = scheduler.Loop(contexts, weights, db, cost_model, runner.make_builder(cfg),
                          runner.make_runner(cfg), [8] * n, [trials_per_task] * n, existing,
                          None)
    t = time.perf_counter()
    loop.run(trials_per_task * n)
    return {"trials": loop.done, "seconds": round(time.perf_counter() - t, 1),
            "design_space": spaces,
            "best_us": {task.task_name: (round(b * 1e6, 2) if b else None)
                        for task, b in zip(tasks, loop.best)}}


def tvm_timer(lowered, target, db_dir: Path, x: np.ndarray):
    """The module as the suite builds a network from a database: (one timing in us, output)."""
    import tvm
    from tvm.runtime.vm import VirtualMachine

    from converters.tvm import build

    vm = VirtualMachine(build.compile_module(build.apply_database(lowered, target, str(db_dir)),
                                             target), tvm.cpu(0))
    arg = tvm.runtime.tensor(x)
    out = vm["main"](arg).numpy()
    ev = vm.time_evaluator("main", tvm.cpu(0), number=20, repeat=1, min_repeat_ms=20)
    return (lambda: ev(arg).mean * 1e6), out


def ort_timer(h: int, w: int, c: int, x_nhwc: np.ndarray):
    """ORT's ReduceMean over H and W of the NCHW tensor, with the suite's session options."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    from converters.onnxruntime.session import session_options

    axes = helper.make_tensor("axes", TensorProto.INT64, [2], [2, 3])
    graph = helper.make_graph(
        [helper.make_node("ReduceMean", ["x", "axes"], ["y"], keepdims=1)], "mean",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 1, 1])], [axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                              ir_version=10)      # onnxruntime 1.31 reads IR <= 13
    sess = ort.InferenceSession(model.SerializeToString(), session_options(),
                                providers=["CPUExecutionProvider"])
    x = np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2))
    out = sess.run(None, {"x": x})[0].transpose(0, 2, 3, 1)

    def timed():
        t = time.perf_counter()
        for _ in range(20):
            sess.run(None, {"x": x})
        return (time.perf_counter() - t) / 20 * 1e6
    onnx.checker.check_model(model)
    return timed, out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", required=True, help="git-ignored folder for the databases")
    p.add_argument("--trials", type=int, default=16, help="trials per task (default 16)")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--shapes", type=int, default=len(SHAPES), help="the first N shapes only")
    p.add_argument("--json")
    args = p.parse_args()

    from converters.tvm import targets

    target, _ = targets.resolve_target(None)
    threads = targets.configure_threads(target)
    out = {"target": str(target), "threads": threads, "trials_per_task": args.trials,
           "rounds": args.rounds, "shapes": []}
    for h, w, c in SHAPES[:args.shapes]:
        x = np.random.default_rng(0).standard_normal((1, h, w, c)).astype("float32")
        want = x.astype(np.float64).mean(axis=(1, 2), keepdims=True)
        row = {"hwc": [h, w, c], "tuning": {}, "max_abs_diff": {}, "us": {}}
        timers = {}
        for form in FORMS:
            lowered = lower(relax_module(h, w, c, form), target)
            db_dir = Path(args.work) / f"{h}x{w}x{c}-{form}"
            row["tuning"][form] = tune(lowered, target, db_dir, args.trials)
            timers[form], got = tvm_timer(lowered, target, db_dir, x)
            row["max_abs_diff"][form] = float(np.abs(got - want).max())
        timers["ort"], got = ort_timer(h, w, c, x)
        row["max_abs_diff"]["ort"] = float(np.abs(got - want).max())
        times = {k: [] for k in timers}
        for r in range(args.rounds):
            order = list(timers) if r % 2 == 0 else list(timers)[::-1]
            for k in order:
                times[k].append(timers[k]())
        row["us"] = {k: round(statistics.median(v), 2) for k, v in times.items()}
        row["matmul_over_reduce"] = round(row["us"]["matmul"] / row["us"]["reduce"], 3)
        row["matmul_over_ort"] = round(row["us"]["matmul"] / row["us"]["ort"], 3)
        row["reduce_over_ort"] = round(row["us"]["reduce"] / row["us"]["ort"], 3)
        out["shapes"].append(row)
        print(f"{h}x{w}x{c}: reduce {row['us']['reduce']:8.2f} us, matmul "
              f"{row['us']['matmul']:8.2f} us, ORT {row['us']['ort']:8.2f} us; matmul/reduce "
              f"{row['matmul_over_reduce']:.3f}, matmul/ORT {row['matmul_over_ort']:.3f}, "
              f"reduce/ORT {row['reduce_over_ort']:.3f}; max abs diff "
              + ", ".join(f"{k} {v:.1e}" for k, v in row["max_abs_diff"].items()), flush=True)
    total = {k: round(sum(r["us"][k] for r in out["shapes"]), 2) for k in ("reduce", "matmul",
                                                                          "ort")}
    out["total_us_one_call_each"] = total
    print(f"sum over the shapes (one call each): {total}", flush=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
