#!/usr/bin/env bash
# Issue 33: a TVM build whose database was tuned at batch 1 runs any batch size, but every
# other size with untuned kernels. Before this change (BASE) the throughput search doubled
# from 1 as for any variant, compiling and measuring batch 2, 4, ... untuned, and MultiStream
# ran its 8-sample query as one untuned batch 8; the report did not say. After (HEAD) both
# keep to the database's tuned sizes (measure.tuned_sizes) and the report says so.
#
# One quick-profile run per arm of SqueezeNet 1.1's TVM cell with the database that
# ../tvm-recipes-zen4-2026-12-03/ tuned (batch 1, restored from ../tvm-databases/ where
# missing), tasks throughput and multistream, arms alternated BASE, HEAD:
#
#   python -m edgebench.full --models squeezenet1_1 --variants tvm \
#       --tasks throughput multistream --tuning-dir DB --out OUT
#
#   bash experiments/tvm-tuned-batch-sizes-2026-12-03/run.sh      # ~10 min on 2 cores
#
# runs/ARM/results.jsonl and report.md are kept; a rerun keeps an arm that has them.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
ROOT=$PWD
HERE=experiments/tvm-tuned-batch-sizes-2026-12-03
WORK=$ROOT/results/experiments/tvm-tuned-batch-sizes-2026-12-03    # git-ignored
DB=$ROOT/results/experiments/tvm-recipes-zen4-2026-12-03/tuning
BASE=${BASE:-b7603cd}
MODEL=squeezenet1_1

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
case $PY in /*) ;; *) PY=$ROOT/$PY ;; esac
restore_tvm_db "$MODEL" "$DB" experiments/tvm-databases/recipes-zen4
if [ ! -d "$WORK/base-tree" ]; then
    mkdir -p "$WORK/base-tree" && git archive "$BASE" | tar -x -C "$WORK/base-tree" || exit 1
fi
for arm in base head; do
    runs=$HERE/runs/$arm
    [ -f "$runs/results.jsonl" ] && continue
    tree=$ROOT
    [ "$arm" = base ] && tree=$WORK/base-tree
    rm -rf "${WORK:?}/$arm"
    (cd "$tree" && export PYTHONPATH=$tree &&
        step "$PY" -m edgebench.full --models "$MODEL" --variants tvm \
            --tasks throughput multistream --tuning-dir "$DB" --cache-dir "$WORK/cache-$arm" \
            --out "$WORK/$arm") > "$WORK/$arm.log" 2>&1
    mkdir -p "$runs"
    cp "$WORK/$arm/results.jsonl" "$WORK/$arm/report.md" "$runs/"
    grep -E '^\[[0-9:]+\]' "$WORK/$arm.log" > "$runs/wall.txt"
done
"$PY" - "$HERE/runs" <<'PYEOF'
import json
import sys
from pathlib import Path

for arm in ("base", "head"):
    for line in (Path(sys.argv[1]) / arm / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["task"] == "throughput":
            sizes = [(b["batch_size"], b["samples_per_s"]) for b in r.get("by_batch", [])]
            print(f"{arm} throughput: {r['status']}, wall {r.get('wall_s')} s, best batch "
                  f"{r.get('best_batch')}, {r.get('samples_per_s')} samples/s; by batch "
                  f"{sizes}; {r.get('stop_reason') or r.get('reason')}")
        elif r["task"] == "multistream":
            m = r.get("mlperf") or {}
            print(f"{arm} multistream: {r['status']}, wall {r.get('wall_s')} s, "
                  f"{(m.get('settings') or {}).get('batching')}; {m.get('metric')} "
                  f"{m.get('value')} {m.get('unit', '')}; {r.get('reason', '')}")
PYEOF
