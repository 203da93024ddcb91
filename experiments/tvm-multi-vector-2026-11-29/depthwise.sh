#!/usr/bin/env bash
# Issue 33 on the Zen 5: multi-vector without and with its depthwise rule, on MobileNetV2.
# The first MobileNetV2 database of run.sh (runs/mobilenetv2_100-union-all/, its database in
# $WORK/multi-union-all) was tuned before design_space.py kept depthwise convs and pools at one
# vector: every task whose channels divide into pairs of vectors got the two-vector sketch. The
# code no longer tunes that way; to make it again, drop the _reduces_over_channels test in
# design_space.space_for. Here, after run.sh has tuned MobileNetV2 with the rule: the kept
# Zen 5 database, the one without the rule and the one with it, interleaved in one process.
# About 3 minutes on the 2-core Zen 5.
#
#   bash experiments/tvm-multi-vector-2026-11-29/depthwise.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-multi-vector-2026-11-29
WORK=results/experiments/tvm-multi-vector-2026-11-29  # git-ignored: the databases
M=mobilenetv2_100

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
networks_in_one_process "$M" "$HERE/runs/$M/networks-3" "$(tvm_best_db "$M")" \
    "$WORK/multi-union-all" "$WORK/multi"
