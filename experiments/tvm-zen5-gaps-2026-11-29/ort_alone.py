"""Do ONNX Runtime's conv kernels lose time in the network, as TVM's do?

Issue 33 on the Zen 5: TVM's ResNet-152 kernels are level with ORT's nodes when timed alone and
warm, and 9-12 % slower in the network (kernels_vs_ort.py). The ORT side of that comparison is
always the node inside the network, under ORT's profiler: how fast MLAS's conv is alone and
warm was never measured, so "MLAS loses nothing in the network" was not a measurement.

For every distinct conv shape of MODEL's ONNX export, one of its Conv nodes (its weights, bias
and attributes) becomes a model of its own, in the suite's session options with the profiler
on. In one process, rounds alternating the order of the arms and of the shapes (ABBA):
  warm     each node's model called ``--calls`` times back to back;
  cold     the same, with a buffer of twice the last-level cache written from every core
           before each call: the weights come from memory, as in a network whose weights do
           not fit the cache. The conv's input is the NCHWc copy ORT's reorder node writes just
           before it, so it is warm, as in the network;
  network  the whole model, ``--runs`` inferences with the profiler on, in a session of its
           own each round.
Each node model gets a session of its own for each round and arm (3 calls to warm it, then
the measured ones), and only one session is open at a time: with the network's session open
and idle, a node model's conv ran twice its time in a process of its own. A shape's time is
the conv node's (``Conv`` in ORT's NCHWc domain) median over a round's calls, then the median
over rounds; in the network, over the nodes of that shape. Shapes are matched as ../tvm-kernel-ceiling-2026-11-26/ceiling.py matches
them (``ort_shape_key``). With ``--tvm-json`` (a kernels_vs_ort.py record of the same model)
the table sets TVM's warm, cold and network times beside ORT's.

    .venv/bin/python experiments/tvm-zen5-gaps-2026-11-29/ort_alone.py --model resnet152 \\
        --tvm-json experiments/tvm-zen5-gaps-2026-11-29/runs/resnet152/kernels-1024-outer.json \\
        --json out.json
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "experiments" / "tvm-kernel-ceiling-2026-11-26"))


def conv_models(onnx_path: str, out_dir: Path) -> list[dict]:
    """One single-Conv model per distinct shape key: [{key, path, input shape, count}]."""
    import onnx
    from onnx import helper, numpy_helper, shape_inference

    from ceiling import ort_shape_key

    model = shape_inference.infer_shapes(onnx.load(onnx_path))
    g = model.graph
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(g.input) + list(g.value_info) + list(g.output)}
    inits = {i.name: i for i in g.initializer}
    found: dict = {}
    for n in g.node:
        if n.op_type != "Conv" or n.input[1] not in inits:
            continue
        x, y = shapes.get(n.input[0]), shapes.get(n.output[0])
        w = list(numpy_helper.to_array(inits[n.input[1]]).shape)
        if not x or not y:
            continue
        x, y = [1, *x[1:]], [1, *y[1:]]         # the export's batch is dynamic
        if 0 in x or 0 in y:
            continue
        key = ort_shape_key("Conv", [x, w], y)
        if key in found:
            found[key]["count"] += 1
            continue
        params = [inits[name] for name in n.input[1:] if name in inits]
        node = helper.make_node("Conv", ["x", *[p.name for p in params]], ["y"],
                                name="conv")
        node.attribute.extend(n.attribute)
        graph = helper.make_graph(
            [node], "conv", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x)],
            [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, y)], params)
        m = helper.make_model(graph, opset_imports=list(model.opset_import))
        m.ir_version = model.ir_version
        path = out_dir / f"conv{len(found)}.onnx"
        onnx.save(m, str(path))
        found[key] = {"key": key, "path": str(path), "input": x, "count": 1}
    return list(found.values())


class Flusher:
    """Writes a buffer of twice the last-level cache from every core, so no core's caches
    keep the next call's weights."""

    def __init__(self, threads: int):
        import numpy as np

        from converters.tvm.runner import last_level_cache_bytes

        n = 2 * last_level_cache_bytes() // 4
        self.parts = np.array_split(np.zeros(n, np.float32), threads)
        self.pool = ThreadPoolExecutor(threads)

    def __call__(self):
        import numpy as np

        # numpy releases the GIL in the ufunc, so the parts are written in parallel
        list(self.pool.map(lambda a: np.add(a, 1.0, out=a), self.parts))


def conv_node(profile_path: str) -> tuple[list[float], tuple | None]:
    """A node model's conv: its durations (us, in order) and its shape key as ORT's profiler
    gives it, which is the key of that conv's nodes in the network's profile. ORT may have
    changed the shape: SqueezeNet's 1000-class conv runs as 1008 channels in its NCHWc domain
    (TVM pads it the same way), so the ONNX graph's key would match nothing."""
    from ceiling import ort_nodes

    convs = [(k, d) for op, k, d in ort_nodes(profile_path).values()
             if op in ("Conv", "FusedConv")]
    if len(convs) != 1:
        raise SystemExit(f"{profile_path}: expected one conv node, found {len(convs)}")
    return convs[0][1], convs[0][0]


def conv_call_us(path: str, x, threads: int, calls: int, warmup: int = 3,
                 before_each=None) -> tuple[float, tuple | None]:
    """A node model's conv in a session of its own: ``warmup`` calls, then ``calls`` more
    (``before_each()`` ahead of each); the conv node's median over those (us) under ORT's
    profiler, and its shape key (``conv_node``). The session is closed before returning:
    with another session open and idle, a node model's conv ran 2x its time in a process of
    its own, with 5 ms stalls (a scheduler slice: the idle pool's worker kept a core)."""
    import numpy as np

    from tvm_profile import profiling_session

    sess = profiling_session(path, threads)
    feed = {"x": x}
    for _ in range(warmup):
        sess.run(None, feed)
    for _ in range(calls):
        if before_each is not None:
            before_each()
        sess.run(None, feed)
    d, key = conv_node(sess.end_profiling())
    del sess
    return float(np.median(d[warmup:])), key


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--calls", type=int, default=10, help="calls per node model, arm and round")
    p.add_argument("--runs", type=int, default=10, help="profiled network runs per round")
    p.add_argument("--cache-dir", default="results/cache", help="where the ONNX export goes")
    p.add_argument("--tvm-json", help="a kernels_vs_ort.py record of the same model: its "
                   "TVM warm, cold and network times go beside ORT's")
    p.add_argument("--json")
    args = p.parse_args()

    import numpy as np

    from ceiling import ort_nodes
    from converters.onnxruntime.export import export_onnx
    from edgebench.models import make_spec, resolve_weights
    from edgebench.util import aligned_empty, physical_cores
    from tvm_profile import profiling_session

    threads = physical_cores()
    weights, note = resolve_weights(args.model, "auto", 0)
    spec = make_spec(args.model, weights)
    onnx_path = str(export_onnx(spec, Path(args.cache_dir)).path)
    tmp = Path(tempfile.mkdtemp())
    convs = conv_models(onnx_path, tmp)
    print(f"[ort-alone] {len(convs)} conv shapes", file=sys.stderr, flush=True)
    rng = np.random.RandomState(0)
    for c in convs:
        c["x"] = rng.standard_normal(c["input"]).astype(np.float32)
        c["warm_us"], c["cold_us"] = [], []
    x = aligned_empty((1, *spec.input_size), np.float32)
    x[...] = rng.standard_normal(x.shape)
    flush = Flusher(threads)
    net_nodes: dict = {}    # node -> (op, key, [us of every measured run, round after round])
    warmup = 3

    def calls(c, arm):
        # one ORT session open at a time (conv_call_us)
        us, c["ort_key"] = conv_call_us(c["path"], c["x"], threads, args.calls, warmup,
                                        flush if arm == "cold" else None)
        c[f"{arm}_us"].append(us)

    def network():
        net = profiling_session(onnx_path, threads)
        feed = {net.get_inputs()[0].name: x}
        for _ in range(warmup + args.runs):
            net.run(None, feed)
        for name, (op, key, d) in ort_nodes(net.end_profiling()).items():
            net_nodes.setdefault(name, (op, key, []))[2].extend(d[warmup:])
        del net

    arms = ["warm", "network", "cold"]
    for r in range(args.rounds):
        order = convs if r % 2 == 0 else convs[::-1]
        for arm in (arms if r % 2 == 0 else arms[::-1]):
            if arm == "network":
                network()
            else:
                for c in order:
                    calls(c, arm)
        print(f"[ort-alone] round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)

    for c in convs:
        for arm in ("warm", "cold"):
            c[f"{arm}_us"] = float(np.median(c[f"{arm}_us"]))
    rows = []
    tvm_rows: dict = {}     # shape key -> TVM's tasks of that conv shape (with or without an add)
    if args.tvm_json:
        with open(args.tvm_json, encoding="utf-8") as f:
            for k in json.load(f)["kernels"]:
                if k.get("shape_key") and k.get("warm_us"):
                    tvm_rows.setdefault(tuple(k["shape_key"]), []).append(k)
    for c in convs:
        key = c["ort_key"] or c["key"]
        nodes = [d for _op, k, d in net_nodes.values() if k == key]
        # per node: its median over the runs of each round, then over the rounds
        net_us = float(np.median([np.median([np.median(d[i:i + args.runs])
                                             for i in range(0, len(d), args.runs)])
                                  for d in nodes])) if nodes else None
        row = {"shape_key": list(key), "onnx_shape_key": list(c["key"]), "nodes": c["count"],
               "ort_warm_us": round(c["warm_us"], 1), "ort_cold_us": round(c["cold_us"], 1),
               "ort_network_us": round(net_us, 1) if net_us else None}
        ts = tvm_rows.get(tuple(key))
        if ts:
            n = sum(t["calls"] for t in ts)
            # a call's time, averaged over the tasks of this shape by their calls
            row.update({"tvm_tasks": [t["task"] for t in ts], "tvm_calls": n, **{
                f"tvm_{mode}_us": round(sum(t["calls"] * t[f"{mode}_us"] for t in ts) / n, 1)
                for mode in ("warm", "cold", "network")}})
        rows.append(row)
    rows.sort(key=lambda r: -(r["ort_network_us"] or 0) * r["nodes"])

    def total(field, only_tvm=False):
        count = "tvm_calls" if field.startswith("tvm") else "nodes"
        return round(sum(r[field] * r[count] for r in rows
                         if r.get(field) and (not only_tvm or r.get("tvm_warm_us"))) / 1e3, 3)

    out = {"model": args.model, "weights": weights, "weights_note": note, "threads": threads,
           "rounds": args.rounds, "calls": args.calls, "runs": args.runs,
           "flush_bytes": int(sum(a.nbytes for a in flush.parts)),
           "tvm_json": args.tvm_json, "shapes": rows,
           "sums_ms": {f: total(f) for f in ("ort_warm_us", "ort_cold_us", "ort_network_us")},
           "matched_sums_ms": {f: total(f, True) for f in (
               "ort_warm_us", "ort_cold_us", "ort_network_us", "tvm_warm_us", "tvm_cold_us",
               "tvm_network_us")} if tvm_rows else None}
    report(out)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


def report(out: dict) -> None:
    def ratio(a, b):
        return f"{a / b:8.3f}" if a and b else "        "

    print(f"{out['model']} ({out['weights']}), {out['threads']} threads, {out['rounds']} rounds; "
          f"flush {out['flush_bytes'] / 2**20:.0f} MiB before each cold call")
    print(f"{'shape (co, ci, kh, kw, oh, ow, h, w)':38} {'nodes':>5} {'ORT warm':>9} "
          f"{'cold':>8} {'network':>8} {'net/warm':>8}   {'TVM warm':>9} {'cold':>8} "
          f"{'network':>8} {'net/warm':>8}")
    for r in out["shapes"]:
        tvm = (f"   {r['tvm_warm_us']:9.1f} {r['tvm_cold_us']:8.1f} {r['tvm_network_us']:8.1f} "
               f"{ratio(r['tvm_network_us'], r['tvm_warm_us'])}") if r.get("tvm_warm_us") else ""
        print(f"{str(tuple(r['shape_key'][1:])):38} {r['nodes']:5d} {r['ort_warm_us']:9.1f} "
              f"{r['ort_cold_us']:8.1f} {r['ort_network_us'] or 0:8.1f} "
              f"{ratio(r['ort_network_us'], r['ort_warm_us'])}{tvm}")
    s = out["sums_ms"]
    print(f"ORT's convs per inference: warm {s['ort_warm_us']} ms, cold {s['ort_cold_us']}, "
          f"network {s['ort_network_us']} (network/warm "
          f"{s['ort_network_us'] / s['ort_warm_us']:.3f})")
    m = out["matched_sums_ms"]
    if m:
        print(f"matched to TVM's tasks, per inference: ORT warm {m['ort_warm_us']} ms, cold "
              f"{m['ort_cold_us']}, network {m['ort_network_us']} "
              f"({m['ort_network_us'] / m['ort_warm_us']:.3f}); TVM warm {m['tvm_warm_us']}, "
              f"cold {m['tvm_cold_us']}, network {m['tvm_network_us']} "
              f"({m['tvm_network_us'] / m['tvm_warm_us']:.3f})")


if __name__ == "__main__":
    sys.exit(main())
