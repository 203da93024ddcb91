#!/usr/bin/env bash
# Reruns experiments/loadgen-vs-loop (README.md): edgebench's latency loop and timed batches
# against LoadGen's SingleStream and Offline on the same predictors, ABBA, six models x
# pytorch and onnxruntime (benchmarks/loadgen_vs_loop.py). About 15 min on 2 cores.
#   PY (default .venv/bin/python), WORK (default results/experiments/loadgen-vs-loop)
#
#   bash experiments/loadgen-vs-loop/run.sh
#   bash experiments/loadgen-vs-loop/run.sh --dry-run     # the command, run nothing
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
run_options "$@"
PY=${PY:-.venv/bin/python}
WORK=${WORK:-results/experiments/loadgen-vs-loop}
step "$PY" benchmarks/loadgen_vs_loop.py --rounds 2 --out "$WORK"
