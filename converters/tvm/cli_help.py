"""The tune command's ``--help`` text beyond the option summaries: targets, defaults,
recipes, where things go. What each choice measured is in experiments/FINDINGS.md."""
import textwrap

from .cpu.recipes import RECIPES
from .lowering import measured_defaults


def _recipe_lines() -> str:
    """recipes.RECIPES as the help shows it: a model, then its flags, a flag and its value
    never split across lines."""
    out = []
    for r in RECIPES.values():
        line = f"    {r.model:<16}"
        for k, v in r.options.items():
            flag = f" --{k.replace('_', '-')} {v}"
            if len(line) + len(flag) > 88:
                out.append(line)
                line = " " * 20
            line += flag
        out.append(line)
    return "\n".join(out)


_EPILOG = """\
targets (default: host, except on a Jetson with CUDA: jetson-agx-orin):
  host                 this machine's CPU (LLVM, mcpu detected, all physical cores)
  jetson-agx-orin      the Orin's GPU: CUDA sm_87 kernels + aarch64 host code
  jetson-agx-orin-cpu  the Orin's 12 Cortex-A78AE cores (LLVM aarch64)
  <tag> | '{"kind": ...}'  a TVM target tag, or a JSON target such as
                       '{"kind": "llvm", "mcpu": "neoverse-v2", "num-cores": 8}'

{defaults}
{recipes}
  Other CPUs (the Orin's Arm cores) and GPUs get TVM's plain forms (NCHW, direct convs,
  MetaSchedule's space) until measured there. tuning.json and every run record say which
  ("defaults": x86-measured or plain, and the recipe).

database: <tuning-dir>/<target>/<model>-CxHxW/ (MetaSchedule JSON + tuning.json). --trials is
  the total for the model on that target: the same command resumes an interrupted run, a
  larger --trials continues a finished one. The tvm variant applies the database itself.

remote measurement: on the board, python -m tvm.exec.rpc_server --tracker HOST:PORT --key orin;
  here, --target jetson-agx-orin --rpc-tracker HOST:PORT --rpc-key orin.

export: --export DIR writes model-b<B>.so per --batch-sizes value and manifest.json (sha256
  of each file). For jetson-agx-orin it cross-compiles (aarch64-linux-gnu-g++, NVRTC 12.2).
  On the device: python -m edgebench.full --variants tvm --tvm-artifact DIR (a folder of
  such artifacts, one per model, works too).

The command ends by printing the edgebench.full command that measures the result against
ONNX Runtime; --measure runs it. Exit codes: 0 done, 1 TVM or the measurement failed, 2 bad
arguments, 130 interrupted (run it again to resume). Guide: docs/tvm.md; what each choice
measured: experiments/FINDINGS.md.
"""

_DEFAULTS = textwrap.fill(
    "defaults: an option left unset takes what the model's database was tuned with. A new "
    f"database on an x86-64 CPU gets the forms measured there ({measured_defaults()}, "
    "vector-width tiling) and the model's recipe:", 92, subsequent_indent="  ")
EPILOG = _EPILOG.replace("{recipes}", _recipe_lines()).replace("{defaults}", _DEFAULTS)
