# shellcheck shell=bash
# Shell helpers the experiments' run.sh scripts source (bash; from the repository root):
#   . experiments/lib.sh
# step CMD...            run CMD between two time-stamped lines, the second with its exit code
# record_cpu FILE        the CPU's model name, family and model numbers (both VM kinds say "AMD
#                        EPYC": Zen 3 is family 25 model 1, Zen 4 model 17, Zen 5 family 26
#                        model 2) and its vector
#                        extensions (the VM changes kind)
# start_experiment HERE  what an experiment's run.sh does first: PY (default .venv/bin/python),
#                        the repository on PYTHONPATH, HERE/runs, the CPU in HERE/cpu.txt
# keep_records HERE OUT TUNING_DIR MODELS FILES...
#                        copy each model's FILES from OUT/<model>/ and its database's
#                        tuning.json into HERE/runs/<model>/ (the databases stay git-ignored)
# tune_from_nothing MODEL TUNING_DIR RUNS LOG FLAG...
#                        MODEL tuned at 512 trials with FLAG... unless RUNS/tune.json exists;
#                        fails (1) where that summary is another CPU's (tuned_for_this_cpu)
# tuned_for_this_cpu TUNE_JSON
#                        whether a tuning summary's target is this CPU (LLVM's mcpu)
# tvm_best_db MODEL      the tuning dir of MODEL's best TVM database so far (issue 33's table),
#                        restored from experiments/tvm-databases/ where the git-ignored copy
#                        is missing (a fresh checkout)
# tvm_best_flags MODEL   the edgebench.tune flags that database was tuned with
# tvm_against_ort MODEL TUNING_DIR WORK RUNS [REPS]
#                        MODEL's TVM build from TUNING_DIR against ONNX Runtime: parity of both
#                        in one suite run (RUNS/parity.jsonl), then in processes of their
#                        own, alternated, REPS runs each (default 4; RUNS/vs-ort.*; the
#                        arms: $ARMS, default ort,tvm), then its per-kernel profile beside
#                        ORT's (RUNS/profile.*)
# parity_and_vs_ort MODEL TUNING_DIR WORK RUNS [REPS]
#                        tvm_against_ort without the profile
# profile_beside_ort MODEL TUNING_DIR RUNS
#                        that profile alone
# rerank_copy MODEL KEPT DIR CACHES OUT [K]
#                        a copy of the databases in tuning dir KEPT made in DIR (re-ranks left
#                        out) and re-ranked with no new trials (edgebench.tune --trials 0
#                        --rerank K, default 8, --runner-caches CACHES); its summary and log go
#                        to OUT.json and OUT.log
# networks_in_one_process MODEL OUT TUNING_DIR...
#                        the networks built from each tuning dir's database, interleaved in
#                        one process (benchmarks/tvm_databases.py): OUT.json and OUT.txt, kept
#                        on a rerun
# kernels_beside_ort MODEL TUNING_DIR WORK RUNS LABEL [ARGS...]
#                        every kernel of MODEL's TVM build beside ORT's node and both walls,
#                        in one process (../tvm-resnet152-zen4-2026-11-28/kernels_vs_ort.py,
#                        with ARGS, e.g. --ceilings DIR): RUNS/kernels-LABEL.*, kept on a
#                        rerun; its log in WORK
# kernels_then_ort MODEL TUNING_DIR WORK RUNS LABEL
#                        every kernel of MODEL's TVM build beside ORT's node and both walls,
#                        in one process (../tvm-resnet152-zen4-2026-11-28/kernels_vs_ort.py;
#                        RUNS/kernels-LABEL.*, kept on a rerun), then the build against ORT in
#                        processes of their own, alternated, REPS runs each (default 4;
#                        RUNS/vs-ort-LABEL.*)
# kernels_mlas_operands MODEL TUNING_DIR WORK RUNS LABEL [ARGS...]
#                        kernels_beside_ort (with ARGS), then every conv shape as an ORT model
#                        of its own beside ORT's nodes in the network and those TVM kernels
#                        (../tvm-zen5-gaps-2026-11-29/ort_alone.py: RUNS/ort-alone.*), then
#                        each TVM kernel alone with one operand flushed (operands.py there:
#                        RUNS/operands-LABEL.*); each kept on a rerun
# copy_best_db MODEL TARGET_GLOB DEST
#                        MODEL's database for the target folder matching TARGET_GLOB (e.g.
#                        'llvm-znver5-*') in its best tuning dir, copied afresh into tuning
#                        dir DEST (its JSON files, not its logs), so an experiment can resume
#                        or choose beside it and leave the kept one as measured; prints the
#                        copy's database folder
# tune_best_db MODEL WORK DEST
#                        complete MODEL's best database to 512 trials with those flags (a
#                        no-op where they are there); its summary and log go to WORK and are
#                        copied into DEST only when the session tuned

# (the exit code is kept before the second line's $(date) runs: that would reset $? to 0)
step() {
    local rc
    echo "[$(date -u +%H:%M:%S)] $*"
    "$@"
    rc=$?
    echo "[$(date -u +%H:%M:%S)] rc $rc"
    return "$rc"
}

record_cpu() {
    {
        grep -m1 "model name" /proc/cpuinfo
        grep -m1 -E "^cpu family" /proc/cpuinfo
        grep -m1 -E "^model\s" /proc/cpuinfo
        grep -o -w -m1 -E "avx512f|avx2" /proc/cpuinfo | sort -u | tr '\n' ' '
    } > "$1"
}

start_experiment() {
    PY=${PY:-.venv/bin/python}
    export PYTHONPATH=$PWD
    mkdir -p "$1/runs"
    record_cpu "$1/cpu.txt"
}

keep_records() {
    local here=$1 out=$2 tuning_dir=$3 models=$4 m f t
    shift 4
    for m in $models; do
        mkdir -p "$here/runs/$m"
        for f in "$@"; do
            [ -f "$out/$m/$f" ] && cp "$out/$m/$f" "$here/runs/$m/$f"
        done
        t=$(find "$tuning_dir" -mindepth 2 -maxdepth 2 -type d -name "$m-*" 2>/dev/null | head -1)
        [ -n "$t" ] && cp "$t/tuning.json" "$here/runs/$m/tuning.json"
    done
    return 0
}

# tune_from_nothing MODEL TUNING_DIR RUNS LOG FLAG...: MODEL tuned from nothing at 512 trials
# into TUNING_DIR with FLAG..., unless RUNS/tune.json exists (then 0 where it was tuned for
# this CPU, else 1, and the caller stops); its summary is RUNS/tune.json, its log LOG and
# RUNS/tune.log (without TVM's "Fast mode segfaults" lines). Without the models' recipes
# (--recipe none), as every script before 2026-12-02 ran: they name their flags; RECIPE=auto
# (or a --recipe in FLAG...) gives the model its recipe for the flags left unset. Without
# reuse (--no-reuse) unless REUSE=1.
tune_from_nothing() {
    local m=$1 dir=$2 runs=$3 log=$4 reuse=(--no-reuse)
    shift 4
    [ "${REUSE:-0}" = 1 ] && reuse=()
    if [ -f "$runs/tune.json" ]; then
        # kept records stand only for this CPU: another's are not retuned over, nor measured
        tuned_for_this_cpu "$runs/tune.json" && return 0
        return 1
    fi
    mkdir -p "$runs"
    step "${PY:-.venv/bin/python}" -m edgebench.tune --model "$m" --trials 512 \
        --tuning-dir "$dir" "${reuse[@]}" --no-progress --recipe "${RECIPE:-none}" \
        --summary "$runs/tune.json" "$@" > "$log" 2>&1
    grep -v 'Fast mode segfaults' "$log" > "$runs/tune.log"
}

# tune_then_measure MODEL WORK RUNS FLAG...: tune_from_nothing into WORK/tuning (its log
# WORK/tune-MODEL.log), then the network beside tvm_best_db's in one process, then against
# ORT and the profile (tvm_against_ort), each kept on a rerun; 1 where RUNS is another CPU's
tune_then_measure() {
    local m=$1 work=$2 runs=$3
    shift 3
    mkdir -p "$runs" "$work/ort-$m"
    tune_from_nothing "$m" "$work/tuning" "$runs" "$work/tune-$m.log" "$@" || return 1
    networks_in_one_process "$m" "$runs/networks" "$(tvm_best_db "$m")" "$work/tuning"
    [ -f "$runs/vs-ort.json" ] || tvm_against_ort "$m" "$work/tuning" "$work/ort-$m" "$runs"
    [ -f "$runs/profile.json" ] || profile_beside_ort "$m" "$work/tuning" "$runs"
}

# tuned_for_this_cpu TUNE_JSON: whether the summary's target names this machine's CPU as LLVM
# does (its mcpu); says which CPU it was tuned for when not
tuned_for_this_cpu() {
    "${PY:-.venv/bin/python}" - "$1" <<'PYEOF'
import json
import sys

from converters.tvm.targets import host_target_dict

was = json.load(open(sys.argv[1])).get("target", {}).get("mcpu")
here = host_target_dict()["mcpu"]
if was != here:
    sys.exit(f"{sys.argv[1]} was tuned for {was}; this CPU is {here}: its records are kept "
             "as they are (a new experiment dir tunes for this CPU)")
PYEOF
}

tvm_best_db() {
    local dir
    case $1 in
        # Zen 4: --allocation measured --runner-caches cold (2026-11-28); Zen 3: share
        resnet152) dir=results/experiments/tvm-resnet152-small-tasks-2026-11-28/measured-cold ;;
        vgg16) dir=results/experiments/tvm-winograd-2026-11-26/tuning ;;         # --conv2d winograd
        mobilenetv2_100) dir=results/experiments/tvm-measured-allocation-2026-11-27/uniform ;;
        # Zen 4: --concat split --out-channels pad (the defaults since); Zen 3: concats kept
        squeezenet1_1) dir=results/experiments/tvm-pad-channels-2026-11-28/tuning ;;
        *) dir=results/experiments/tvm-six-models-2026-11-25/tuning ;;
    esac
    restore_tvm_db "$1" "$dir"
    echo "$dir"
}

tvm_best_flags() {
    case $1 in
        # the Zen 4's; the Zen 3's was tuned with --allocation share. A database keeps its
        # runner caches, but a new target's starts warm unless told: cold is named here. On
        # the Zen 3 (warm) tune_best_db's session stops at once (runner.caches_for: caches
        # that do not compare) and the kept database is measured as it is.
        resnet152) echo "--allocation measured --runner-caches cold" ;;
        vgg16) echo "--conv2d winograd" ;;
        *) echo "" ;;
    esac
}

tune_best_db() {
    local m=$1 work=$2 dest=$3 flags
    flags=$(tvm_best_flags "$m")
    # A database restored from experiments/tvm-databases/ runs an empty session: its summary
    # would overwrite the kept one, so only a session that tuned is copied.
    # shellcheck disable=SC2086  # word list
    step "${PY:-.venv/bin/python}" -m edgebench.tune --model "$m" --trials 512 \
        --tuning-dir "$(tvm_best_db "$m")" --no-reuse $flags --no-progress \
        --summary "$work/tune-$m.json" > "$work/tune-$m.log" 2>&1
    if grep -q '"trials_run": [1-9]' "$work/tune-$m.json" 2>/dev/null; then
        cp "$work/tune-$m.json" "$work/tune-$m.log" "$dest/"
    fi
    return 0
}

copy_best_db() {
    local m=$1 glob=$2 dest=$3 src db rel
    src=$(tvm_best_db "$m")
    db=$(find "$src" -mindepth 2 -maxdepth 2 -type d -path "*/$glob/$m-*" | head -1)
    [ -n "$db" ] || { echo "no $glob database for $m in $src" >&2; return 1; }
    rel=${db#"$src"/}
    rm -rf "$dest" && mkdir -p "$dest/$rel" && cp "$db"/*.json "$dest/$rel/" || return 1
    echo "$dest/$rel"
}

rerank_copy() {
    local m=$1 kept=$2 dir=$3 caches=$4 out=$5 k=${6:-8}
    rm -rf "$dir" && mkdir -p "$dir" && cp -r "$kept"/* "$dir"/
    find "$dir" -type d -name reranked -prune -exec rm -rf {} +
    step "${PY:-.venv/bin/python}" -m edgebench.tune --model "$m" --trials 0 --rerank "$k" \
        --runner-caches "$caches" --tuning-dir "$dir" --no-progress --summary "$out.json" \
        > "$dir.log" 2>&1
    local rc=$?
    grep -v 'Fast mode segfaults' "$dir.log" > "$out.log"
    return "$rc"
}

networks_in_one_process() {
    local m=$1 out=$2
    shift 2
    [ -f "$out.json" ] && return 0
    step "${PY:-.venv/bin/python}" benchmarks/tvm_databases.py --model "$m" --tuning-dirs "$@" \
        --json "$out.json" 2>&1 | grep -v 'Fast mode segfaults' | tee "$out.txt"
}

kernels_beside_ort() {
    local m=$1 db=$2 work=$3 runs=$4 label=$5
    shift 5
    [ -f "$runs/kernels-$label.json" ] && return 0
    step "${PY:-.venv/bin/python}" experiments/tvm-resnet152-zen4-2026-11-28/kernels_vs_ort.py \
        --model "$m" --tuning-dir "$db" --json "$runs/kernels-$label.json" "$@" \
        2> "$work/kernels-$label.log" | tee "$runs/kernels-$label.txt"
}

kernels_mlas_operands() {
    local m=$1 db=$2 work=$3 runs=$4 label=$5 gaps=experiments/tvm-zen5-gaps-2026-11-29
    shift 5
    kernels_beside_ort "$m" "$db" "$work" "$runs" "$label" "$@"
    # ORT's convs alone right after TVM's kernels: the two are set side by side
    [ -f "$runs/ort-alone.json" ] || step "${PY:-.venv/bin/python}" "$gaps/ort_alone.py" \
        --model "$m" --tvm-json "$runs/kernels-$label.json" --json "$runs/ort-alone.json" 2>&1 \
        | grep -v -e 'Fast mode segfaults' -e '^\[ort-alone\]' | tee "$runs/ort-alone.txt"
    [ -f "$runs/operands-$label.json" ] || step "${PY:-.venv/bin/python}" "$gaps/operands.py" \
        --model "$m" --tuning-dir "$db" --lib-dir "$work/bin" \
        --json "$runs/operands-$label.json" 2>&1 \
        | grep -v -e 'Fast mode segfaults' -e '^\[operands\]' | tee "$runs/operands-$label.txt"
}

kernels_then_ort() {
    local m=$1 db=$2 work=$3 runs=$4 label=$5
    kernels_beside_ort "$m" "$db" "$work" "$runs" "$label"
    step "${PY:-.venv/bin/python}" experiments/tvm-threadpool-vs-ort-2026-11-27/pool_vs_ort.py \
        compare --model "$m" --tuning-dir "$db" --arms ort,tvm --reps "${REPS:-4}" \
        --json "$runs/vs-ort-$label.json" 2>&1 | tee "$runs/vs-ort-$label.txt"
}

tvm_against_ort() {
    parity_and_vs_ort "$@"
    profile_beside_ort "$1" "$2" "$4"
}

# parity_and_vs_ort MODEL TUNING_DIR WORK RUNS [REPS]: tvm_against_ort without the profile
parity_and_vs_ort() {
    local m=$1 db=$2 work=$3 runs=$4 reps=${5:-4}
    mkdir -p "$runs" "$work"
    step "${PY:-.venv/bin/python}" -m edgebench.full --models "$m" --variants tvm onnxruntime \
        --tasks parity --tuning-dir "$db" --out "$work/parity" --resume > "$work/parity.log" 2>&1
    cp "$work/parity/results.jsonl" "$runs/parity.jsonl"
    step "${PY:-.venv/bin/python}" experiments/tvm-threadpool-vs-ort-2026-11-27/pool_vs_ort.py \
        compare --model "$m" --tuning-dir "$db" --arms "${ARMS:-ort,tvm}" --reps "$reps" \
        --json "$runs/vs-ort.json" 2>&1 | tee "$runs/vs-ort.txt"
}

# profile_beside_ort MODEL TUNING_DIR RUNS: the build's per-kernel profile beside ORT's
# (benchmarks/tvm_profile.py): RUNS/profile.*
profile_beside_ort() {
    step "${PY:-.venv/bin/python}" benchmarks/tvm_profile.py --model "$1" --tuning-dir "$2" \
        --json "$3/profile.json" 2>&1 \
        | grep -v -e '^\[[a-z]' -e 'Fast mode segfaults' | tee "$3/profile.txt"
}

# The databases live in git-ignored tuning dirs; a fresh checkout has none, and retuning six
# models is hours on 2 cores. Each archive holds <target>/<model>-CxHxW/ without its logs.
# restore_tvm_db MODEL DIR [ROOT]: ROOT's archives (default experiments/tvm-databases; a
# replaced best database is kept under experiments/tvm-databases/superseded/).
restore_tvm_db() {
    local model=$1 dir=$2 root=${3:-experiments/tvm-databases} a
    for a in "$root"/*/"$model"-*.tar.xz; do
        [ -f "$a" ] || continue
        [ -f "$dir/$(basename "$(dirname "$a")")/$(basename "$a" .tar.xz)/database_tuning_record.json" ] \
            && continue
        mkdir -p "$dir" && tar -xJf "$a" -C "$dir" && echo "restored $a into $dir" >&2
    done
    return 0
}
