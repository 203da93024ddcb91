#!/usr/bin/env bash
# Issue 33 on the Zen 5: a larger evolutionary-search population at the same trial budget.
# edgebench.tune searches with a population of 256 (TVM's default is 512) to keep the search,
# which is most of a session's time on 2 cores (ResNet-152: 315 of 386 s), short. A larger
# population costs search time, not trials. For each model, from nothing:
# - tuned at 512 trials with the flags of its multi-vector session
#   (../tvm-multi-vector-2026-11-29/run.sh) and --population $POP;
# - its network beside the kept Zen 5 database's and the population-256 multi-vector one,
#   interleaved in one process;
# - against ORT: parity, 4 alternated runs, a per-kernel profile (tvm_against_ort).
# About 20 minutes for ResNet-152 on the 2-core Zen 5.
#
#   bash experiments/tvm-population-2026-11-29/run.sh
#   MODELS=squeezenet1_1 POP=1024 bash experiments/tvm-population-2026-11-29/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-population-2026-11-29
WORK=results/experiments/tvm-population-2026-11-29  # git-ignored: the databases
MULTI=results/experiments/tvm-multi-vector-2026-11-29/multi  # ../tvm-multi-vector-2026-11-29
MODELS=${MODELS:-resnet152}
POP=${POP:-512}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK"
for m in $MODELS; do
    runs=$HERE/runs/$m-pop$POP
    db=$WORK/pop$POP
    mkdir -p "$runs" "$WORK/ort-$m-pop$POP"
    if [ ! -f "$runs/tune.json" ]; then
        # shellcheck disable=SC2046  # the flags are a word list
        step "$PY" -m edgebench.tune --model "$m" --trials 512 --tuning-dir "$db" \
            --no-reuse $(tvm_best_flags "$m") --design-space multi-vector \
            --no-transfer --population "$POP" \
            --no-progress --summary "$runs/tune.json" > "$WORK/tune-$m-pop$POP.log" 2>&1
        grep -v 'Fast mode segfaults' "$WORK/tune-$m-pop$POP.log" > "$runs/tune.log"
    fi
    networks_in_one_process "$m" "$runs/networks" "$(tvm_best_db "$m")" "$MULTI" "$db"
    [ -f "$runs/vs-ort.json" ] || tvm_against_ort "$m" "$db" "$WORK/ort-$m-pop$POP" "$runs"
done
