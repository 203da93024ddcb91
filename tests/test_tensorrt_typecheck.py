"""Type-check converters/tensorrt against TensorRT's typed Python API (``tensorrt-stubs``,
generated from TensorRT 10.13 with pybind11-stubgen) with mypy: no TensorRT or GPU needed.

The stubs install ``tensorrt/__init__.pyi`` without a ``py.typed`` marker, which mypy skips
("installed, but missing library stubs or py.typed marker"), and five of their signatures do
not parse (a parameter named ``in``; a parameter without default after defaulted ones). So
the test copies them to a temporary folder on MYPYPATH, repairing just those, and ignores
errors inside the stubs. A probe that misuses the API must fail, so a check that silently
saw ``Any`` (stubs not found) cannot pass. Calls that exist only in TensorRT 8.x (binding
indices) go through ``Any`` in the code, marked where they are made.

Installed by setup.sh: pip install --no-deps --target .venv/typestubs
tensorrt-stubs==10.13.0.35.1 (its metadata requires the real ``tensorrt`` wheel, which only
NVIDIA's index serves; off the import path, see STUBS) and mypy==2.4.1 (the dev extra).
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow     # about 12 s of mypy on 2 cores


# setup.sh installs the stubs here, off the import path: in site-packages they would make
# `import tensorrt` find an empty package on every machine without TensorRT.
STUBS = REPO / ".venv" / "typestubs"


def _stub_files() -> list[Path]:
    found = list(importlib.metadata.distributions(name="tensorrt-stubs", path=[str(STUBS)]))
    if not found:
        try:
            found = [importlib.metadata.distribution("tensorrt-stubs")]
        except importlib.metadata.PackageNotFoundError:
            pytest.skip(f"tensorrt-stubs is not installed (setup.sh: pip install --no-deps "
                        f"--target {STUBS} tensorrt-stubs==10.13.0.35.1)")
    dist = found[0]
    files = [Path(str(dist.locate_file(f))) for f in dist.files or []
             if str(f).endswith(".pyi") and str(f).split("/")[0] in ("tensorrt", "tensorrt_bindings")]
    if not files:
        pytest.skip("tensorrt-stubs is installed but holds no tensorrt/*.pyi files")
    return files


def _copy_stubs(dst: Path) -> None:
    for f in _stub_files():
        rel = Path(f.parent.name) / f.name
        (dst / rel.parent).mkdir(parents=True, exist_ok=True)
        text = f.read_text(encoding="utf-8")
        text = re.sub(r"([(,]\s*)in(\s*:)", r"\1in_\2", text)
        text = text.replace("power: Weights = None, channel_axis: int)",
                            "power: Weights = None, channel_axis: int = ...)")
        (dst / rel).write_text(text, encoding="utf-8")


PROBE = '''
import tensorrt as trt

def probe(config: trt.IBuilderConfig, context: trt.IExecutionContext) -> None:
    config.DLA_cores = 1
    context.execute_async_v4(0)
'''

CONFIG = """
[mypy]
python_version = 3.10
follow_imports = silent
ignore_missing_imports = True
check_untyped_defs = True
warn_unused_ignores = True

[mypy-tensorrt,tensorrt.*,tensorrt_bindings,tensorrt_bindings.*]
ignore_errors = True
"""


def test_converters_tensorrt_type_checks_against_tensorrt_stubs(tmp_path):
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (pip install mypy==2.4.1)")
    stubs = tmp_path / "stubs"
    _copy_stubs(stubs)
    probe = tmp_path / "probe_misuse.py"
    probe.write_text(PROBE, encoding="utf-8")
    cfg = tmp_path / "mypy.ini"
    cfg.write_text(CONFIG, encoding="utf-8")
    env = dict(os.environ, MYPYPATH=str(stubs))
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(cfg),
                        "--cache-dir", str(tmp_path / "cache"), "converters/tensorrt", str(probe)],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    ours = [line for line in out.splitlines() if line.startswith("converters/")]
    assert not ours, "\n".join(ours)
    # The stubs were really used: both misuses in the probe are found.
    assert '"IBuilderConfig" has no attribute "DLA_cores"' in out, out[-3000:]
    assert '"IExecutionContext" has no attribute "execute_async_v4"' in out, out[-3000:]
    assert "Found 2 errors in 1 file" in out, out[-3000:]
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)
