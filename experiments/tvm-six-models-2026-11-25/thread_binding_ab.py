"""A/B: TVM's thread pool with its threads bound to cores (the default) against unbound
(``TVM_BIND_THREADS=0``), on a tuned model.

TVM's pool pins each worker to a core when it starts (threading_backend.cc, SetAffinity:
every value of TVM_BIND_THREADS but 1 turns it off) and reads the variable once, so each arm
runs in its own process. The tuned library is built once (the suite's lowering and
database) and exported; each round starts one process per arm, in ABBA order, that loads it
and times batch-1 calls with the suite's timing loop.

    python experiments/tvm-six-models-2026-11-25/thread_binding_ab.py --model squeezenet1_1 \\
        --tuning-dir results/experiments/tvm-six-models-2026-11-25/tuning --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
ARMS = {"bound (default)": {}, "unbound (TVM_BIND_THREADS=0)": {"TVM_BIND_THREADS": "0"}}


def _child(lib: str, shape: str, calls: int) -> int:
    """Load the library, warm up, time ``calls`` calls; print the times (ms) as JSON."""
    import numpy as np
    import tvm
    from tvm import relax

    from converters.tvm import targets
    from edgebench.measure import timed_calls

    targets.configure_threads(targets.resolve_target("host")[0])
    vm = relax.VirtualMachine(tvm.runtime.load_module(lib), tvm.cpu())
    x = tvm.runtime.tensor(np.random.RandomState(0).standard_normal(
        [int(d) for d in shape.split("x")]).astype("float32"))
    f = vm["main"]
    for _ in range(20):
        f(x)
    print(json.dumps(timed_calls(lambda _: f(x), None, calls, 0.0, 1e6).tolist()))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model")
    p.add_argument("--tuning-dir")
    p.add_argument("--rounds", type=int, default=6, help="ABBA rounds (each: A B B A)")
    p.add_argument("--calls", type=int, default=100, help="timed calls per arm process")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--child", nargs=3, metavar=("LIB", "SHAPE", "CALLS"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return _child(args.child[0], args.child[1], int(args.child[2]))
    if not (args.model and args.tuning_dir):
        p.error("--model and --tuning-dir are required")

    import numpy as np

    from converters.tvm import build, database, passes, targets
    from edgebench import sysinfo
    from edgebench.models import make_spec, resolve_weights

    target, _ = targets.resolve_target("host")
    threads = targets.configure_threads(target)
    weights, _ = resolve_weights(args.model, "auto", 0)
    spec = make_spec(args.model, weights)
    db = database.db_dir_for(args.tuning_dir, target, spec.name, spec.input_size)
    layout = passes.layout_for(target, db)
    shape = "x".join(map(str, (1, *spec.input_size)))
    with tempfile.TemporaryDirectory() as tmp:
        lib = Path(tmp) / "model.so"
        built = build.build_library(spec.build(), spec.input_size, 1, target, db_dir=db,
                                    layout=layout, spec=spec, out_path=lib)
        times = {arm: [] for arm in ARMS}
        names = list(ARMS)
        for r in range(args.rounds):
            order = names if r % 2 == 0 else names[::-1]
            for arm in order + order[::-1]:
                env = {**os.environ, **ARMS[arm], "PYTHONPATH": str(REPO)}
                out = subprocess.run([sys.executable, __file__, "--child", str(lib), shape,
                                      str(args.calls)], env=env, capture_output=True, text=True,
                                     check=True)
                times[arm].extend(json.loads(out.stdout.strip().splitlines()[-1]))
                print(f"round {r}: {arm}: p50 {np.median(times[arm][-args.calls:]):.3f} ms",
                      file=sys.stderr)
    res = {"model": spec.name, "database": str(db), "layout": layout, "cpu": sysinfo.cpu_model(),
           "target": targets.target_dict(target), "tvm_threads": threads,
           "tuning": built.get("tuning"), **targets.tvm_versions(), "arms": {}}
    for arm, v in times.items():
        a = np.asarray(v)
        res["arms"][arm] = {"env": ARMS[arm], "p50_ms": round(float(np.median(a)), 3),
                            "min_ms": round(float(a.min()), 3), "n": int(a.size)}
    a, b = (res["arms"][n]["p50_ms"] for n in names)
    res["unbound_over_bound_p50"] = round(b / a, 3)
    print(json.dumps(res, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
