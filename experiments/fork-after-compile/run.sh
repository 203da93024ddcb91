#!/usr/bin/env bash
# The fork-after-compile hang, reproduced with and without the wait that fixes it (README.md's
# table): the model branch's life from a cold compile (benchmarks/fork_after_compile_branch.py,
# COLD=1, 6 branches each without and with SETTLE=1, about 15 minutes each), then the
# warm-cache race with the wait (benchmarks/fork_after_compile_race.py, SETTLE=1, 100 forks).
# One compile thread, as the first runs. A hung cell's stack (py-spy, where installed) goes to
# WORK/hung-<pid>.txt; WORK defaults to results/experiments/fork-after-compile.
#
#   bash experiments/fork-after-compile/run.sh
#   bash experiments/fork-after-compile/run.sh --dry-run     # the commands, run nothing
#   N=20 bash experiments/fork-after-compile/run.sh           # 20 branches per arm
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
run_options "$@"
ROOT=$PWD
PY=${PY:-$ROOT/.venv/bin/python}
WORK=${WORK:-$ROOT/results/experiments/fork-after-compile}
N=${N:-6}
[ "$DRY" = 1 ] || mkdir -p "$WORK/inductor"
cd "$WORK" 2>/dev/null || [ "$DRY" = 1 ]
export TORCHINDUCTOR_COMPILE_THREADS=1
step env COLD=1 "$PY" "$ROOT/benchmarks/fork_after_compile_branch.py" efficientnet_b0 "$N"
step env COLD=1 SETTLE=1 "$PY" "$ROOT/benchmarks/fork_after_compile_branch.py" efficientnet_b0 "$N"
step env TORCHINDUCTOR_CACHE_DIR="$WORK/inductor" SETTLE=1 \
    "$PY" "$ROOT/benchmarks/fork_after_compile_race.py" efficientnet_b0 100
