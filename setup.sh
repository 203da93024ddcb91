#!/usr/bin/env bash
# Sets up edgebench on a fresh Linux machine: a virtual environment at .venv/ with the suite
# and every CPU backend (PyTorch, ONNX Runtime, TVM, JAX/Flax), Ray (fleet runs) and the test tools.
# Idempotent: running it again only installs what is missing.
#   EDGEBENCH_EXTRAS   pip extras to install (default: cpu,fleet,dev; add jetson on a Jetson)
#   EDGEBENCH_NO_APT=1 skip the optional apt packages (cross compiler for TVM Jetson export)
#   EDGEBENCH_SETUP_ANY_ARCH=1  run on an aarch64 machine that is not a Jetson anyway
set -euo pipefail
cd "$(dirname "$0")"

# On a Jetson this script would install PyPI's torch==2.14.1, a CUDA 13 server build that
# JetPack 6's CUDA 12 cannot run (and would shadow NVIDIA's Jetson wheels): stop before
# anything is installed and name the Jetson set-up. NV_TEGRA_RELEASE: read that file instead
# of /etc/nv_tegra_release (the tests do, as jetson/setup-jetpack6.sh does).
TEGRA_RELEASE=${NV_TEGRA_RELEASE:-/etc/nv_tegra_release}
if [ "${EDGEBENCH_SETUP_ANY_ARCH:-0}" != "1" ]; then
  arch=$(uname -m)
  if [ -f "$TEGRA_RELEASE" ] || [ "$arch" = aarch64 ] || [ "$arch" = arm64 ]; then
    what="an $arch machine"
    if [ -f "$TEGRA_RELEASE" ]; then
      what="an NVIDIA Jetson ($TEGRA_RELEASE: $(head -n 1 "$TEGRA_RELEASE" | cut -c1-60))"
    fi
    echo "setup.sh: this is $what; this script installs x86/server wheels (PyPI torch is a" \
         "CUDA 13 build that JetPack's CUDA cannot run). Nothing was installed. On a Jetson run:" \
         "bash jetson/setup-jetpack6.sh (jetson/README.md). On another aarch64 machine:" \
         "EDGEBENCH_SETUP_ANY_ARCH=1 ./setup.sh" >&2
    exit 2
  fi
fi
PY=${PYTHON:-python3}
EXTRAS=${EDGEBENCH_EXTRAS:-cpu,fleet,dev}

if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# torch first and pinned: an unpinned resolve would pull a different (multi-GB) build.
.venv/bin/python -m pip install -q torch==2.14.1 torchvision==0.29.1
.venv/bin/python -m pip install -q -e ".[${EXTRAS}]"
# TensorRT's Python API for the type check of converters/tensorrt (TensorRT itself is not on
# PyPI; the stubs' metadata asks for it, hence --no-deps). Kept off the import path: in
# site-packages, `import tensorrt` would find an empty package where TensorRT is missing.
case ",$EXTRAS," in *,dev,*)
  [ -d .venv/typestubs/tensorrt ] || .venv/bin/python -m pip install -q --no-deps \
      --target .venv/typestubs tensorrt-stubs==10.13.0.35.1 ;;
esac

# JetPack 6's system Python is 3.10: a small venv of that interpreter, where one is installed
# (this project's machines have it under pyenv), lets tests/test_python310.py import and run
# the suite's pure-Python core on 3.10 (the CLI, every converter module, the fleet config).
# pyenv's python3.10 shim exists but fails when 3.10 is not a selected pyenv version: take
# the first candidate that really starts a 3.10.
PY310=${EDGEBENCH_PY310:-}
if [ -z "$PY310" ]; then
  for c in "$(command -v python3.10 || true)" /root/.pyenv/versions/3.10.*/bin/python3.10; do
    if [ -n "$c" ] && "$c" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 10))' 2>/dev/null; then
      PY310=$c; break
    fi
  done
fi
if [ -x "$PY310" ] && [ ! -x .venv/py310/bin/python ]; then
  echo "[setup] .venv/py310: $("$PY310" --version) for the Python 3.10 checks"
  ("$PY310" -m venv .venv/py310 && .venv/py310/bin/python -m pip install -q \
      "tomli==2.5.0" "numpy>=1.26,<3" "rich==15.0.0" "psutil==7.2.2") \
    || { echo "[setup] warning: no Python 3.10 venv; tests/test_python310.py will skip its run"; rm -rf .venv/py310; }
fi

# Optional: the aarch64 cross compiler lets `edgebench.tune --target jetson-agx-orin --export`
# build the Orin's shared library on this machine. Without it that export is skipped with a reason.
if [ "${EDGEBENCH_NO_APT:-0}" != "1" ] && ! command -v aarch64-linux-gnu-g++ >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "[setup] installing g++-aarch64-linux-gnu (TVM cross-compilation for Jetson)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++-aarch64-linux-gnu >/dev/null) \
      || echo "[setup] warning: could not install g++-aarch64-linux-gnu; Jetson export will be skipped"
  else
    echo "[setup] note: install g++-aarch64-linux-gnu (apt) to cross-compile TVM artifacts for Jetson"
  fi
fi
echo "[setup] done: $(.venv/bin/python -c 'import torch, timm; print("torch", torch.__version__, "timm", timm.__version__)')"
