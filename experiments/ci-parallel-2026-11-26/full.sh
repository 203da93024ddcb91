#!/usr/bin/env bash
# CI's test command (.ci/run: EDGEBENCH_EMULATED_LANE=1, pyproject's addopts: two xdist
# workers) from an existing .venv, set-up not timed; its output to full-suite.txt.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
here=experiments/ci-parallel-2026-11-26
start=$(date +%s)
EDGEBENCH_EMULATED_LANE=1 .venv/bin/python -m pytest -p no:cacheprovider > "$here/full-suite.txt" 2>&1
rc=$?
echo "full suite (two workers, the emulated lane): rc $rc, $(( $(date +%s) - start )) s" | tee -a "$here/walls.txt"
