#!/usr/bin/env bash
# edgebench on a Jetson AGX Orin with JetPack 6 (L4T R36, Ubuntu 22.04, Python 3.10).
#
# NOT YET RUN ON A DEVICE IN THIS PROJECT. Written against NVIDIA's, the Jetson AI Lab's and
# Apache TVM's published instructions; what was checked off the board is listed in
# jetson/README.md. The first person to run it on a board: note there what had to change.
#
# What it does (each step prints what it is doing; re-running is safe):
#   1. reads /etc/nv_tegra_release (jetson/jetpack.sh): JetPack 6.0, 6.1 or 6.2, and from it
#      the CUDA and TensorRT to expect and the wheel index; any other release stops here
#   2. apt: TensorRT's Python bindings for the system Python (python3-libnvinfer), and checks
#      that TensorRT is the one this JetPack ships
#   3. a venv with --system-site-packages, so the apt TensorRT is importable in it
#   4. torch, torchvision, onnxruntime-gpu from the Jetson AI Lab index for this CUDA
#   5. edgebench (--no-deps: its x86 pins must not replace the Jetson wheels) and
#      jetson/requirements-jp6.txt: TVM 0.27 (the exporter's version), JAX (CPU), Ray, jtop, ...
#   6. TVM's CUDA runtime rebuilt for this CUDA 12 (jetson/build-tvm-cuda-runtime.sh; the PyPI
#      wheel's needs CUDA 13). TVM_CUDA=0 skips it: TVM then runs the CPU target only.
#   7. jetson-stats (jtop) system-wide with its service, the same version as in the venv
#   8. prints the power-mode / clock advice and what the venv can see
#
# Usage:  bash jetson/setup-jetpack6.sh            (from the repository root)
# Env:    VENV=path (default .venv-jetson)   JETSON_INDEX=url (default: the one for this CUDA)
#         TVM_CUDA=0 (skip step 6)   JETPACK_OVERRIDE=6.x (an L4T release the table lacks)
#         ALLOW_TENSORRT_MISMATCH=1 (go on when apt's TensorRT is not this JetPack's)
#         NV_TEGRA_RELEASE=file (read it instead of /etc/nv_tegra_release; the tests do)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$REPO/.venv-jetson}"
JTOP_VERSION="7.2.2"          # = jetson/requirements-jp6.txt; client and service must match

say() { printf '\n== %s\n' "$*"; }
die() { printf 'setup-jetpack6: %s\n' "$*" >&2; exit 1; }

# shellcheck source=jetson/jetpack.sh
source "$REPO/jetson/jetpack.sh"

say "1. platform"
[[ "$(uname -m)" == aarch64 ]] || die "this is $(uname -m), not a Jetson (aarch64)"
rc=0
jetpack_from_release "${NV_TEGRA_RELEASE:-/etc/nv_tegra_release}" || rc=$?
if ((rc == 1)) && [[ -n "${JETPACK_OVERRIDE:-}" ]]; then
  jetpack_stack "$JETPACK_OVERRIDE" || exit 1
  echo "JETPACK_OVERRIDE=$JETPACK_OVERRIDE: using JetPack $JETPACK_VERSION's CUDA $JP_CUDA," \
       "TensorRT $JP_TENSORRT and $JP_INDEX for L4T ${L4T_VERSION:-?} (not checked)"
elif ((rc != 0)); then
  exit 1
fi
JETSON_INDEX="${JETSON_INDEX:-$JP_INDEX}"
PYV="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
[[ "$PYV" == "3.10" ]] || die "expected JetPack 6's system Python 3.10, found $PYV (TensorRT's apt bindings are for 3.10)"
# The CUDA toolkit on disk: JetPack's unless someone installed another one (NVIDIA allows that).
CUDA_FOUND="$(python3 -c 'import json; print(json.load(open("/usr/local/cuda/version.json"))["cuda"]["version"])' 2>/dev/null || true)"
echo "CUDA toolkit in /usr/local/cuda: ${CUDA_FOUND:-none found} (JetPack $JETPACK_VERSION ships $JP_CUDA)"
case "${CUDA_FOUND:-}" in
  "$JP_CUDA"|"$JP_CUDA".*) ;;
  "") echo "note: no CUDA toolkit found; sudo apt-get install nvidia-jetpack installs it" ;;
  *) echo "note: CUDA ${CUDA_FOUND} is not JetPack $JETPACK_VERSION's $JP_CUDA: the wheel index" \
          "($JETSON_INDEX) is for $JP_CUDA; set JETSON_INDEX if you upgraded CUDA on purpose" ;;
esac
CUDA_MAJOR="${CUDA_FOUND%%.*}"
CUDA_MAJOR="${CUDA_MAJOR:-${JP_CUDA%%.*}}"

say "2. apt packages (TensorRT Python bindings for the system Python, venv, build tools)"
sudo apt-get update
sudo apt-get install -y python3-venv python3-pip python3-dev python3-libnvinfer \
    libopenblas-dev git build-essential patchelf
TRT_FOUND="$(python3 -c 'import tensorrt; print(tensorrt.__version__)')"
echo "system TensorRT $TRT_FOUND (JetPack $JETPACK_VERSION ships TensorRT $JP_TENSORRT)"
case "$TRT_FOUND" in
  "$JP_TENSORRT".*) ;;
  *) if [[ "${ALLOW_TENSORRT_MISMATCH:-0}" != 1 ]]; then
       die "TensorRT $TRT_FOUND is not JetPack $JETPACK_VERSION's $JP_TENSORRT: apt's sources do not match L4T ${L4T_VERSION:-?} (ALLOW_TENSORRT_MISMATCH=1 goes on)"
     fi ;;
esac
# What edgebench's TensorRT variant does with it: 8.6 (JetPack 6.0, the study's) builds with
# EXPLICIT_BATCH; 10.3 (6.1/6.2) is explicit-batch only; FP16 via BuilderFlag.FP16 in both.
# Every record names the TensorRT that built its engine (meta.tensorrt).

say "3. venv at $VENV (with --system-site-packages for tensorrt)"
if [[ ! -x "$VENV/bin/python" ]]; then
  python3 -m venv --system-site-packages "$VENV"
fi
PY="$VENV/bin/python"
"$PY" -m pip install -U pip wheel setuptools

say "4. torch, torchvision, onnxruntime-gpu from $JETSON_INDEX"
# --index-url first so the CUDA aarch64 builds win over PyPI's; PyPI as extra for their deps.
"$PY" -m pip install --index-url "$JETSON_INDEX" --extra-index-url https://pypi.org/simple \
    torch torchvision onnxruntime-gpu
"$PY" - <<'EOF'
import torch, onnxruntime as ort
print("torch", torch.__version__, "cuda", torch.version.cuda, "available:", torch.cuda.is_available())
print("onnxruntime", ort.__version__, ort.get_available_providers())
assert torch.cuda.is_available(), "this torch has no CUDA: the wrong wheel was installed"
assert "CUDAExecutionProvider" in ort.get_available_providers(), "onnxruntime without CUDA"
EOF

say "5. edgebench (no deps) and jetson/requirements-jp6.txt"
# pyproject pins torch==2.14.1 / onnxruntime==1.31.1 for x86; on the Jetson the wheels above
# are the ones to keep, so edgebench goes in without its dependency list.
"$PY" -m pip install --no-deps -e "$REPO"
"$PY" -m pip install -r "$REPO/jetson/requirements-jp6.txt"
"$PY" - <<'EOF'
import torch
assert torch.cuda.is_available(), "a dependency replaced the Jetson torch"
import jax, ray, tvm
d = jax.devices()[0]
# JAX runs on the Orin's CPU: its CUDA wheels have no sm_87 kernels (jetson/README.md). The
# JAX records say so themselves: jax_backend, jax_platform, jax_device.
print("jax", jax.__version__, "device:", d.platform, getattr(d, "device_kind", d))
print("ray", ray.__version__, "| tvm", tvm.__version__)
EOF

if [[ "${TVM_CUDA:-1}" == 0 ]]; then
  say "6. TVM's CUDA runtime skipped (TVM_CUDA=0): TVM runs the CPU target only"
elif [[ "$CUDA_MAJOR" == 13 ]]; then
  say "6. CUDA 13: the apache-tvm wheel's own CUDA runtime applies"
else
  say "6. TVM's CUDA runtime for CUDA $CUDA_MAJOR (the wheel's needs CUDA 13; compiles TVM's runtime)"
  bash "$REPO/jetson/build-tvm-cuda-runtime.sh" "$PY"
fi
if [[ "${TVM_CUDA:-1}" != 0 ]]; then
  # Load it the way an exported artifact is loaded on the device: the runtime alone. When it
  # does not load, the TVM GPU cells are skipped with this same reason; the set-up goes on.
  (cd "$REPO" && TVM_USE_RUNTIME_LIB=1 "$PY" - <<'EOF'
from converters.tvm.export import cuda_runtime_here
why = cuda_runtime_here()
print("TVM CUDA runtime:", why or "loads, and sees the GPU")
raise SystemExit(1 if why else 0)
EOF
  ) || echo "WARNING: TVM's CUDA runtime does not work here (above); TVM GPU artifacts will be skipped"
fi

say "7. jetson-stats $JTOP_VERSION (jtop service system-wide, client in the venv)"
sudo pip3 install -U "jetson-stats==$JTOP_VERSION"
sudo systemctl restart jtop.service
echo "If 'jtop' says it cannot reach the service: log out and in again (your user was added"
echo "to the jtop group), or reboot."

say "8. power mode and clocks"
sudo nvpmodel -q || true
cat <<'EOF'
For figures comparable with the paper (and with each other) on AGX Orin:
  sudo nvpmodel -m 0      # MAXN (mode 0 on AGX Orin; other Orin modules number modes differently)
  sudo jetson_clocks      # lock CPU/GPU/EMC clocks at their maximum; --restore to undo
edgebench records the mode and whether clocks are locked in run.json and warns in the report
when they are not (edgebench/telemetry/device_state.py).
EOF

say "check"
"$PY" -m edgebench.telemetry detect || true
"$PY" -c "import converters; print({n: converters.get(n).available().ok for n in converters.names()})"
echo
echo "Done: JetPack $JETPACK_VERSION (L4T ${L4T_VERSION:-?}), CUDA $JP_CUDA, TensorRT $TRT_FOUND."
echo "Activate with: source $VENV/bin/activate   (then see jetson/README.md)"
