# Sourced on the lent GPU machine (device.sh here and ../tvm-cuda-tuning-cost-2026-11-27/):
# join the TVM compiler's two carried parts (/tmp/parts, from prepare.sh's .tv0 and .tv1),
# check their sha256 (TVM_SHA), install TVM 0.27 beside the image's Python, and export
# PYTHONPATH and the LD_LIBRARY_PATH its CUDA sidecar needs. Writes $OUT/machine.txt.
# shellcheck shell=bash
sha=${TVM_SHA:?sha256 of tvm-site.tar.xz}
cat /tmp/parts/tvm.part0 /tmp/parts/tvm.part1 >/tmp/tvm-site.tar.xz
echo "$sha  /tmp/tvm-site.tar.xz" | sha256sum -c - || exit 3
mkdir -p /tmp/site && tar -xJf /tmp/tvm-site.tar.xz -C /tmp/site || exit 4
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site /tmp/parts/*.whl || exit 5
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
# TVM's CUDA sidecar (libtvm_runtime_cuda) needs libcudart.so.13: the image has it in a wheel.
cu13=$(python3 -c 'import glob, nvidia; print(":".join(d for p in nvidia.__path__ for d in glob.glob(p + "/cu13/lib")))')
export LD_LIBRARY_PATH=$cu13:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv
  nproc; lscpu | grep -E 'Model name|^CPU\(s\)'; python3 -V
  python3 -m pip list 2>/dev/null | grep -i -E '^(torch|jax|jaxlib|timm|numpy|cuda-bindings|nvidia-cuda-nvrtc|apache-tvm.*|xgboost.*|py-spy) '
  python3 -c 'import tvm; d = tvm.cuda(0); print("tvm", tvm.__version__, "cuda exist", d.exist, "sm", d.compute_version)'
} >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
