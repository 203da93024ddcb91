# shellcheck shell=bash
# shellcheck disable=SC2034  # the variables are used by the scripts that source this file
# Shared by setup.sh, run.sh and rpc.sh (sourced, not run): where the emulated AGX Orin lives
# and the checks that QEMU user-mode emulation can run its arm64 binaries here.
#
#   EDGEBENCH_EMULATED_DIR    the root and its stamps (default: <repo>/.emulated, git-ignored)
#   EDGEBENCH_EMULATED_CACHE  downloads kept across clones: root tarball, aarch64 wheels
#                             (default: ${XDG_CACHE_HOME:-~/.cache}/edgebench-emulated)
#   EDGEBENCH_EMULATED_QEMU_CPU  the CPU QEMU emulates (default neoverse-n1: Armv8.2 with the
#                             dot-product and FP16 instructions and no SVE, as the Orin's
#                             Cortex-A78AE; QEMU 7.2 has no Cortex-A78AE model)

EMU_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
EMU_DIR=${EDGEBENCH_EMULATED_DIR:-$EMU_REPO/.emulated}
EMU_ROOT=$EMU_DIR/root
EMU_STAMPS=$EMU_DIR/stamps
EMU_CACHE=${EDGEBENCH_EMULATED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edgebench-emulated}
EMU_VENV=/opt/edgebench-venv                    # inside the root
EMU_PY=3.11                                     # Debian bookworm's Python (the lock is for cp311)
EMU_OVERLAY=/usr/share/edgebench-emulated/overlay   # inside the root (jetson/emulated/tegra.py)
EMU_QEMU_CPU=${EDGEBENCH_EMULATED_QEMU_CPU:-neoverse-n1}
EMU_BINFMT=/proc/sys/fs/binfmt_misc
EMU_QEMU_MIN=10   # tested: 10.0.2 runs the lane; 7.2 (Debian bookworm) crashed in it

# Stops a process started with setsid, and its whole process group (TVM's popen workers, a
# service's children): SIGTERM first, SIGKILL after 10 s.
emu_stop_group() {
  local pid=$1
  kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 -- "-$pid" 2>/dev/null || true
}

emu_say() { echo "[emulated] $*" >&2; }
emu_die() { echo "[emulated] error: $*" >&2; exit 1; }
# Exit status 3: QEMU user-mode emulation cannot be had on this machine at all (not Linux, not
# root, no binfmt_misc, no way to install QEMU); tests/test_emulated_lane.py skips on it.
emu_unavailable() { echo "[emulated] unavailable: $*" >&2; exit 3; }

# The host's Python, for pip (native speed) and tegra.py: the repo's venv, else python3.
emu_host_python() {
  if [ -x "$EMU_REPO/.venv/bin/python" ]; then echo "$EMU_REPO/.venv/bin/python"
  elif command -v python3 >/dev/null 2>&1; then command -v python3
  else emu_die "no python3 on this host (needed to install wheels and recreate the Tegra files)"
  fi
}

emu_need_root() {
  [ "$(id -u)" = 0 ] || emu_unavailable "needs root: it mounts /proc, /sys, /dev and the repository" \
    "into the emulated root and chroots into it (run with sudo, or as root in CI)"
}

# binfmt_misc must hand arm64 ELF files to QEMU, with the F (fix-binary) flag: the kernel
# then opens QEMU once at registration, so it also runs inside a chroot that has no QEMU.
# register=1: mount binfmt_misc and register qemu-aarch64 where missing, from the QEMU
# package's own registration (systemd's binfmt.d file of QEMU >= 9, or binfmt-support's
# entry of older Debian packages).
emu_check_binfmt() {
  local register=${1:-0} entry=$EMU_BINFMT/qemu-aarch64 conf f interp major
  case "$(uname -m)" in aarch64|arm64) return 0 ;; esac   # native arm64: nothing to emulate
  if [ ! -e "$EMU_BINFMT/status" ]; then
    [ "$register" = 1 ] || emu_die "binfmt_misc is not mounted: run jetson/emulated/setup.sh"
    [ -d "$EMU_BINFMT" ] || emu_unavailable "no $EMU_BINFMT: this kernel has no binfmt_misc"
    emu_say "mounting binfmt_misc at $EMU_BINFMT"
    mount -t binfmt_misc binfmt_misc "$EMU_BINFMT" 2>/dev/null \
      || emu_unavailable "cannot mount binfmt_misc at $EMU_BINFMT (a container without" \
                 "CAP_SYS_ADMIN, or a kernel without CONFIG_BINFMT_MISC): QEMU cannot be used here"
  fi
  if [ ! -e "$entry" ] && [ "$register" = 1 ]; then
    conf=""
    for f in /usr/lib/binfmt.d/qemu-aarch64.conf /usr/share/qemu/binfmt.d/qemu-aarch64.conf; do
      if [ -f "$f" ]; then conf=$f; break; fi
    done
    if [ -n "$conf" ]; then
      emu_say "registering qemu-aarch64 with binfmt_misc ($conf)"
      grep -v '^#' "$conf" > "$EMU_BINFMT/register" \
        || emu_die "binfmt_misc refused $conf's qemu-aarch64 entry"
    elif command -v update-binfmts >/dev/null 2>&1; then
      emu_say "registering qemu-aarch64 with binfmt_misc (update-binfmts --enable qemu-aarch64)"
      update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 \
        || emu_die "update-binfmts --enable qemu-aarch64 failed: is qemu-user-static installed?"
    else
      emu_die "no qemu-aarch64 binfmt registration found: run jetson/emulated/setup.sh" \
              "(it installs QEMU), or install qemu-user-static"
    fi
  fi
  [ -e "$entry" ] || emu_die "no binfmt_misc entry for qemu-aarch64 ($entry): run" \
    "jetson/emulated/setup.sh (it installs QEMU and registers it)"
  grep -q '^enabled' "$entry" || emu_die "binfmt_misc entry qemu-aarch64 is disabled" \
    "(echo 1 > $entry)"
  grep -q '^flags:.*F' "$entry" || emu_die "binfmt_misc entry qemu-aarch64 lacks the F flag" \
    "(fix-binary), without which QEMU cannot start inside the chroot: use Debian's" \
    "qemu-user-static, whose entry has it"
  interp=$(sed -n 's/^interpreter //p' "$entry")
  major=$(emu_qemu_major "$interp")
  [ "${major:-0}" -ge "$EMU_QEMU_MIN" ] || emu_die "binfmt_misc runs arm64 binaries with QEMU" \
    "${major:-?} ($interp); the lane needs QEMU >= $EMU_QEMU_MIN (QEMU 7.2, Debian bookworm's," \
    "crashed in TVM's compiler and in the ONNX export): run jetson/emulated/setup.sh, which" \
    "installs QEMU 10 (from bookworm-backports on Debian 12)"
}

# QEMU's major version ("qemu-aarch64 version 10.0.2 (Debian ...)" -> 10), empty if unknown.
# The binfmt path (.../aarch64-binfmt-P) is a link to QEMU that makes it read its arguments
# the binfmt way: ask the binary it points to.
emu_qemu_major() {
  local bin
  bin=$(readlink -f "${1:-}" 2>/dev/null) && [ -x "$bin" ] || return 0
  { "$bin" --version 2>/dev/null || true; } | sed -n '1s/.*version \([0-9][0-9]*\)\..*/\1/p'
}

emu_check_root() {
  [ -x "$EMU_ROOT$EMU_VENV/bin/python" ] && [ -f "$EMU_STAMPS/ready" ] \
    || emu_die "no emulated root at $EMU_ROOT: run jetson/emulated/setup.sh first"
}
