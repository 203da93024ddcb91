#!/usr/bin/env bash
# Issue 33: on the Zen 4 VM, TVM's runs of ResNet-152 sit further above their fastest call
# than ORT's (p50 / fastest 1.05-1.19 against 1.01-1.11 in ../tvm-input-conv-2026-11-28/).
# Is that TVM's pool pinning its threads to cores (TVM_BIND_THREADS, on by default; ORT does
# not pin)? pool_vs_ort.py's arms ort, tvm and tvm-nobind, alternated in processes of their
# own, REPS blocks (default 4), on the input-conv database. About 6 minutes.
#
#   bash experiments/tvm-bind-zen4-2026-11-28/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-bind-zen4-2026-11-28
M=${MODEL:-resnet152}
DB=results/experiments/tvm-input-conv-2026-11-28/$M/tuning   # ../tvm-input-conv-2026-11-28/run.sh

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
step "$PY" experiments/tvm-threadpool-vs-ort-2026-11-27/pool_vs_ort.py compare --model "$M" \
    --tuning-dir "$DB" --arms ort,tvm,tvm-nobind --reps "${REPS:-4}" \
    --json "$HERE/runs/$M.json" 2>&1 | tee "$HERE/runs/$M.txt"
