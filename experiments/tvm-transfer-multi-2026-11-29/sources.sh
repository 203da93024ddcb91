# shellcheck shell=bash
# The cost-model transfer's sources, for run.sh, seed1.sh and measured.sh (sourced after
# experiments/lib.sh): ../tvm-multi-vector-2026-11-29/run.sh's databases.
#   transfer_sources MODEL   the array `from`: the other study models' databases, restored
#                            from experiments/tvm-databases/multi-vector/ where missing
MULTI=results/experiments/tvm-multi-vector-2026-11-29/multi
SOURCES="resnet152 squeezenet1_1 mobilenetv2_100 efficientnet_b0"

transfer_sources() {
    local other db
    from=()
    for other in $SOURCES; do
        [ "$other" = "$1" ] && continue
        restore_tvm_db "$other" "$MULTI" experiments/tvm-databases/multi-vector
        for db in "$MULTI"/llvm-*/"$other"-3x224x224; do
            [ -d "$db" ] || { echo "no multi-vector database of $other under $MULTI:" \
                "run ../tvm-multi-vector-2026-11-29/run.sh first" >&2; exit 1; }
            from+=("$db")
        done
    done
}
