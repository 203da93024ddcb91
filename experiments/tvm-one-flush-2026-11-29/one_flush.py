"""MLAS's convs and TVM's, each alone, with the caches emptied the same way before each call.

Issue 33 on the Zen 5 (../tvm-zen5-gaps-2026-11-29/): in the network, TVM's ResNet-152 convs
lose 15-21 % of their warm time, MLAS's 8 %, and the weights' trip from memory is most of
TVM's loss (operands.py). But the two "cold" figures behind that were taken with different
flushes in different processes: TVM's runner clflushes the call's arguments, ort_alone.py
writes 64 MiB from both cores and leaves it dirty. So does MLAS's conv really read cold
weights at a lower cost than TVM's, or do the two lose alike when the cache is emptied alike?

For every conv shape of MODEL that a task of the tuned TVM build matches (``ceiling``'s shape
keys), in one process, in rounds alternating the order of the arms and of the shapes (ABBA):
  ORT warm      the shape's single-Conv ORT model (ort_alone.py's), called back to back;
  ORT evicted   before each call a buffer of twice the last-level cache is written from every
                core, then clflushed line by line: every core's caches hold nothing of the
                conv's and no dirty line is left to write back during the call;
  ORT dirty     the write alone, as ort_alone.py's "cold" (its lines are dirty);
  ORT network   the whole ONNX model under ORT's profiler, a session of its own each round;
  TVM warm      the task's kernel built alone, as the tuner's runner times it;
  TVM evicted   the same eviction before each call (a time_evaluator preprocessor);
  TVM dirty     the write alone;
  TVM weights   only the kernel's weights clflushed (operands.py's "weights");
  TVM network   the tuned network, each kernel's time under the VM's instrument.
Only one ORT session is open at a time (ort_alone.py says why). An ORT time is the conv node's
median over a round's calls under ORT's profiler, a TVM time the evaluator's median (warm: its
mean); then the median over rounds. Sums are nodes (calls) x time per inference over the
matched shapes. ``--top N`` keeps the N shapes with the most TVM time per inference.

    .venv/bin/python experiments/tvm-one-flush-2026-11-29/one_flush.py --model resnet152 \\
        --tuning-dir results/experiments/tvm-six-models-zen5-2026-11-29/budget-1024 \\
        --lib-dir results/experiments/tvm-one-flush-2026-11-29/bin --json out.json
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "experiments" / "tvm-kernel-ceiling-2026-11-26"))
sys.path.insert(0, str(REPO / "experiments" / "tvm-zen5-gaps-2026-11-29"))

ORT_ARMS = ("ort_warm", "ort_evicted", "ort_dirty")
TVM_ARMS = ("tvm_warm", "tvm_evicted", "tvm_dirty", "tvm_weights")
COLUMNS = ("ort_warm", "ort_evicted", "ort_dirty", "ort_network",
           "tvm_warm", "tvm_evicted", "tvm_dirty", "tvm_weights", "tvm_network")


class Eviction:
    """``dirty()`` writes a buffer of twice the last-level cache from every core (ort_alone's
    Flusher); ``evict()`` then clflushes that buffer, so the caches are empty and clean."""

    def __init__(self, threads: int, flush_lines):
        from ort_alone import Flusher

        self.dirty = Flusher(threads)
        self.flush_lines = flush_lines

    def evict(self):
        self.dirty()
        for part in self.dirty.parts:
            self.flush_lines(part.ctypes.data, part.nbytes)

    @property
    def nbytes(self) -> int:
        return int(sum(a.nbytes for a in self.dirty.parts))


def matching_tasks(key: tuple, by_key: dict) -> list:
    """TVM's tasks of an ONNX conv's shape key. A conv whose output channels TVM padded to
    whole vectors (--out-channels; SqueezeNet's 1000-class conv runs as 1008) has the padded
    count in its task's key."""
    for co in (key[1], -(-key[1] // 8) * 8, -(-key[1] // 16) * 16):
        tasks = by_key.get((key[0], co, *key[2:]))
        if tasks:
            return tasks
    return []


def register_preprocs(ev: Eviction, flush_lines) -> None:
    """time_evaluator preprocessors (run before each measurement, outside the timed region)."""
    import tvm_ffi

    from operands import operands

    def weights(*args):
        for v in operands(args)["weights"]:
            flush_lines(v.ctypes.data, v.nbytes)

    tvm_ffi.register_global_func("edgebench.one_flush.evicted", lambda *a: ev.evict(),
                                 override=True)
    tvm_ffi.register_global_func("edgebench.one_flush.dirty", lambda *a: ev.dirty(),
                                 override=True)
    tvm_ffi.register_global_func("edgebench.one_flush.weights", weights, override=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--tuning-dir", required=True, help="tuning dir of the TVM database")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--calls", type=int, default=10,
                   help="flushed calls per kernel, arm and round (ORT: also its warm calls)")
    p.add_argument("--runs", type=int, default=10, help="network inferences per round and runtime")
    p.add_argument("--top", type=int, default=0, help="only the N shapes with the most TVM "
                   "time per inference (0: all matched shapes)")
    p.add_argument("--lib-dir", required=True, help="where flush_lines.c is compiled")
    p.add_argument("--cache-dir", default="results/cache", help="where the ONNX export goes")
    p.add_argument("--json")
    args = p.parse_args()

    import numpy as np
    import tvm

    from ceiling import ort_nodes, shape_key
    from converters.onnxruntime.export import export_onnx
    from converters.tvm import passes
    from converters.tvm.tuning import TuneConfig
    from edgebench.util import aligned_empty, physical_cores
    from operands import build_flush
    from ort_alone import conv_call_us, conv_models
    from tvm_profile import profiling_session, tvm_kernel_times
    from tvm_setup import kernel_alone, load, network_input, tuned_network

    threads = physical_cores()
    flush_lines = build_flush(Path(args.lib_dir))
    ev = Eviction(threads, flush_lines)
    register_preprocs(ev, flush_lines)

    m = load(args.model, args.tuning_dir)
    onnx_path = str(export_onnx(m.spec, Path(args.cache_dir)).path)
    _, funcs, vm = tuned_network(m)
    cfg = TuneConfig()
    # TVM's conv tasks by shape key; a shape may be several tasks (with or without a fused add)
    by_key: dict = {}
    for t in passes.extract_tasks(m.lowered, m.target):
        key = shape_key(t.dispatched[0], t.task_name)
        name = next((n for n in (t.task_name + "_prepacked", t.task_name) if n in funcs), None)
        if key and key[0] == "conv" and name:
            by_key.setdefault(tuple(key), []).append(
                {"task": t.task_name, "name": name, "calls": int(t.weight)})
    shapes = []
    for c in conv_models(onnx_path, Path(tempfile.mkdtemp())):
        tasks = matching_tasks(tuple(c["key"]), by_key)
        if tasks:
            shapes.append({**c, "tasks": tasks})
    print(f"[one-flush] {len(shapes)} conv shapes matched to TVM tasks; building their kernels",
          file=sys.stderr, flush=True)

    rng = np.random.RandomState(0)
    for s in shapes:
        s["x"] = rng.standard_normal(s["input"]).astype(np.float32)
        s.update({arm: [] for arm in (*ORT_ARMS, "ort_network")})
        for t in s["tasks"]:
            lib, tensors = kernel_alone(funcs[t["name"]], m.target)
            mk = lib.mod.time_evaluator
            t["ev"] = {"tvm_warm": mk("main", tvm.cpu(), number=cfg.number, repeat=cfg.repeat,
                                      min_repeat_ms=cfg.min_repeat_ms)}
            for arm in ("evicted", "dirty", "weights"):
                t["ev"][f"tvm_{arm}"] = mk("main", tvm.cpu(), number=1, repeat=args.calls,
                                           f_preproc=f"edgebench.one_flush.{arm}")
            t.update({"lib": lib, "tensors": tensors,
                      "weight_bytes": int(sum(a.numpy().nbytes for a in tensors[1:-1]
                                              if tuple(a.shape) != tuple(tensors[-1].shape))),
                      **{arm: [] for arm in (*TVM_ARMS, "tvm_network")}})
    if args.top:
        for s in shapes:
            s["tvm_guess"] = sum(t["calls"] * float(np.mean(t["ev"]["tvm_warm"](
                *t["tensors"]).results)) for t in s["tasks"])
        shapes = sorted(shapes, key=lambda s: -s["tvm_guess"])[:args.top]

    x_np = aligned_empty((1, *m.spec.input_size), np.float32)
    x_np[...] = np.random.RandomState(0).standard_normal(x_np.shape)
    x_tvm = network_input(m)
    fn = vm["main"]
    for _ in range(3):
        fn(x_tvm)
    warmup = 3

    def ort_calls(s, arm):
        # one ORT session open at a time (ort_alone.conv_call_us)
        flush = {"ort_evicted": ev.evict, "ort_dirty": ev.dirty}.get(arm)
        us, s["ort_key"] = conv_call_us(s["path"], s["x"], threads, args.calls, warmup, flush)
        s[arm].append(us)

    def ort_network():
        net = profiling_session(onnx_path, threads)
        feed = {net.get_inputs()[0].name: x_np}
        for _ in range(warmup + args.runs):
            net.run(None, feed)
        per_key: dict = {}
        for _op, key, d in ort_nodes(net.end_profiling()).values():
            per_key.setdefault(key, []).append(float(np.median(d[warmup:])))
        del net
        for s in shapes:
            nodes = per_key.get(s.get("ort_key") or tuple(s["key"]))
            if nodes:
                s["ort_network"].append(float(np.median(nodes)))

    def tvm_network():
        got = tvm_kernel_times(vm, fn, x_tvm, args.runs)
        for s in shapes:
            for t in s["tasks"]:
                if t["name"] in got:
                    t["tvm_network"].append(got[t["name"]]["us"] / got[t["name"]]["calls"])

    arms = [*ORT_ARMS, "ort_network", *TVM_ARMS, "tvm_network"]
    for r in range(args.rounds):
        order = shapes if r % 2 == 0 else shapes[::-1]
        for arm in (arms if r % 2 == 0 else arms[::-1]):
            if arm == "ort_network":
                ort_network()
            elif arm == "tvm_network":
                tvm_network()
            elif arm in ORT_ARMS:
                for s in order:
                    ort_calls(s, arm)
            else:
                for s in order:
                    for t in s["tasks"]:
                        res = t["ev"][arm](*t["tensors"]).results
                        t[arm].append(float(np.mean(res) if arm == "tvm_warm"
                                            else np.median(res)) * 1e6)
        print(f"[one-flush] round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)

    rows = []
    for s in shapes:
        calls = sum(t["calls"] for t in s["tasks"])
        row = {"shape_key": list(s.get("ort_key") or s["key"]), "nodes": s["count"],
               "tvm_tasks": [t["task"] for t in s["tasks"]], "tvm_calls": calls,
               "weight_mb": round(s["tasks"][0]["weight_bytes"] / 2**20, 3)}
        row["rounds_us"] = {arm: [round(v, 1) for v in s[arm]]
                            for arm in (*ORT_ARMS, "ort_network")}
        for t in s["tasks"]:
            row["rounds_us"].update({f"{t['task']}:{arm}": [round(v, 1) for v in t[arm]]
                                     for arm in (*TVM_ARMS, "tvm_network")})
        for arm in (*ORT_ARMS, "ort_network"):
            row[f"{arm}_us"] = round(float(np.median(s[arm])), 1) if s[arm] else None
        for arm in (*TVM_ARMS, "tvm_network"):
            # a call's time, averaged over the shape's tasks by their calls
            if all(t[arm] for t in s["tasks"]):
                row[f"{arm}_us"] = round(sum(t["calls"] * float(np.median(t[arm]))
                                             for t in s["tasks"]) / calls, 1)
            else:
                row[f"{arm}_us"] = None
        rows.append(row)
    rows.sort(key=lambda r: -(r["tvm_network_us"] or 0) * r["tvm_calls"])

    def total(col):
        count = "tvm_calls" if col.startswith("tvm") else "nodes"
        if any(r[f"{col}_us"] is None for r in rows):
            return None
        return round(sum(r[f"{col}_us"] * r[count] for r in rows) / 1e3, 3)

    out = {**m.header(), "onnx": onnx_path, "threads": threads, "rounds": args.rounds,
           "calls": args.calls, "runs": args.runs, "top": args.top,
           "eviction_bytes": ev.nbytes, "shapes": rows,
           "sums_ms": {col: total(col) for col in COLUMNS}}
    report(out)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


def report(out: dict) -> None:
    heads = ("ORT warm", "evicted", "dirty", "network", "TVM warm", "evicted", "dirty",
             "weights", "network")
    print(f"{out['model']} ({out['weights']}), database {out['database']}, {out['threads']} "
          f"threads, {out['rounds']} rounds; {out['eviction_bytes'] / 2**20:.0f} MiB written "
          f"(and clflushed: evicted) before each flushed call")
    print(f"{'shape (co, ci, kh, kw, oh, ow, h, w)':36} {'calls':>5} {'MiB':>5} "
          + " ".join(f"{h:>8}" for h in heads))
    for r in out["shapes"]:
        cells = " ".join(f"{r[f'{c}_us']:8.1f}" if r[f"{c}_us"] is not None else f"{'-':>8}"
                         for c in COLUMNS)
        print(f"{str(tuple(r['shape_key'][1:])):36} {r['tvm_calls']:5d} {r['weight_mb']:5.2f} "
              f"{cells}")
    s = out["sums_ms"]
    print("per inference (ms): " + ", ".join(f"{c} {s[c]}" for c in COLUMNS))
    for rt in ("ort", "tvm"):
        w = s[f"{rt}_warm"]
        if w:
            print(f"{rt.upper()} over its warm: " + ", ".join(
                f"{arm} {s[f'{rt}_{arm}'] / w:.3f}"
                for arm in ("evicted", "dirty", "weights", "network")
                if s.get(f"{rt}_{arm}")))
    if s["ort_warm"] and s["tvm_warm"]:
        print("TVM / ORT: " + ", ".join(f"{arm} {s[f'tvm_{arm}'] / s[f'ort_{arm}']:.3f}"
                                        for arm in ("warm", "evicted", "dirty", "network")
                                        if s[f"tvm_{arm}"] and s[f"ort_{arm}"]))


if __name__ == "__main__":
    sys.exit(main())
