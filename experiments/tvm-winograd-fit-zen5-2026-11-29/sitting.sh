#!/usr/bin/env bash
# Issue 33 on the Zen 5: the six study models' best databases against ORT in one sitting, as
# ../tvm-six-best-zen5-2026-11-29/ measured them, with this experiment's two new ones:
# ResNet-152's winograd-fit database (run.sh) and SqueezeNet 1.1's winograd one
# (squeezenet.sh). The other four are that sitting's. About 10 minutes on the 2-core Zen 5.
# The databases are restored from experiments/tvm-databases/ where missing. SITTING names the
# folder under runs/ (default sitting): a later sitting of some models goes beside the first.
#
#   bash experiments/tvm-winograd-fit-zen5-2026-11-29/sitting.sh
#   SITTING=sitting-2 MODELS=squeezenet1_1 bash experiments/tvm-winograd-fit-zen5-2026-11-29/sitting.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-winograd-fit-zen5-2026-11-29
WORK=results/experiments/tvm-winograd-fit-zen5-2026-11-29   # git-ignored: the databases
MODELS=${MODELS:-"squeezenet1_1 resnet152 mobilenetv2_100 efficientnet_b0 swin_tiny_patch4_window7_224 vgg16"}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh
# shellcheck source=experiments/tvm-six-best-zen5-2026-11-29/best.sh
. experiments/tvm-six-best-zen5-2026-11-29/best.sh   # best_db_zen5, sitting
best_db() {
    case $1 in
        resnet152|squeezenet1_1)
            restore_tvm_db "$1" "$WORK/tuning" experiments/tvm-databases/winograd-fit
            echo "$WORK/tuning" ;;
        *) best_db_zen5 "$1" ;;
    esac
}

start_experiment "$HERE"
sitting "$HERE/runs/${SITTING:-sitting}" "$MODELS"
