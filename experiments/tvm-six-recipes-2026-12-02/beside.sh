#!/usr/bin/env bash
# MODEL's database from run.sh beside the same CPU's database of 2026-11-29
# (../tvm-six-models-zen5-2026-11-29/, kept in ../tvm-databases/llvm-znver5-f9a8b735/), both
# networks in one process, interleaved (benchmarks/tvm_databases.py): runs/MODEL/beside-1129.*
#
#   bash experiments/tvm-six-recipes-2026-12-02/beside.sh efficientnet_b0
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
HERE=experiments/tvm-six-recipes-2026-12-02
WORK=results/experiments/tvm-six-recipes-2026-12-02
m=${1:?model}
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
start_experiment "$HERE"
restore_tvm_db "$m" "$WORK/tuning" experiments/tvm-databases/six-recipes
restore_tvm_db "$m" "$WORK/kept-1129" experiments/tvm-databases
[ -d "$WORK/kept-1129/llvm-znver5-f9a8b735" ] || { echo "no 11-29 Zen 5 database of $m" >&2; exit 1; }
networks_in_one_process "$m" "$HERE/runs/$m/beside-1129" "$WORK/kept-1129" "$WORK/tuning"
