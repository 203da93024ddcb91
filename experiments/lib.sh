# shellcheck shell=bash
# Shell helpers the experiments' run.sh scripts source (bash; from the repository root):
#   . experiments/lib.sh
#   run_options "$@"
# run_options ARGS...    a run.sh's options: --help prints the script's header comment (the
#                        comment lines after the shebang) and exits 0; --dry-run sets DRY=1;
#                        anything else exits 2. Opens fd 3 on the terminal's stdout.
#                        With DRY=1, step and the helpers below print each command they would
#                        run (on fd 3, "+ CMD") and run none, and write no file.
# step CMD...            run CMD between two time-stamped lines, the second with its exit code
# run_cmd CMD...         CMD, or in a dry run its line (for commands that only read records)
# sink FILE              FILE, or /dev/null in a dry run: for a command's redirections
# record_cpu FILE        the CPU's model name, family and model numbers (both VM kinds say "AMD
#                        EPYC": Zen 3 is family 25 model 1, Zen 4 model 17, Zen 5 family 26
#                        model 2) and its vector extensions (the VM changes kind)
# start_experiment HERE  what an experiment's run.sh does first: PY (default .venv/bin/python),
#                        the repository on PYTHONPATH, HERE/runs, the CPU in HERE/cpu.txt
# tune_from_nothing MODEL TUNING_DIR RUNS LOG FLAG...
#                        MODEL tuned at 512 trials with FLAG... unless RUNS/tune.json exists;
#                        fails (1) where that summary is another CPU's (tuned_for_this_cpu)
# tune_then_measure MODEL WORK RUNS KEPT FLAG...
#                        tune_from_nothing, then the network beside tuning dir KEPT's in one
#                        process and tvm_against_ort
# tuned_for_this_cpu TUNE_JSON
#                        whether a tuning summary's target is this CPU (LLVM's mcpu)
# db_for_this_cpu ROOT MODEL
#                        whether ROOT holds an archive of MODEL for this CPU's target
# tvm_best_db MODEL [TARGET]
#                        the tuning dir of MODEL's kept TVM database for TARGET (a glob over
#                        data/tvm-databases/'s target folders, default every one), restored
#                        from its archive where missing (a fresh checkout)
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
# networks_in_one_process MODEL OUT TUNING_DIR...
#                        the networks built from each tuning dir's database, interleaved in
#                        one process (benchmarks/tvm_databases.py): OUT.json and OUT.txt, kept
#                        on a rerun
# restore_tvm_db MODEL DIR [ROOT [TARGET]]
#                        ROOT's archives of MODEL (default data/tvm-databases) for TARGET (a
#                        glob over its target folders, default every one) unpacked into
#                        tuning dir DIR where missing

run_options() {
    local self=$0
    [ -f "$self" ] || self=$OLDPWD/$0         # the script's cd to the repository root moved us
    DRY=0
    case "${1:-}" in
        -h | --help)
            awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$self"
            exit 0 ;;
        --dry-run) DRY=1 ;;
        "") ;;
        *) echo "usage: $0 [--dry-run | --help]" >&2; exit 2 ;;
    esac
    exec 3>&1
}

# (the exit code is kept before the second line's $(date) runs: that would reset $? to 0)
step() {
    local rc
    if [ "${DRY:-0}" = 1 ]; then
        echo "+ $*" >&3
        return 0
    fi
    echo "[$(date -u +%H:%M:%S)] $*"
    "$@"
    rc=$?
    echo "[$(date -u +%H:%M:%S)] rc $rc"
    return "$rc"
}

run_cmd() {
    if [ "${DRY:-0}" = 1 ]; then echo "+ $*" >&3; else "$@"; fi
}

sink() {
    if [ "${DRY:-0}" = 1 ]; then echo /dev/null; else echo "$1"; fi
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
    [ "${DRY:-0}" = 1 ] && return 0
    mkdir -p "$1/runs"
    record_cpu "$1/cpu.txt"
}

# tune_from_nothing MODEL TUNING_DIR RUNS LOG FLAG...: MODEL tuned from nothing at 512 trials
# into TUNING_DIR with FLAG..., unless RUNS/tune.json exists (then 0 where it was tuned for
# this CPU, else 1, and the caller stops); its summary is RUNS/tune.json, its log LOG and
# RUNS/tune.log (without TVM's "Fast mode segfaults" lines). Without the models' recipes
# (--recipe none): the scripts name their flags; RECIPE=auto (or a --recipe in FLAG...) gives
# the model its recipe for the flags left unset. Without reuse (--no-reuse) unless REUSE=1.
tune_from_nothing() {
    local m=$1 dir=$2 runs=$3 log=$4 reuse=(--no-reuse)
    shift 4
    [ "${REUSE:-0}" = 1 ] && reuse=()
    if [ -f "$runs/tune.json" ]; then
        # kept records stand only for this CPU: another's are not retuned over, nor measured
        tuned_for_this_cpu "$runs/tune.json" && return 0
        return 1
    fi
    [ "${DRY:-0}" = 1 ] || mkdir -p "$runs"
    step "${PY:-.venv/bin/python}" -m edgebench.tune --model "$m" --trials 512 \
        --tuning-dir "$dir" "${reuse[@]}" --no-progress --recipe "${RECIPE:-none}" \
        --summary "$runs/tune.json" "$@" > "$(sink "$log")" 2>&1
    [ "${DRY:-0}" = 1 ] || grep -v 'Fast mode segfaults' "$log" > "$runs/tune.log"
}

# tune_then_measure MODEL WORK RUNS KEPT FLAG...: tune_from_nothing into WORK/tuning (its log
# WORK/tune-MODEL.log), then the network beside tuning dir KEPT's in one process, then against
# ORT and the profile (tvm_against_ort), each kept on a rerun; 1 where RUNS is another CPU's
tune_then_measure() {
    local m=$1 work=$2 runs=$3 kept=$4
    shift 4
    [ "${DRY:-0}" = 1 ] || mkdir -p "$runs" "$work/ort-$m"
    tune_from_nothing "$m" "$work/tuning" "$runs" "$work/tune-$m.log" "$@" || return 1
    networks_in_one_process "$m" "$runs/networks" "$kept" "$work/tuning"
    [ -f "$runs/vs-ort.json" ] || tvm_against_ort "$m" "$work/tuning" "$work/ort-$m" "$runs"
    [ -f "$runs/profile.json" ] || profile_beside_ort "$m" "$work/tuning" "$runs"
}

# tuned_for_this_cpu TUNE_JSON: whether the summary's target names this machine's CPU as LLVM
# does (its mcpu); says which CPU it was tuned for when not. A dry run assumes it is.
tuned_for_this_cpu() {
    if [ "${DRY:-0}" = 1 ]; then
        echo "+ (where $1 names this CPU)" >&3
        return 0
    fi
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

# db_for_this_cpu ROOT MODEL: whether ROOT/llvm-<this CPU's mcpu>-*/MODEL-*.tar.xz exists; says
# which CPUs it has when not. A dry run assumes it does.
db_for_this_cpu() {
    if [ "${DRY:-0}" = 1 ]; then
        echo "+ (where $1 holds a $2 database for this CPU)" >&3
        return 0
    fi
    "${PY:-.venv/bin/python}" - "$1" "$2" <<'PYEOF'
import sys
from pathlib import Path

from converters.tvm.targets import host_target_dict

root, model = Path(sys.argv[1]), sys.argv[2]
here = host_target_dict()["mcpu"]
found = sorted(a.parent.name for a in root.glob(f"llvm-*/{model}-*.tar.xz"))
if not any(t.startswith(f"llvm-{here}-") for t in found):
    sys.exit(f"{root} has {model} for {', '.join(found) or 'no target'}; this CPU is {here}")
PYEOF
}

# tvm_best_db MODEL [TARGET]: one tuning dir for every model's kept databases (the top level
# of data/tvm-databases/: per CPU the database the experiments measure new ones against; its
# README says how each was tuned)
tvm_best_db() {
    local dir=results/experiments/tvm-best
    restore_tvm_db "$1" "$dir" data/tvm-databases "${2:-llvm-*}"
    echo "$dir"
}

networks_in_one_process() {
    local m=$1 out=$2
    shift 2
    [ -f "$out.json" ] && return 0
    step "${PY:-.venv/bin/python}" benchmarks/tvm_databases.py --model "$m" --tuning-dirs "$@" \
        --json "$out.json" 2>&1 | grep -v 'Fast mode segfaults' | tee "$(sink "$out.txt")"
}

tvm_against_ort() {
    parity_and_vs_ort "$@"
    profile_beside_ort "$1" "$2" "$4"
}

# parity_and_vs_ort MODEL TUNING_DIR WORK RUNS [REPS]: tvm_against_ort without the profile
parity_and_vs_ort() {
    local m=$1 db=$2 work=$3 runs=$4 reps=${5:-4}
    [ "${DRY:-0}" = 1 ] || mkdir -p "$runs" "$work"
    step "${PY:-.venv/bin/python}" -m edgebench.full --models "$m" --variants tvm onnxruntime \
        --tasks parity --tuning-dir "$db" --out "$work/parity" --resume \
        > "$(sink "$work/parity.log")" 2>&1
    [ "${DRY:-0}" = 1 ] || cp "$work/parity/results.jsonl" "$runs/parity.jsonl"
    step "${PY:-.venv/bin/python}" benchmarks/tvm_vs_ort.py compare --model "$m" \
        --tuning-dir "$db" --arms "${ARMS:-ort,tvm}" --reps "$reps" --json "$runs/vs-ort.json" \
        2>&1 | tee "$(sink "$runs/vs-ort.txt")"
}

# profile_beside_ort MODEL TUNING_DIR RUNS: the build's per-kernel profile beside ORT's
# (benchmarks/tvm_profile.py): RUNS/profile.*
profile_beside_ort() {
    step "${PY:-.venv/bin/python}" benchmarks/tvm_profile.py --model "$1" --tuning-dir "$2" \
        --json "$3/profile.json" 2>&1 \
        | grep -v -e '^\[[a-z]' -e 'Fast mode segfaults' | tee "$(sink "$3/profile.txt")"
}

# The databases live in git-ignored tuning dirs; a fresh checkout has none, and retuning six
# models is hours on 2 cores. Each archive holds <target>/<model>-CxHxW/ without its logs
# (data/tvm-databases/README.md: one row per archive).
restore_tvm_db() {
    local model=$1 dir=$2 root=${3:-data/tvm-databases} target=${4:-llvm-*} a
    # shellcheck disable=SC2231  # TARGET is a glob
    for a in "$root"/$target/"$model"-*.tar.xz; do
        [ -f "$a" ] || continue
        [ -f "$dir/$(basename "$(dirname "$a")")/$(basename "$a" .tar.xz)/database_tuning_record.json" ] \
            && continue
        if [ "${DRY:-0}" = 1 ]; then
            echo "+ tar -xJf $a -C $dir" >&3
            continue
        fi
        mkdir -p "$dir" && tar -xJf "$a" -C "$dir" && echo "restored $a into $dir" >&2
    done
    return 0
}
