#!/usr/bin/env bash
# Here (no GPU): fetch TVM 0.27's x86-64 wheels for the GPU machine's Python 3.12 and cut them
# into two parts under 64 MiB with the repository (one device call each): .tv0/tvm.part0, then
# .tv1/tvm.part1 with the tvm-ffi and xgboost wheels. The TVM wheel is 100.5 MB as a zip;
# its tree as tar.xz -9 is 63.6 MB. Prints the sha256 device.sh checks (TVM_SHA).
#
#   bash experiments/tvm-cuda-h100-2026-11-27/prepare.sh
set -euo pipefail
cd "$(dirname "$0")/../.."                          # the repository root
grep -qx '/.tv0/' .git/info/exclude 2>/dev/null || printf '/.tv0/\n/.tv1/\n' >> .git/info/exclude
work=$(mktemp -d)
.venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 -d "$work" \
    apache-tvm==0.27.0.post1 apache-tvm-ffi==0.1.14.post0 xgboost-cpu==3.2.0
mkdir "$work/tree"
unzip -q "$work"/apache_tvm-*.whl -d "$work/tree"
tar -C "$work/tree" -cf - . | xz -9 -T2 > "$work/tvm-site.tar.xz"    # about 6 min on 2 cores
mkdir -p .tv0 .tv1
split -n 2 -d -a 1 "$work/tvm-site.tar.xz" "$work/tvmpart"
mv "$work/tvmpart0" .tv0/tvm.part0
mv "$work/tvmpart1" .tv1/tvm.part1
mv "$work"/apache_tvm_ffi-*.whl "$work"/xgboost_cpu-*.whl .tv1/
sha256sum "$work/tvm-site.tar.xz"
rm -rf "$work"
