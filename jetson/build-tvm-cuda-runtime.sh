#!/usr/bin/env bash
# Build TVM's CUDA runtime (libtvm_runtime_cuda.so) against this machine's CUDA 12 and put it in
# the installed apache-tvm wheel, in place of the wheel's own, which needs libcudart.so.13.
#
# NOT YET RUN ON A DEVICE IN THIS PROJECT (no Jetson and no aarch64 CUDA machine here).
#
# Why only this one library: PyPI's apache-tvm 0.27.0.post1 for aarch64 already runs the Orin's
# CPU target, and its libtvm_runtime_cuda.so is a separate "sidecar" (NEEDED: libtvm_runtime.so,
# libcudart.so.13, libcuda.so.1). TVM's own release flow builds that sidecar in a separate
# CUDA-only build of the same commit (ci/scripts/package/manylinux_build_libtvm_runtime_cuda.sh:
# USE_CUDA on, USE_LLVM off, targets tvm_runtime tvm_runtime_cuda, rpath $ORIGIN) and drops it
# next to the wheel's libtvm_runtime.so (CMakeLists.txt, TVM_PACKAGE_EXTRA_LIBS). This script
# does the same with JetPack's CUDA 12, at the commit the installed wheel was built from, so the
# runtime stays the exporter's version (the artifact manifest's "tvm"; export.runnable_here()
# refuses another version). tvm-ffi: the source tree builds its 3rdparty/tvm-ffi submodule only
# to compile against; at run time the sidecar's libtvm_ffi.so is the one of the pinned
# apache-tvm-ffi package (already loaded by `import tvm`), as for the wheel's own sidecar.
# (Flags read in apache/tvm main of 2026-08-22, after v0.27.dev0; the 0.27.0 release commit
# itself was not readable from where this was written.)
#
# Usage:  jetson/build-tvm-cuda-runtime.sh PYTHON      (the venv's python, with apache-tvm in it)
# Env:    TVM_SRC=dir (default .build/tvm)   CUDA_HOME=/usr/local/cuda   CUDA_ARCH=87 (Orin)
#         TVM_REF=commit or tag to build instead of the wheel's own commit (not recommended)
# Needs:  git, a C++20 compiler (Ubuntu 22.04's g++ 11), nvcc, patchelf, and CMake >= 3.24
#         (Ubuntu 22.04 has 3.22: the script installs PyPI's cmake into the venv).
set -euo pipefail

PY="${1:?usage: $0 PYTHON (the venv python that has apache-tvm installed)}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TVM_SRC="${TVM_SRC:-$REPO/.build/tvm}"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
CUDA_ARCH="${CUDA_ARCH:-87}"

say() { printf '\n-- %s\n' "$*"; }
die() { printf 'build-tvm-cuda-runtime: %s\n' "$*" >&2; exit 1; }

[[ -x "$CUDA_HOME/bin/nvcc" ]] || die "no nvcc at $CUDA_HOME/bin/nvcc (sudo apt-get install nvidia-jetpack, or set CUDA_HOME)"
command -v patchelf >/dev/null || die "patchelf missing (sudo apt-get install patchelf)"

# Where the wheel is, which version and commit built it. Read without importing tvm: importing
# it would try to load the very sidecar this script replaces.
read -r TVM_VERSION TVM_COMMIT TVM_LIB_DIR < <("$PY" - <<'EOF'
import importlib.metadata, importlib.util, os, runpy
pkg = importlib.util.find_spec("tvm").submodule_search_locations[0]
info = runpy.run_path(os.path.join(pkg, "_version.py"))
commit = (info.get("commit_id") or "").lstrip("g")
print(importlib.metadata.version("apache-tvm"), commit or "-", os.path.join(pkg, "lib"))
EOF
) || die "apache-tvm is not installed for $PY"
[[ -f "$TVM_LIB_DIR/libtvm_runtime.so" ]] || die "apache-tvm's libtvm_runtime.so not found in $TVM_LIB_DIR"
REF="${TVM_REF:-$TVM_COMMIT}"
[[ "$REF" != "-" ]] || die "the installed apache-tvm $TVM_VERSION records no git commit; set TVM_REF (e.g. v0.27.0)"
say "apache-tvm $TVM_VERSION (commit $TVM_COMMIT) in $TVM_LIB_DIR; building the CUDA runtime from $REF"

# CMake >= 3.24 (TVM's install guide); CMake 4 dropped compatibility with old policies, so < 4.
"$PY" -m pip install -q "cmake>=3.24,<4"
CMAKE="$("$PY" -c 'import cmake, os; print(os.path.join(cmake.CMAKE_BIN_DIR, "cmake"))')"
"$CMAKE" --version | head -n1

if [[ ! -d "$TVM_SRC/.git" ]]; then
  say "cloning apache/tvm into $TVM_SRC (blobless: history without old file contents)"
  git clone --filter=blob:none https://github.com/apache/tvm "$TVM_SRC"
fi
git -C "$TVM_SRC" fetch --tags origin
git -C "$TVM_SRC" checkout --detach "$REF"
# Only tvm-ffi is needed (add_subdirectory(3rdparty/tvm-ffi)); cutlass & co. are for USE_CUTLASS.
git -C "$TVM_SRC" submodule update --init --recursive 3rdparty/tvm-ffi
say "source at $(git -C "$TVM_SRC" rev-parse HEAD)"

# libcuda: the toolkit's stub if present, else JetPack 6's driver library (L4T R36 moved it
# from .../tegra to .../nvidia: see TARGET_USERSPACE_LIB_DIR_PATH in /etc/nv_tegra_release).
CUDA_LIB_ARGS=()
for libcuda in "$CUDA_HOME/lib64/stubs/libcuda.so" /usr/lib/aarch64-linux-gnu/nvidia/libcuda.so \
               /usr/lib/aarch64-linux-gnu/tegra/libcuda.so; do
  if [[ -e "$libcuda" ]]; then CUDA_LIB_ARGS=("-DCUDA_CUDA_LIBRARY=$libcuda"); break; fi
done

BUILD="$TVM_SRC/build-cuda-runtime"
# The flags of TVM's own sidecar build, plus the Orin's architecture (without it CMake asks
# the GPU, which a container build does not have; the sidecar has no device code either way).
"$CMAKE" -S "$TVM_SRC" -B "$BUILD" \
  -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_TESTING=OFF \
  -DTVM_BUILD_PYTHON_MODULE=ON \
  -DUSE_CUDA="$CUDA_HOME" \
  -DUSE_LLVM=OFF \
  -DUSE_CUBLAS=OFF -DUSE_CUDNN=OFF -DUSE_CUTLASS=OFF -DUSE_NCCL=OFF -DUSE_NVTX=OFF \
  -DCMAKE_CUDA_COMPILER="$CUDA_HOME/bin/nvcc" \
  -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" \
  "${CUDA_LIB_ARGS[@]}"
"$CMAKE" --build "$BUILD" --target tvm_runtime tvm_runtime_cuda --parallel "$(nproc)"

NEW="$BUILD/lib/libtvm_runtime_cuda.so"
[[ -f "$NEW" ]] || die "the build did not produce $NEW"
# Resolve libtvm_runtime.so next to it (the wheel's) and JetPack's libcudart.so.12.
patchelf --set-rpath "\$ORIGIN:$CUDA_HOME/lib64" "$NEW"
if readelf -d "$NEW" | grep -q 'libcudart\.so\.13'; then
  die "$NEW links libcudart.so.13: CUDA_HOME points at a CUDA 13 toolkit"
fi

OLD="$TVM_LIB_DIR/libtvm_runtime_cuda.so"
if [[ -f "$OLD" && ! -f "$OLD.pypi" ]]; then
  cp -p "$OLD" "$OLD.pypi"     # the wheel's CUDA 13 sidecar, kept for reference
fi
install -m 0755 "$NEW" "$OLD"
say "installed $OLD"
readelf -d "$OLD" | grep -E 'NEEDED|RUNPATH' || true
