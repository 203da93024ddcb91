"""TVM's network and ONNX Runtime's session of one model in one process, their calls
alternated in rounds, with the process's huge pages counted: does backing the weights with
2 MiB pages change either runtime's p50, or their ratio?

ResNet-152 reads 240 MB of weights per inference, 60,000 4 KiB pages: a page walk for each
(in a VM, a two-level one), and the hardware prefetchers stop at page boundaries. The kernel
here backs anonymous memory with huge pages only where a process asks (``madvise`` mode);
glibc asks for every ``mmap``-ed allocation when started with
``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``. ``run.sh`` runs this in processes with and
without it, alternated (ABBA); each process gives both runtimes' p50 and their ratio.

    .venv/bin/python experiments/tvm-hugepages-2026-11-28/walls.py \\
        --model resnet152 --tuning-dir DIR --json OUT.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def huge_kib() -> dict:
    """This process's anonymous memory and the part of it in huge pages (KiB)."""
    out = {}
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("Rss", "Anonymous", "AnonHugePages"):
            out[key] = int(rest.split()[0])
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--tuning-dir", required=True)
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--calls", type=int, default=15, help="calls per runtime per round")
    p.add_argument("--cache-dir", default="results/cache", help="where the ONNX export goes")
    p.add_argument("--json")
    args = p.parse_args()

    import numpy as np
    import onnxruntime as ort
    import tvm
    from tvm.runtime.vm import VirtualMachine

    from converters.onnxruntime.export import export_onnx
    from converters.onnxruntime.session import session_options
    from converters.tvm import build, database, passes, targets
    from edgebench.measure import timed_calls
    from edgebench.models import make_spec, resolve_weights
    from edgebench.util import physical_cores

    target, _ = targets.resolve_target("host")
    threads = targets.configure_threads(target)
    weights, note = resolve_weights(args.model, "auto", 0)
    spec = make_spec(args.model, weights)
    db = database.db_dir_for(args.tuning_dir, target, spec.name, spec.input_size)
    if not database.database_exists(db):
        raise SystemExit(f"no database for {spec.name} in {args.tuning_dir} (looked in {db})")
    res = build.build_library(spec.build(), spec.input_size, 1, target, db_dir=db, spec=spec,
                              **passes.lowering_for(target, db))
    vm = VirtualMachine(res["executable"], tvm.cpu(0))
    fn = vm["main"]
    onnx_path = str(export_onnx(spec, Path(args.cache_dir)).path)
    sess = ort.InferenceSession(onnx_path, session_options(physical_cores()),
                                providers=["CPUExecutionProvider"])
    x = np.random.RandomState(0).standard_normal((1, *spec.input_size)).astype("float32")
    tx = tvm.runtime.tensor(x)
    feed = {sess.get_inputs()[0].name: x}
    arms = {"tvm": lambda _: fn(tx), "ort": lambda _: sess.run(None, feed)}
    for _ in range(10):
        for call in arms.values():
            call(None)
    times: dict = {a: [] for a in arms}
    for r in range(args.rounds):
        for a in (list(arms) if r % 2 == 0 else list(arms)[::-1]):
            times[a].extend(timed_calls(arms[a], None, args.calls, 0.0, 1e6).tolist())
        print(f"[walls] round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
    mem = huge_kib()
    out = {"model": spec.name, "weights": spec.weights, "weights_note": note,
           "database": str(db), "trials": res["tuning"]["trials"],
           "glibc_tunables": os.environ.get("GLIBC_TUNABLES", ""),
           "thp_enabled": Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text().strip(),
           "memory_kib": mem, "tvm_threads": threads, "ort_threads": physical_cores(),
           "rounds": args.rounds, "calls_per_round": args.calls, **targets.tvm_versions(),
           "onnxruntime": ort.__version__}
    for a, v in times.items():
        v = np.asarray(v)
        out[a] = {"p50_ms": round(float(np.median(v)), 3), "min_ms": round(float(v.min()), 3),
                  "n": int(v.size)}
    out["tvm_over_ort_p50"] = round(out["tvm"]["p50_ms"] / out["ort"]["p50_ms"], 4)
    out["tvm_over_ort_min"] = round(out["tvm"]["min_ms"] / out["ort"]["min_ms"], 4)
    print(f"hugetlb={out['glibc_tunables'] or 'off':28s} AnonHuge {mem.get('AnonHugePages', 0) // 1024:5d} MiB "
          f"of {mem.get('Anonymous', 0) // 1024} MiB  tvm p50 {out['tvm']['p50_ms']:.2f} "
          f"min {out['tvm']['min_ms']:.2f}  ort p50 {out['ort']['p50_ms']:.2f} "
          f"min {out['ort']['min_ms']:.2f}  tvm/ort p50 {out['tvm_over_ort_p50']:.3f} "
          f"min {out['tvm_over_ort_min']:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
