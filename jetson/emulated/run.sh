#!/usr/bin/env bash
# Runs CMD inside the emulated Jetson AGX Orin (built by jetson/emulated/setup.sh):
#
#   jetson/emulated/run.sh python -m edgebench.full --models squeezenet1_1 ...
#
# CMD runs as arm64 code under QEMU user-mode emulation, chrooted into .emulated/root, with
# the root's venv first on PATH. In a private mount namespace (gone when CMD ends):
#   - /proc and /dev are the host's, /sys the host's under a read-only overlayfs layer of the
#     recreated board's entries (processes, memory, CPU topology are real);
#   - the repository is mounted at its own path and /tmp is the host's /tmp, so --out,
#     --tuning-dir and --tvm-artifact paths mean the same inside and outside; except that
#     results/cache, the suite's default cache, is the emulated Orin's own (.emulated/cache);
#   - the working directory is kept when it is under the repository or /tmp (else the
#     repository);
#   - the board's /proc and /sys entries (device tree, clocks, INA3221 rails) come from the
#     recreated overlay (tegra.py: QEMU's path prefix), and a host process keeps the rails
#     following the root's CPU load while CMD runs.
# The environment is a clean one, plus the caller's EDGEBENCH_*, TVM_*, OMP_*, XLA_*, JAX_*,
# ORT_* and a few PYTHON* variables. Exit status: CMD's.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

if [ $# -eq 0 ]; then
  echo "usage: jetson/emulated/run.sh CMD [ARG...]   (runs CMD in the emulated AGX Orin)" >&2
  exit 2
fi

if [ "${_EDGEBENCH_EMULATED_NS:-}" != "$$" ]; then
  # Outside: check, then enter a private mount namespace (unshare execs, so this process
  # stays the same one: whoever started run.sh can signal CMD itself).
  [ "$(uname -s)" = Linux ] || emu_unavailable "needs Linux (QEMU user-mode emulation and binfmt_misc)"
  emu_need_root
  emu_check_root
  emu_check_binfmt 1
  command -v unshare >/dev/null 2>&1 || emu_die "unshare (util-linux) not found"
  export _EDGEBENCH_EMULATED_NS=$$
  exec unshare --mount --propagation private -- "$BASH" "$0" "$@"
fi
unset _EDGEBENCH_EMULATED_NS

R=$EMU_ROOT
HOST_PY=$(emu_host_python)
"$HOST_PY" "$EMU_REPO/jetson/emulated/tegra.py" overlay "$R"
mount -t proc proc "$R/proc"
# /sys: the board's recreated entries (tegra.py) over the host's sysfs, read-only, so they are
# at their real paths for every system call (QEMU's path prefix misses access(): tegra.py).
# The host's cgroup tree is bound back in (overlayfs shows only the lower sysfs itself).
mount -t overlay edgebench-sys -o "ro,lowerdir=$R$EMU_OVERLAY/sys:/sys" "$R/sys"
[ ! -d /sys/fs/cgroup ] || mount --rbind /sys/fs/cgroup "$R/sys/fs/cgroup" 2>/dev/null || true
mount --rbind /dev "$R/dev" && mount --make-rslave "$R/dev"
mount --bind /tmp "$R/tmp"
# The kernel's binfmt_misc entries, read-only: they say which emulator runs the root's
# binaries (edgebench/sysinfo.py names it in the records).
if [ -e "$EMU_BINFMT/status" ]; then
  mount --bind "$EMU_BINFMT" "$R$EMU_BINFMT" && mount -o remount,bind,ro "$R$EMU_BINFMT"
fi
mkdir -p "$R$EMU_REPO"
mount --bind "$EMU_REPO" "$R$EMU_REPO"
# The suite's default cache (results/cache: converted models, reference logits) is this
# device's own, as it would be on a separate board: without it, the emulated Orin would take
# the x86 host's reference logits and ONNX files from the shared folder (their cache keys do
# not name the machine), and its parity would not be checked against its own PyTorch.
mkdir -p "$EMU_DIR/cache" "$EMU_REPO/results/cache"
mount --bind "$EMU_DIR/cache" "$R$EMU_REPO/results/cache"

# The rails follower: a child of this process, which CMD replaces below (exec keeps the
# process); it stops by itself when CMD has ended.
"$HOST_PY" "$EMU_REPO/jetson/emulated/tegra.py" rails "$R" &

case "$PWD/" in
  "$EMU_REPO"/*|/tmp/*) WD=$PWD ;;
  *) WD=$EMU_REPO ;;
esac
keep=()
while IFS= read -r name; do
  case "$name" in
    EDGEBENCH_*|TVM_*|OMP_*|MKL_*|OPENBLAS_*|XLA_*|JAX_*|ORT_*|TERM|COLUMNS|LINES|TZ|NO_COLOR|\
    FORCE_COLOR|PYTHONUNBUFFERED|PYTHONFAULTHANDLER|PYTHONDONTWRITEBYTECODE|PYTHONHASHSEED)
      keep+=("$name=${!name}") ;;
  esac
done < <(compgen -e)

# OpenBLAS (numpy's, loaded by every `import numpy`) starts a helper thread per extra CPU
# that is meant to spin briefly and then sleep; under QEMU it never goes to sleep and keeps a
# host core busy for the life of every process that imported numpy (seen: the suite's main
# process at 100% of a core throughout a run). One BLAS thread: no helper threads. Set it
# yourself to override.
blas=(OPENBLAS_NUM_THREADS=1)
[ -z "${OPENBLAS_NUM_THREADS:-}" ] || blas=()

emu_say "AGX Orin (emulated: arm64 under QEMU, CPU model $EMU_QEMU_CPU) in $WD: $*"
exec chroot "$R" /usr/bin/env -i -C "$WD" \
  PATH="$EMU_VENV/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  HOME=/root LANG=C.UTF-8 VIRTUAL_ENV="$EMU_VENV" \
  QEMU_LD_PREFIX="$EMU_OVERLAY" QEMU_CPU="$EMU_QEMU_CPU" \
  "${blas[@]}" "${keep[@]}" "$@"
