#!/usr/bin/env bash
# Reruns experiments/loadgen-vs-loop (README.md): edgebench's latency loop and timed batches
# against LoadGen's SingleStream and Offline on the same predictors, ABBA, six models x
# pytorch and onnxruntime. About 15 min on 2 cores.
#   PY (default .venv/bin/python), WORK (default results/experiments/loadgen-vs-loop)
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
WORK=${WORK:-results/experiments/loadgen-vs-loop}
"$PY" benchmarks/loadgen_vs_loop.py --rounds 2 --out "$WORK"
