# shellcheck shell=bash
# JetPack detection for jetson/setup-jetpack6.sh. Source it, then call
#
#   jetpack_from_release [FILE]     FILE: an /etc/nv_tegra_release (the default)
#   jetpack_stack VERSION           the same for a JetPack version given by hand (6.0, 6.1, 6.2)
#
# On a JetPack it knows, jetpack_from_release sets L4T_VERSION, JETPACK_VERSION, JP_CUDA,
# JP_TENSORRT, JP_CUDNN and JP_INDEX and prints one line, e.g.
#   jetpack=6.2 l4t=36.4.3 cuda=12.6 tensorrt=10.3 cudnn=9.3 index=https://pypi.jetson-ai-lab.io/jp6/cu126
# Otherwise it says why on stderr and returns 1 (2 when FILE cannot be read). It reads only
# the first line, "# R36 (release), REVISION: 4.3, GCID: ..., BOARD: ..., EABI: aarch64, DATE: ...",
# and accepts only the numbers it expects there. tests/test_jetson_setup.py runs it on the
# recorded files in tests/fixtures/jetson/.
#
# L4T -> JetPack -> CUDA / TensorRT / cuDNN (checked 2026-11-23):
#   L4T 36.3.x          JetPack 6.0    CUDA 12.2  TensorRT 8.6 (8.6.2.3)  cuDNN 8.9
#   L4T 36.4.0 - 36.4.2 JetPack 6.1    CUDA 12.6  TensorRT 10.3           cuDNN 9.3
#   L4T 36.4.3 and up   JetPack 6.2    CUDA 12.6  TensorRT 10.3           cuDNN 9.3
#                       (36.4.4 = JetPack 6.2.1, same compute stack)
# Sources:
#   - NVIDIA JetPack archive, https://developer.nvidia.com/embedded/jetpack-archive, and the
#     documentation archive https://docs.nvidia.com/jetson/archives (lists JetPack 6.0, 6.1,
#     6.2, 6.2.1 and Jetson Linux 36.3, 36.4, 36.4.3, 36.4.4).
#   - jetson-stats' L4T table (rbonghi/jetson_stats, jtop/core/jetson_variables.py):
#     36.3.0 -> 6.0, 36.4.0 -> 6.1, 36.4.2 -> 6.1 (rev1), 36.4.3 -> 6.2.
#   - anduril/jetpack-nixos jetpack6-overlay.nix, "from release notes": JetPack 6.2 =
#     L4T 36.4.3, CUDA 12.6.10; Astute-Systems/bsp v1.3.0: 36.4.4 = JetPack 6.2.1.
#   - Torch-TensorRT's JetPack page (https://pytorch.org/TensorRT/getting_started/jetpack.html,
#     citing NVIDIA's JetPack release notes): JetPack 6.1 and 6.2 = CUDA 12.6, TensorRT 10.3,
#     cuDNN 9.3.
#   - JetPack 6.0: jtop on an AGX Orin with L4T 36.3.0 reports CUDA 12.2.140, cuDNN 8.9.4.25,
#     TensorRT 8.6.2.3 (the TensorRT of the study we reproduce).
# R36.2 (JetPack 6.0 Developer Preview), R35 (JetPack 5), R38/R39 (JetPack 7) and any later
# R36 revision are not in the table: the set-up stops there instead of guessing.
#
# Wheel index per CUDA version: the Jetson AI Lab index (formerly pypi.jetson-ai-lab.dev). Its
# jp6/cu122 folder serves JetPack 6.0; it has dropped and replaced wheels without notice, so
# JETSON_INDEX overrides it (for JetPack 6.0 NVIDIA's own PyTorch wheels are also listed at
# https://developer.download.nvidia.com/compute/redist/jp/v60/pytorch/).

JETPACK_AI_LAB="https://pypi.jetson-ai-lab.io"

jetpack_stack() {
  # Sets JETPACK_VERSION JP_CUDA JP_TENSORRT JP_CUDNN JP_INDEX for JetPack $1; 1 if unknown.
  case "${1:-}" in
    6.0) JETPACK_VERSION=6.0 JP_CUDA=12.2 JP_TENSORRT=8.6 JP_CUDNN=8.9
         JP_INDEX="$JETPACK_AI_LAB/jp6/cu122" ;;
    6.1) JETPACK_VERSION=6.1 JP_CUDA=12.6 JP_TENSORRT=10.3 JP_CUDNN=9.3
         JP_INDEX="$JETPACK_AI_LAB/jp6/cu126" ;;
    6.2) JETPACK_VERSION=6.2 JP_CUDA=12.6 JP_TENSORRT=10.3 JP_CUDNN=9.3
         JP_INDEX="$JETPACK_AI_LAB/jp6/cu126" ;;
    *) echo "jetpack: JetPack '${1:-}' is not one this set-up knows (6.0, 6.1, 6.2)" >&2
       return 1 ;;
  esac
  export JETPACK_VERSION JP_CUDA JP_TENSORRT JP_CUDNN JP_INDEX
}

jetpack_from_release() {
  local file="${1:-/etc/nv_tegra_release}" line="" major minor patch jp=""
  local re='^# R([0-9]+) \(release\), REVISION: ([0-9]+)\.([0-9]+)(,|$)'
  if [[ ! -r "$file" ]]; then
    echo "jetpack: cannot read $file: this is not a Jetson with L4T (Jetson Linux)" >&2
    return 2
  fi
  IFS= read -r line <"$file" || true    # a file without a final newline still gives its line
  if [[ ! "$line" =~ $re ]]; then
    echo "jetpack: $file does not start like an L4T release line: '${line:0:120}'" >&2
    return 1
  fi
  major="${BASH_REMATCH[1]}" minor="${BASH_REMATCH[2]}" patch="${BASH_REMATCH[3]}"
  L4T_VERSION="$major.$minor.$patch"
  export L4T_VERSION
  case "$major.$minor" in
    36.3) jp=6.0 ;;
    36.4) if ((10#$patch >= 3)); then jp=6.2; else jp=6.1; fi ;;
  esac
  if [[ -z "$jp" ]]; then
    echo "jetpack: L4T R$L4T_VERSION is not a JetPack this set-up knows (JetPack 6.0 = L4T 36.3," \
         "6.1 = 36.4.0-36.4.2, 6.2 = 36.4.3+). Stop: its CUDA, TensorRT and wheel index would be" \
         "guesses (JETPACK_OVERRIDE=6.x forces one, at your own risk)." >&2
    return 1
  fi
  jetpack_stack "$jp" || return 1
  printf 'jetpack=%s l4t=%s cuda=%s tensorrt=%s cudnn=%s index=%s\n' \
    "$JETPACK_VERSION" "$L4T_VERSION" "$JP_CUDA" "$JP_TENSORRT" "$JP_CUDNN" "$JP_INDEX"
}
