#!/usr/bin/env bash
# The default run's time: `python -m edgebench.full` with no arguments, on a fresh cache
# folder, as one timed process (benchmarks/default_run.py --cold), then its time budget and
# each variant's wall time; the load average every 30 s beside it (a busy machine shows
# there). About 16 minutes on 2 cores. Writes OUT (default
# results/experiments/default-run/<UTC time>/): the run's records, default_run-output.txt and
# loadavg.txt, as this folder's dated runs hold them.
#
#   bash experiments/default-run/run.sh
#   bash experiments/default-run/run.sh --dry-run     # the commands, run nothing
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
run_options "$@"
PY=${PY:-.venv/bin/python}
OUT=${OUT:-results/experiments/default-run/$(date -u +%Y%m%dT%H%M%SZ)}
if [ "$DRY" = 0 ]; then
    mkdir -p "$(dirname "$OUT")"
    (while sleep 30; do echo "$(date -u +%H:%M:%S) $(cat /proc/loadavg)"; done) \
        > "$OUT.loadavg.txt" &
    loadavg=$!
    trap 'kill "$loadavg" 2>/dev/null || true' EXIT
fi
run_cmd "$PY" benchmarks/default_run.py --cold --out "$OUT" | tee "$(sink "$OUT.output.txt")"
if [ "$DRY" = 0 ]; then
    kill "$loadavg" 2>/dev/null || true
    mv "$OUT.output.txt" "$OUT/default_run-output.txt"
    mv "$OUT.loadavg.txt" "$OUT/loadavg.txt"
fi
