#!/usr/bin/env bash
# edgebench on a Jetson AGX Orin with JetPack 6 (L4T R36, Ubuntu 22.04, Python 3.10).
#
# NOT YET RUN ON A DEVICE IN THIS PROJECT. Written against NVIDIA's and the Jetson AI Lab's
# published instructions; the first person to run it on a board should fix what breaks and
# say so in jetson/README.md.
#
# What it does (each step prints what it is doing; re-running is safe):
#   1. checks this is L4T R36 with Python 3.10
#   2. apt: TensorRT's Python bindings for the system Python (python3-libnvinfer), venv, pip
#   3. a venv with --system-site-packages, so the apt TensorRT is importable in it
#   4. torch, torchvision, onnxruntime-gpu from the Jetson AI Lab index (CUDA builds for JP6)
#   5. edgebench itself (--no-deps: its x86 pins must not replace the Jetson wheels) and the
#      pure-Python / aarch64-wheel dependencies
#   6. optional (INSTALL_TVM=1): the TVM runtime built from source with CUDA
#   7. jetson-stats (jtop) system-wide with its service, same version in the venv
#   8. prints the power-mode / clock advice and a check of what the venv can see
#
# Usage:  bash jetson/setup-jetpack6.sh            (from the repository root)
# Env:    VENV=path (default .venv-jetson)  JETSON_INDEX=url  INSTALL_TVM=1  TVM_TAG=v0.21.0
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$REPO/.venv-jetson}"
# JetPack 6.1/6.2 = CUDA 12.6. The index moved from pypi.jetson-ai-lab.dev to .io in 2025, and
# its contents have changed without notice (jetson-containers issue #1462): pin what you got.
JETSON_INDEX="${JETSON_INDEX:-https://pypi.jetson-ai-lab.io/jp6/cu126}"
JTOP_VERSION="7.2.2"          # = the 'jetson' extra in pyproject.toml; client and service must match
TVM_TAG="${TVM_TAG:-v0.21.0}" # the paper's TVM version

say() { printf '\n== %s\n' "$*"; }

say "1. checking the platform"
if [[ ! -f /etc/nv_tegra_release ]]; then
  echo "no /etc/nv_tegra_release: this is not a Jetson (L4T)"; exit 1
fi
head -n1 /etc/nv_tegra_release
if ! grep -q "^# R36" /etc/nv_tegra_release; then
  echo "this script is for JetPack 6 (L4T R36); found another release. Stop."; exit 1
fi
PYV="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
if [[ "$PYV" != "3.10" ]]; then
  echo "expected the system Python 3.10 of JetPack 6, found $PYV (TensorRT's apt bindings are for 3.10)"; exit 1
fi
if grep -q "R36 (release), REVISION: 3" /etc/nv_tegra_release; then
  echo "note: L4T 36.3 = JetPack 6.0 = TensorRT 8.6 (the paper's). JetPack 6.1/6.2 bring TensorRT 10.3."
fi

say "2. apt packages (TensorRT Python bindings for the system Python, venv, pip)"
sudo apt-get update
sudo apt-get install -y python3-venv python3-pip python3-dev python3-libnvinfer \
    libopenblas-dev git cmake build-essential
python3 -c "import tensorrt; print('system tensorrt', tensorrt.__version__)"

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

say "5. edgebench (no deps) and its other dependencies"
# pyproject pins torch==2.14.1 / onnxruntime==1.31.1 for x86; on the Jetson the wheels above
# are the ones to keep, so edgebench goes in without its dependency list.
"$PY" -m pip install --no-deps -e "$REPO"
"$PY" -m pip install "timm==1.0.31" "numpy>=1.26,<3" "pillow>=10" "psutil==7.2.2" \
    "rich==15.0.0" "matplotlib" "jsonschema==4.26.0" \
    "onnx==1.23.2" "onnxscript==0.7.2" "onnxconverter-common==1.16.0" "pytest==8.4.2" \
    "pytest-timeout==2.4.0"
"$PY" -c "import torch; assert torch.cuda.is_available(), 'a dependency replaced the Jetson torch'"

if [[ "${INSTALL_TVM:-0}" == "1" ]]; then
  say "6. TVM $TVM_TAG built from source with CUDA (long: about an hour on AGX Orin)"
  # No aarch64 CUDA wheel of TVM exists on PyPI. Libraries compiled on x86 for the
  # 'nvidia/jetson-agx-orin-64gb' target carry CUDA source, so the device also needs NVRTC/nvcc
  # (present with JetPack's CUDA toolkit).
  SRC="$REPO/.build/tvm"
  if [[ ! -d "$SRC" ]]; then
    git clone --recursive --branch "$TVM_TAG" https://github.com/apache/tvm "$SRC"
  fi
  mkdir -p "$SRC/build" && cp "$SRC/cmake/config.cmake" "$SRC/build/"
  {
    echo 'set(USE_CUDA /usr/local/cuda)'
    echo 'set(USE_LLVM OFF)'
    echo 'set(USE_CUBLAS ON)'
    echo 'set(USE_CUDNN ON)'
  } >> "$SRC/build/config.cmake"
  (cd "$SRC/build" && cmake .. && make -j"$(nproc)" runtime)
  "$PY" -m pip install -e "$SRC/python"
  "$PY" -c "import tvm; print('tvm', tvm.__version__)"
else
  say "6. TVM skipped (INSTALL_TVM=1 to build its CUDA runtime from source)"
fi

say "7. jetson-stats $JTOP_VERSION (jtop service system-wide, client in the venv)"
sudo pip3 install -U "jetson-stats==$JTOP_VERSION"
sudo systemctl restart jtop.service
"$PY" -m pip install "jetson-stats==$JTOP_VERSION"
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
echo "Done. Activate with: source $VENV/bin/activate   (then see jetson/README.md)"
