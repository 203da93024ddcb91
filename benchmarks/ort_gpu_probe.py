"""What a PyPI onnxruntime-gpu does on this machine, each question in a fresh process:
which EPs it lists, whether a CUDA EP session really holds the CUDA EP with and without
``onnxruntime.preload_dlls()`` (edgebench's session.preload_gpu_libraries), with torch
imported first or not, and what a TensorRT EP session does where no TensorRT is installed.
Prints one JSON line per question (``import_first``, ``preload_dlls``, ``providers``, the
session's providers or its error, and the case's last log lines).

    python3 benchmarks/ort_gpu_probe.py > probe.jsonl      # on a machine with an NVIDIA GPU
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CASE = r'''
import json, sys, numpy as np
first, preload, eps = sys.argv[1], sys.argv[2] == "1", sys.argv[3].split(",")
if first == "torch":
    import torch
import onnxruntime as ort
if preload:
    ort.preload_dlls()
so = ort.SessionOptions()
so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
out = {"ort": ort.__version__, "available": ort.get_available_providers()}
try:
    s = ort.InferenceSession(sys.argv[4], so, providers=eps, enable_fallback=0)
    y = s.run(None, {"x": np.ones((1, 3, 8, 8), np.float32)})[0]
    out.update(session=s.get_providers(), out_sum=float(y.sum()))
except Exception as e:
    out["error"] = str(e).splitlines()[0][:400]
print("RESULT " + json.dumps(out))
'''


def tiny_model(path: Path) -> None:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.full((4, 3, 3, 3), 0.1, np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])
    graph = helper.make_graph([node], "tiny",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    tmp = Path(tempfile.mkdtemp())
    model = tmp / "tiny.onnx"
    tiny_model(model)
    script = tmp / "case.py"
    script.write_text(CASE)
    cases = [("ort", "0", "CUDAExecutionProvider"), ("ort", "1", "CUDAExecutionProvider"),
             ("torch", "0", "CUDAExecutionProvider"),
             ("ort", "1", "TensorrtExecutionProvider,CUDAExecutionProvider")]
    for first, preload, eps in cases:
        p = subprocess.run([sys.executable, str(script), first, preload, eps, str(model)],
                           capture_output=True, text=True, timeout=300)
        result = next((json.loads(line[7:]) for line in p.stdout.splitlines()
                       if line.startswith("RESULT ")), None)
        log = [line for line in (p.stdout + p.stderr).splitlines() if not line.startswith("RESULT ")]
        print(json.dumps({"import_first": first, "preload_dlls": preload == "1",
                          "providers": eps.split(","), "rc": p.returncode, "result": result,
                          "log": log[-12:]}))


if __name__ == "__main__":
    main()
