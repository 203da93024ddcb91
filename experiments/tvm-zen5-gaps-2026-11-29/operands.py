"""Which operand do TVM's kernels pay for in the network: the weights, the output, the input
the previous kernel wrote, or a residual written long before?

TVM's kernels run 15-21 % (ResNet-152) and 16 % (SqueezeNet 1.1) slower in the network than
alone and warm, MLAS's 4-9 % (ort_alone.py). With every argument but the data flushed before
each call (TVM's ``cache_flush_cpu_non_first_arg``, kernels_vs_ort.py's "cold"), a kernel
alone takes about its network time. This splits that flush by operand. Each task's kernel,
built alone as the network calls it, is timed in one process, in ABBA rounds:
  warm      as the tuner's runner times a candidate (number, repeat, min_repeat_ms);
  weights   one call per measurement, the constant operands (the prepacked weights and the
            bias: every argument between the first and the last whose shape is not the
            output's) flushed from every core's caches before each call (clflush per line,
            flush_lines.c);
  output    the last argument flushed;
  input     the first argument (the data, which the previous kernel wrote) flushed;
  residual  the arguments with the output's shape (a fused add's other input) flushed;
  cold      TVM's own flush of every argument but the first, for comparison;
  network   the tuned network, each kernel's time under the VM's instrument.
Sums are calls x time per inference. The share of the network's loss a flush reproduces is
(flushed - warm) / (network - warm), over the kernels' sums.

    .venv/bin/python experiments/tvm-zen5-gaps-2026-11-29/operands.py --model resnet152 \\
        --tuning-dir results/experiments/tvm-six-models-zen5-2026-11-29/budget-1024 \\
        --lib-dir results/experiments/tvm-zen5-gaps-2026-11-29/bin --json out.json
"""
from __future__ import annotations

import argparse
import ctypes
import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

FLUSHED = ("weights", "output", "input", "residual")
MODES = ("warm", *FLUSHED, "cold")


def build_flush(lib_dir: Path):
    """flush_lines(pointer, bytes) from flush_lines.c, compiled for this machine."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise SystemExit("operands.py needs a C compiler for flush_lines.c")
    lib_dir.mkdir(parents=True, exist_ok=True)
    so = lib_dir / "libflush_lines.so"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", str(HERE / "flush_lines.c"), "-o",
                    str(so)], check=True)
    f = ctypes.CDLL(str(so)).flush_lines
    f.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return f


def operands(args) -> dict:
    """The call's arguments by role: numpy views of the TVM tensors (no copies)."""
    import numpy as np

    views = [np.from_dlpack(a) for a in args]
    out = views[-1]
    middle = views[1:-1]
    return {"input": [views[0]], "output": [out],
            "residual": [v for v in middle if v.shape == out.shape],
            "weights": [v for v in middle if v.shape != out.shape]}


def register_flushes(flush) -> None:
    """One global function per operand, for time_evaluator's ``f_preproc`` (it gets the call's
    arguments before each measurement, outside the timed region)."""
    import tvm_ffi

    for role in FLUSHED:
        def preproc(*args, role=role):
            for v in operands(args)[role]:
                flush(v.ctypes.data, v.nbytes)

        tvm_ffi.register_global_func(f"edgebench.flush_{role}", preproc, override=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--tuning-dir", required=True)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--repeat", type=int, default=10, help="flushed calls per kernel, mode and round")
    p.add_argument("--inferences", type=int, default=10, help="network calls per round")
    p.add_argument("--lib-dir", required=True, help="where flush_lines.c is compiled")
    p.add_argument("--json")
    args = p.parse_args()

    import numpy as np
    import tvm

    from converters.tvm import passes
    from converters.tvm.tuning import TuneConfig
    from tvm_profile import tvm_kernel_times
    from tvm_setup import kernel_alone, load, network_input, tuned_network

    register_flushes(build_flush(Path(args.lib_dir)))
    m = load(args.model, args.tuning_dir)
    tasks = passes.extract_tasks(m.lowered, m.target)
    _, funcs, vm = tuned_network(m)
    cfg = TuneConfig()
    kernels = []
    for t in tasks:
        name = next((n for n in (t.task_name + "_prepacked", t.task_name) if n in funcs), None)
        if name is None:
            continue
        lib, tensors = kernel_alone(funcs[name], m.target)
        ev = {"warm": lib.mod.time_evaluator("main", tvm.cpu(), number=cfg.number,
                                             repeat=cfg.repeat, min_repeat_ms=cfg.min_repeat_ms),
              "cold": lib.mod.time_evaluator("main", tvm.cpu(), number=1, repeat=args.repeat,
                                             f_preproc="cache_flush_cpu_non_first_arg")}
        for role in FLUSHED:
            ev[role] = lib.mod.time_evaluator("main", tvm.cpu(), number=1, repeat=args.repeat,
                                              f_preproc=f"edgebench.flush_{role}")
        roles = {r: len(v) for r, v in operands(tensors).items()}
        kernels.append({"task": t.task_name, "name": name, "calls": int(t.weight), "ev": ev,
                        "tensors": tensors, "roles": roles, "lib": lib,
                        **{mode: [] for mode in (*MODES, "network")}})
    print(f"[operands] {len(kernels)} kernels built alone", file=sys.stderr, flush=True)
    x = network_input(m)
    fn = vm["main"]
    for _ in range(3):
        fn(x)

    arms = [*MODES, "network"]
    for r in range(args.rounds):
        order = kernels if r % 2 == 0 else kernels[::-1]
        for arm in (arms if r % 2 == 0 else arms[::-1]):
            if arm == "network":
                got = tvm_kernel_times(vm, fn, x, args.inferences)
                for k in kernels:
                    if k["name"] in got:
                        k["network"].append(got[k["name"]]["us"] / got[k["name"]]["calls"])
                continue
            for k in order:
                if arm in FLUSHED and not k["roles"][arm]:
                    continue
                res = k["ev"][arm](*k["tensors"]).results
                k[arm].append(float(np.mean(res) if arm == "warm" else np.median(res)) * 1e6)
        print(f"[operands] round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)

    rows = []
    for k in kernels:
        row = {"task": k["task"], "kernel": k["name"], "calls": k["calls"], "roles": k["roles"]}
        for mode in (*MODES, "network"):
            row[f"{mode}_us"] = round(float(np.median(k[mode])), 1) if k[mode] else None
        rows.append(row)
    rows.sort(key=lambda r: -(r["network_us"] or 0) * r["calls"])

    def total(mode):
        # a kernel with no such operand costs what it costs warm
        return round(sum(r["calls"] * (r[f"{mode}_us"] if r[f"{mode}_us"] is not None
                                       else r["warm_us"]) for r in rows) / 1e3, 3)

    sums = {mode: total(mode) for mode in (*MODES, "network")}
    loss = sums["network"] - sums["warm"]
    out = {**m.header(), "rounds": args.rounds, "repeat": args.repeat,
           "inferences": args.inferences, "kernels": rows, "sums_ms": sums,
           "share_of_network_loss": {mode: round((sums[mode] - sums["warm"]) / loss, 3)
                                     for mode in (*FLUSHED, "cold")} if loss > 0 else None}
    report(out)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


def report(out: dict) -> None:
    cols = (*MODES, "network")
    print(f"{out['model']} ({out['weights']}), database {out['database']}, {out['rounds']} rounds")
    print(f"{'kernel':44} {'calls':>5} " + " ".join(f"{c:>9}" for c in cols))
    for r in out["kernels"]:
        cells = " ".join(f"{r[f'{c}_us']:9.1f}" if r[f"{c}_us"] is not None else f"{'-':>9}"
                         for c in cols)
        print(f"{r['task'][:44]:44} {r['calls']:5d} {cells}")
    s = out["sums_ms"]
    print("per inference (ms): " + ", ".join(f"{c} {s[c]}" for c in cols))
    if out["share_of_network_loss"]:
        print("share of the network's loss over warm that each flush reproduces: " + ", ".join(
            f"{c} {v:.2f}" for c, v in out["share_of_network_loss"].items()))


if __name__ == "__main__":
    sys.exit(main())
