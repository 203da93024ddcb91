"""The machine's two ceilings for float32 work, measured in the process that measures the
kernels (the VM's speed drifts by tens of per cent within minutes, so a ceiling taken apart
from the kernels it bounds means little):

  fma   independent AVX-512 (else AVX2) fused multiply-adds on every thread, nothing read from
        memory (``fma_peak.c``, built here with the system's C compiler): what the cores can
        do at all;
  gemm  ONNX Runtime's MatMul (MLAS SGEMM) on square matrices held in the caches: what the
        hand-written kernels ORT's convs are made of reach on this machine.

Both report GFLOP/s (a fused multiply-add is 2 flops, as TVM's ``estimate_tir_flops`` counts).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def build_fma_peak(out_dir: Path) -> Path | None:
    """Compile ``fma_peak.c`` for this CPU; None (and why, on stderr) without a C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        print("[ceilings] no C compiler: the fma ceiling is left out", file=sys.stderr,
              flush=True)
        return None
    out_dir.mkdir(parents=True, exist_ok=True)
    exe = out_dir / "fma_peak"
    subprocess.run([cc, "-O2", "-march=native", "-pthread", str(HERE / "fma_peak.c"), "-o",
                    str(exe)], check=True)
    return exe


def fma_gflops(exe: Path, threads: int, seconds: float = 0.5) -> float:
    """One timed burst of the FMA loop on ``threads`` threads."""
    out = subprocess.run([str(exe), str(threads), str(seconds)], check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[1])


class GemmProbe:
    """ORT's MatMul of two n x n float32 matrices (the second a constant, as a conv's weight
    is), on ``threads`` intra-op threads."""

    def __init__(self, n: int, threads: int):
        import numpy as np
        import onnxruntime as ort
        from onnx import TensorProto, helper

        rng = np.random.RandomState(0)
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["a", "b"], ["c"])], "gemm",
            [helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n])],
            [helper.make_tensor_value_info("c", TensorProto.FLOAT, [n, n])],
            [helper.make_tensor("b", TensorProto.FLOAT, [n, n],
                                rng.rand(n, n).astype(np.float32).ravel())])
        # IR 9: what ONNX Runtime 1.31 reads (onnx's own default is newer)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                  ir_version=9)
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        self.session = ort.InferenceSession(model.SerializeToString(), so,
                                            providers=["CPUExecutionProvider"])
        self.feed = {"a": rng.rand(n, n).astype(np.float32)}
        self.flops = 2.0 * n ** 3
        for _ in range(3):
            self.session.run(None, self.feed)

    def gflops(self, calls: int = 10) -> list[float]:
        """GFLOP/s of each of ``calls`` timed calls."""
        out = []
        for _ in range(calls):
            t0 = time.perf_counter()
            self.session.run(None, self.feed)
            out.append(self.flops / (time.perf_counter() - t0) / 1e9)
        return out
