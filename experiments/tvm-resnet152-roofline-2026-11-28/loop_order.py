"""Does the order of the parallel loop decide how ResNet-152's 14x14 conv reads its weights?

The best record of the 3x3 conv at 14x14 (256 channels, 35 calls) in the streamed database
tiles its output as [y 2x7] x [x 14] x [16 channel blocks of 16], and its parallel loop runs
the 16 channel blocks innermost: each 7-pixel column walks all 2.4 MB of weights, 28 times a
call, through a 2 MiB L2. A weight-stationary order keeps a block's 147 KB in L2 over the
pixels: the same tiles with the channel blocks outermost (the channel split [16, 1, 1] in
place of [1, 16, 1]), which this design space can sample.

This writes a copy of a database in which that one record's trace carries the other
decision, and keeps the record's measured time, so builds from the copy apply the variant.
With ``--all``, every task's best record gets its parallel loop's channel blocks outermost
([a, b, c] -> [a*b, 1, c]): is the order a rule for every conv, or for this one?
The copy is for measurement only (``benchmarks/tvm_databases.py``, ``kernels_vs_ort.py``):
its record's time is not the variant's; never tune into it.

    .venv/bin/python experiments/tvm-resnet152-roofline-2026-11-28/loop_order.py \\
        --tuning-dir SRC --out DST [--split 16,1,1]
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

CONV = [(1, 14, 14, 256), (256, 3, 3, 256), (1, 1, 1, 256), (1, 14, 14, 256)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tuning-dir", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--split", default="16,1,1",
                   help="the channel loop's three outer factors (the vector's 16 is fixed)")
    p.add_argument("--all", action="store_true",
                   help="instead: in every task's best record, the channel split [a, b, c] "
                        "becomes [a*b, 1, c]: the blocks of the parallel loop's inner level "
                        "move to its outer one, the tiles inside it stay")
    args = p.parse_args()
    import tvm_ffi
    from tvm import s_tir
    from tvm.s_tir import meta_schedule as ms

    dbs = sorted(Path(args.tuning_dir).glob("*/resnet152-3x224x224"))
    if len(dbs) != 1:
        raise SystemExit(f"expected one resnet152 database under {args.tuning_dir}: {dbs}")
    src = dbs[0]
    dst = Path(args.out) / src.parent.name / src.name
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("logs", "reranked"))

    db = ms.database.JSONDatabase(path_workload=str(src / "database_workload.json"),
                                  path_tuning_record=str(src / "database_tuning_record.json"))
    best: dict = {}         # workload hash -> (mean seconds, record, argument shapes)
    for rec in db.get_all_tuning_records():
        if not rec.run_secs or max(float(x) for x in rec.run_secs) >= 1e9:
            continue
        f = rec.workload.mod["main"]
        shapes = [[int(s) for s in a.shape] for a in ms.arg_info.ArgInfo.from_prim_func(f)]
        t = sum(float(x) for x in rec.run_secs) / len(rec.run_secs)
        key = tvm_ffi.structural_hash(rec.workload.mod)
        if key not in best or t < best[key][0]:
            best[key] = (t, rec, shapes)
    if args.all:
        chosen = list(best.values())
    else:
        chosen = [b for b in best.values() if b[2] == [list(s) for s in CONV]]
        if not chosen:
            raise SystemExit("no record of the 14x14 3x3 conv in this database")
    want = [int(v) for v in args.split.split(",")]

    path = dst / "database_tuning_record.json"
    lines = path.read_text(encoding="utf-8").splitlines()
    parsed = [json.loads(ln) if ln.strip() else None for ln in lines]
    edited = []
    for t, rec, shapes in chosen:
        secs = [float(x) for x in rec.run_secs]
        # the record's line: its measured times are the best's (the JSON form of a trace
        # with a layout rewrite cannot be written back by TVM's as_json, so the line is edited)
        hits = [i for i, line in enumerate(parsed)
                if line and [float(x) for x in (line[1][1] or [])] == secs]
        if len(hits) != 1:
            print(f"{shapes}: found its record {len(hits)} times, left alone")
            continue
        insts, decisions = parsed[hits[0]][1][0]
        # the channel loop: the one three-factor tile (the vector's 16 is split off before;
        # the other spatial loops have four factors, the reductions two)
        found = [d for d in decisions if insts[d[0]][0] == "SamplePerfectTile" and len(d[1]) == 3]
        if len(found) != 1:
            print(f"{shapes}: no single channel split among {[d[1] for d in decisions]}, left alone")
            continue
        old = list(found[0][1])
        n = old[0] * old[1] * old[2]
        # --all moves the middle level's blocks into the outer one, which alone changes the
        # parallel loop's order; the inner level (inside the first reduction) stays
        new = [old[0] * old[1], 1, old[2]] if args.all else want
        if new == old or (not args.all and n != want[0] * want[1] * want[2]):
            continue
        found[0][1] = new
        lines[hits[0]] = json.dumps(parsed[hits[0]], separators=(",", ":"))
        edited.append((secs, shapes, old, new, t))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    # every edited record must apply: read the copy back and replay them
    copy = ms.database.JSONDatabase(path_workload=str(dst / "database_workload.json"),
                                    path_tuning_record=str(path))
    by_secs = {tuple(float(x) for x in r.run_secs): r for r in copy.get_all_tuning_records()
               if r.run_secs}
    for secs, shapes, old, new, t in edited:
        r = by_secs[tuple(secs)]
        sch = s_tir.Schedule(r.workload.mod)
        r.trace.apply_to_schedule(sch, remove_postproc=False)   # raises if invalid
        print(f"{shapes[-1]} ({t * 1e6:.1f} us): channel split {old} -> {new}")
    print(f"{dst}: {len(edited)} of {len(chosen)} best records edited")
    return 0


if __name__ == "__main__":
    sys.exit(main())
