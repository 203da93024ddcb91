"""The README's opening commands, run as a new user would: parsed from the file, the main job
on a clean copy of the tracked files (with ``--profile smoke`` and one model, to keep it short),
the test command checked against CI's, the Jetson set-up's main job parsed by the real
parser. ``./setup.sh`` itself is not re-run here (it would reinstall this checkout's venv);
tests/test_jetson_setup.py runs it where it must stop, and CI runs it from nothing."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from testlib import REPO, TINY, assert_records_valid

README = REPO / "README.md"
FENCE = re.compile(r"```bash\n(.*?)```", re.S)
# smoke on the tiny test model: the command as written, at a fraction of a study model's cost
SMOKE = ["--profile", "smoke", "--models", TINY]


def _blocks() -> list[list[str]]:
    """The README's bash blocks, as lists of commands (comments and blank lines dropped)."""
    out = []
    for body in FENCE.findall(README.read_text(encoding="utf-8")):
        lines = [ln.split("  #")[0].strip() for ln in body.splitlines()]
        out.append([ln for ln in lines if ln and not ln.startswith("#")])
    return out


def _opening():
    """(x86 block, Jetson block): the README's first two bash blocks."""
    blocks = _blocks()
    assert len(blocks) >= 2, "the README opens with two bash blocks: x86, then the Jetson"
    return blocks[0], blocks[1]


def _main_job(cmd: str, venv: str) -> list[str]:
    """``<setup> && <venv>/bin/python -m edgebench.full [...]`` -> the main job's argv."""
    setup, sep, job = cmd.partition(" && ")
    assert sep, f"the first command sets up, then runs the main job: {cmd!r}"
    argv = shlex.split(job)
    assert argv[:3] == [f"{venv}/bin/python", "-m", "edgebench.full"], argv
    return argv


def test_the_readme_opens_with_set_up_and_run_then_the_tests_for_each_machine_kind():
    x86, jetson = _opening()
    assert x86[0].startswith("./setup.sh && ") and jetson[0].startswith(
        "bash jetson/setup-jetpack6.sh && "), (x86, jetson)
    for path in ("setup.sh", "jetson/setup-jetpack6.sh"):
        assert (REPO / path).is_file(), path
    # the test command is the one CI runs (.ci/run), with the venv the set-up made
    assert x86[1] == ".venv/bin/python -m pytest", x86
    assert ".venv/bin/python -m pytest" in (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert shlex.split(jetson[1])[:3] == [".venv-jetson/bin/python", "-m", "pytest"], jetson


def test_the_jetson_main_job_is_a_valid_command():
    from edgebench.cli import build_parser

    _, jetson = _opening()
    argv = _main_job(jetson[0], ".venv-jetson")
    args = build_parser().parse_args(argv[3:])
    assert args.profile == "smoke"


def _clean_copy(dest: Path) -> Path:
    """The tracked files a user's clone has, without the experiments, results and tests."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for f in files:
        if not f or f.split("/")[0] in ("experiments", "results", "tests") or \
                not (REPO / f).is_file():
            continue
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / f, dest / f)
    (dest / ".venv").symlink_to(REPO / ".venv")      # what ./setup.sh made
    return dest


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_readme_main_job_runs_as_written_on_a_clean_copy(tmp_path):
    x86, _ = _opening()
    argv = _main_job(x86[0], ".venv") + SMOKE
    root = _clean_copy(tmp_path / "edgebench")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EDGEBENCH_")}
    r = subprocess.run([str(root / argv[0]), *argv[1:]], cwd=root, env=env,
                       capture_output=True, text=True, timeout=850)
    assert r.returncode == 0, r.stderr[-3000:]
    (run,) = sorted((root / "results").glob("run-*"))
    recs = assert_records_valid(run / "results.jsonl")
    # smoke's 5 s limits may cut a latency cell short on a busy machine: partial, with figures
    done = {(r["task"], r["variant"]) for r in recs if r["status"] in ("ok", "partial")
            and (r["task"] != "latency" or r.get("latency_ms"))}
    assert {("latency", "pytorch"), ("latency", "onnxruntime")} <= done, sorted(done)
    assert any(r["task"] == "parity" and r["variant"] == "onnxruntime" and r["status"] == "ok"
               for r in recs)
    report = (run / "report.md").read_text(encoding="utf-8")
    assert "Which runtime to ship" in report and TINY in report
    for name in ("summary.csv", "run.json", "plots"):
        assert (run / name).exists(), name
