#!/usr/bin/env bash
# CI's test command (.ci/run: the whole suite with the emulated Orin lane in the background)
# with every test's duration, to find where CI's time goes. About 55 minutes on 2 cores;
# run it on a quiet machine (nothing else on the cores), from an existing .venv.
#
#   bash experiments/ci-durations-2026-11-26/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/ci-durations-2026-11-26
LOG=${LOG:-/tmp/edgebench-ci-durations.log}
grep -m1 "model name" /proc/cpuinfo > "$HERE/cpu.txt"
grep -o -w -m1 -E "avx512f|avx2" /proc/cpuinfo | sort -u | tr '\n' ' ' >> "$HERE/cpu.txt"
start=$(date -u +%FT%TZ)
EDGEBENCH_EMULATED_LANE=1 .venv/bin/python -m pytest --durations=0 -p no:cacheprovider \
    > "$LOG" 2>&1
rc=$?
echo "started $start, ended $(date -u +%FT%TZ), pytest rc $rc" > "$HERE/when.txt"
.venv/bin/python "$HERE/tables.py" "$LOG" "$HERE"
