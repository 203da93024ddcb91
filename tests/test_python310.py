"""JetPack 6's system Python is 3.10, so the suite must run on it (the Jetson set-up installs
edgebench for that interpreter). Two checks, both in the fast lane:

- static: vermin finds no construct newer than 3.10 in the code that runs on a board or
  tests it (``tomllib`` was the one: 3.11+);
- for real: the interpreter setup.sh puts at ``.venv/py310`` (Python 3.10 with the few
  pure-Python dependencies the core needs) runs the CLI's --help, which imports every
  converter module, and parses the example fleet config, which needs TOML.
The full suite does not run under 3.10 here: PyPI's torch 2.14.1 for 3.10 is a
multi-GB download, where 3.11's lies on this machine's disk.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PY310 = REPO / ".venv" / "py310" / "bin" / "python"
CHECKED = ("edgebench", "converters", "jetson", "tests", "benchmarks", "examples")


def _vermin() -> str:
    exe = Path(sys.executable).with_name("vermin")
    if exe.is_file():
        return str(exe)
    found = shutil.which("vermin")
    if not found:
        pytest.skip("vermin is not installed (the dev extra pins it)")
    return found


def test_the_code_needs_no_python_newer_than_3_10():
    r = subprocess.run([_vermin(), "-t=3.10-", "--no-tips", "--violations", "--no-make-paths-absolute",
                        *CHECKED], cwd=REPO, capture_output=True, text=True, timeout=300)
    # vermin exits 1 when a target is not met; its report names each file and construct.
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "Minimum required versions: 3.10" in r.stdout, r.stdout[-2000:]


def _py310_or_skip() -> Path:
    if not PY310.is_file():
        pytest.skip(f"no Python 3.10 venv at {PY310.relative_to(REPO)} (setup.sh makes it where "
                    "a 3.10 interpreter exists; EDGEBENCH_PY310 names one)")
    return PY310


def test_the_cli_and_every_converter_module_import_on_python_3_10():
    py = _py310_or_skip()
    r = subprocess.run([str(py), "-c", "import sys, converters; assert sys.version_info[:2] == "
                        "(3, 10), sys.version; print(sorted(converters.names())); "
                        "print(converters.broken())"],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    names, broken = r.stdout.splitlines()[-2:]
    assert broken == "{}", broken
    assert "'onnxruntime'" in names and "'tvm'" in names
    r = subprocess.run([str(py), "-m", "edgebench.full", "--help"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "--variants" in r.stdout


def test_a_toml_fleet_config_parses_on_python_3_10():
    py = _py310_or_skip()
    code = ("import json; from edgebench.fleet.config import load; "
            "print(json.dumps(sorted(load('examples/fleet.example.toml'))))")
    r = subprocess.run([str(py), "-c", code], cwd=REPO, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]   # before: ModuleNotFoundError: tomllib
    assert '"devices"' in r.stdout
