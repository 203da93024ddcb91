"""Per-layer time of tuned TVM against ONNX Runtime on mobilenetv2_100, batch 1 (ad-hoc).

TVM: the suite's build (converters.tvm.build.build_library) with the database in TUNING_DIR,
each kernel call timed by a Relax VM instrument (before/after hooks), median over 60
inferences. ORT: CPUExecutionProvider, 2 intra-op threads, its own per-node profile, median
over 200 runs. Both run the same topological order, so row i of one is row i of the other
(ORT has two extra rows at the end: ReorderOutput and Flatten). Timings carry the hooks'
overhead (about 1 us per call), so the wall-clock lines are the figures to compare.

    python experiments/tvm-transfer/profile/per_layer.py TUNING_DIR   # e.g. results/experiments/tvm-transfer/tuning/nchw-s0
"""
import collections
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402

from converters.tvm import build, database, passes, targets  # noqa: E402
from edgebench.util import physical_cores  # noqa: E402
from edgebench.models import make_spec  # noqa: E402

tuning_dir = sys.argv[1]
spec = make_spec("mobilenetv2_100", "random-seed-0")
model = spec.build().eval()
target, _ = targets.resolve_target("host")
print("threads", targets.configure_threads(target))
x = np.random.RandomState(0).standard_normal((1, 3, 224, 224)).astype("float32")

# ORT
buf = io.BytesIO()
torch.onnx.export(model, (torch.from_numpy(x),), buf, dynamo=False, opset_version=18,
                  input_names=["input"], output_names=["logits"])
so = ort.SessionOptions()
so.intra_op_num_threads = physical_cores()
so.enable_profiling = True
so.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
sess = ort.InferenceSession(buf.getvalue(), so, providers=["CPUExecutionProvider"])
for _ in range(30):
    sess.run(None, {"input": x})
ts = []
for _ in range(200):
    t = time.perf_counter()
    sess.run(None, {"input": x})
    ts.append(time.perf_counter() - t)
print("ORT wall p50 %.3f ms, fastest %.3f ms" % (np.median(ts) * 1e3, min(ts) * 1e3))
nodes = collections.defaultdict(list)
for e in json.load(open(sess.end_profiling(), encoding="utf-8")):
    if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
        nodes[(e["name"][:-12], e["args"].get("op_name"))].append(e["dur"])
ort_rows = [(n, op, float(np.median(v))) for (n, op), v in nodes.items()]

# TVM
import tvm  # noqa: E402
from tvm.runtime.vm import VirtualMachine  # noqa: E402

db = database.db_dir_for(tuning_dir, target, spec.name, spec.input_size)
res = build.build_library(model, spec.input_size, 1, target, db_dir=db, spec=spec,
                          layout=passes.layout_for(target, db))   # the database's layout
print("TVM database", db, "trials", res["tuning"]["trials"], "estimate",
      res["tuning"]["estimate_ms"], "ms")
vm = VirtualMachine(res["executable"], tvm.cpu(0))
f = vm["main"]
inp = tvm.runtime.tensor(x)
for _ in range(20):
    f(inp)
ts = []
for _ in range(300):
    t = time.perf_counter()
    f(inp)
    ts.append(time.perf_counter() - t)
print("TVM wall p50 %.3f ms, fastest %.3f ms" % (np.median(ts) * 1e3, min(ts) * 1e3))
seqs, cur, start = [], [], {}


def instrument(func, sym, before, ret, *args):
    now = time.perf_counter_ns()
    if sym.startswith("vm.builtin"):
        return 0
    if before:
        start[sym] = now
    else:
        cur.append((sym, (now - start[sym]) / 1e3))
    return 0


vm.set_instrument(instrument)
for _ in range(60):
    cur = []
    f(inp)
    seqs.append(cur)
names = [s for s, _ in seqs[0]]
med = [float(np.median([s[i][1] for s in seqs])) for i in range(len(names))]
print("\n%-44s %8s | %-36s %8s  %s" % ("TVM kernel", "us", "ORT node", "us", "TVM/ORT"))
for i, (n, m) in enumerate(zip(names, med)):
    o = ort_rows[i] if i < len(ort_rows) else ("", "", 0.0)
    print("%-44s %8.1f | %-36s %8.1f  %.2fx" % (n[:44], m, o[0][-36:], o[2], m / max(o[2], 1)))
for n, op, us in ort_rows[len(names):]:   # ORT's last nodes (TVM's last are mean + matmul)
    print("%-44s %8s | %-36s %8.1f" % ("", "", n[-36:], us))
print("sum: TVM kernels %.3f ms, ORT nodes %.3f ms" % (sum(med) / 1e3,
                                                       sum(r[2] for r in ort_rows) / 1e3))
