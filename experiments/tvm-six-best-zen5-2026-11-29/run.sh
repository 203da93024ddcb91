#!/usr/bin/env bash
# Issue 33 on the Zen 5: the six study models' best databases so far against ORT, one after
# the other in one sitting, so that the six ratios come from one stretch of the VM's day.
# Each best database is tuned from nothing at 512 trials (docs/tvm.md, "Best so far on the Zen
# 5"); each is measured as before: ORT and TVM alternated in processes of their own, 4 runs
# each (pool_vs_ort.py compare). Parity was checked where each database was made. About 20
# minutes on the 2-core Zen 5. The databases are restored from experiments/tvm-databases/
# where missing.
#
#   bash experiments/tvm-six-best-zen5-2026-11-29/run.sh
#   MODELS="resnet152 squeezenet1_1" bash experiments/tvm-six-best-zen5-2026-11-29/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-six-best-zen5-2026-11-29
MODELS=${MODELS:-"squeezenet1_1 resnet152 mobilenetv2_100 efficientnet_b0 swin_tiny_patch4_window7_224 vgg16"}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

# shellcheck source=experiments/tvm-six-best-zen5-2026-11-29/best.sh
. "$HERE/best.sh"                                   # best_db_zen5, sitting
best_db() { best_db_zen5 "$1"; }

start_experiment "$HERE"
sitting "$HERE/runs" "$MODELS"
