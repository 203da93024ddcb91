"""experiments/ holds only what a current claim or default rests on, and every folder in it
can be rerun: a README (question, CPU, command, result) and a run.sh whose --help and
--dry-run work, every script beside it answers --help, and so does every benchmarks/ script a
run.sh or experiments/lib.sh names. A dry run prints the commands it would run, runs none and
writes nothing (under results/ or in the folder). The index (experiments/README.md) names
every folder and no other; the folder stays small (at most 20 folders, 300 files); the tuning
databases the experiments restore (data/tvm-databases/) are each in their index.

Nothing here measures: each check is a --help or a dry run (a few seconds in all on 2 cores)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from testlib import REPO

EXPERIMENTS = REPO / "experiments"
DATA = REPO / "data" / "tvm-databases"
MAX_FOLDERS, MAX_FILES = 20, 300
TIMEOUT = 60


def folders() -> list[str]:
    return sorted(p.name for p in EXPERIMENTS.iterdir() if p.is_dir() and not p.name.startswith("."))


def tracked(path: Path) -> list[str] | None:
    """The files git tracks under ``path``; None where this is not a git checkout."""
    r = subprocess.run(["git", "ls-files", "--", str(path.relative_to(REPO))], cwd=REPO,
                       capture_output=True, text=True)
    return r.stdout.split() if r.returncode == 0 else None


def committed_or_skip(name: str) -> Path:
    """A folder git tracks nothing in is a study still being written (a run in progress fills
    it); it is checked once it is committed."""
    folder = EXPERIMENTS / name
    if tracked(folder) == []:
        pytest.skip(f"experiments/{name} is not committed yet")
    return folder


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, **kw)


def tree(root: Path, leave_out: tuple[Path, ...] = ()) -> dict[str, float]:
    """Every file under ``root`` with its modification time, but those under ``leave_out``."""
    out = {}
    if not root.is_dir():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if Path(dirpath, d) not in leave_out]
        for f in filenames:
            p = Path(dirpath, f)
            try:
                out[str(p.relative_to(REPO))] = p.stat().st_mtime
            except FileNotFoundError:          # removed meanwhile by a run beside this test
                pass
    return out


@pytest.mark.parametrize("name", folders())
def test_each_folder_has_a_readme_and_a_run_script(name):
    folder = committed_or_skip(name)
    assert (folder / "README.md").is_file(), f"experiments/{name} has no README.md"
    assert (folder / "run.sh").is_file(), f"experiments/{name} has no run.sh"


@pytest.mark.parametrize("name", folders())
def test_run_sh_help_prints_its_header(name):
    folder = committed_or_skip(name)
    r = run(["bash", str(folder / "run.sh"), "--help"])
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip(), "run.sh --help printed nothing"


@pytest.mark.parametrize("name", folders())
def test_run_sh_dry_run_prints_commands_and_writes_nothing(name):
    folder = committed_or_skip(name)
    results = REPO / "results"
    # what runs beside this test may write: the shared artifact cache, other studies' work dirs
    others = (results / "cache", *(results / "experiments" / f for f in folders() if f != name))
    before, here = tree(results, others), tree(folder)
    r = run(["bash", str(folder / "run.sh"), "--dry-run"])
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    commands = [line for line in r.stdout.splitlines() if line.startswith("+ ")]
    assert commands, f"the dry run printed no command line ('+ ...'):\n{r.stdout[-2000:]}"
    new = sorted(set(tree(results, others)) - set(before))
    assert not new, f"the dry run wrote under results/: {new[:10]}"
    after = tree(folder)
    changed = sorted(f for f in set(here) | set(after) if here.get(f) != after.get(f))
    assert not changed, f"the dry run changed files in experiments/{name}: {changed[:10]}"


def scripts() -> list[tuple[str, str]]:
    out = []
    for name in folders():
        for p in sorted((EXPERIMENTS / name).rglob("*")):
            if p.suffix == ".py" or (p.suffix == ".sh" and p.name != "run.sh"):
                out.append((name, str(p.relative_to(EXPERIMENTS / name))))
    return out


@pytest.mark.parametrize("name,script", scripts(), ids=lambda v: v)
def test_every_script_beside_run_sh_answers_help(name, script):
    folder = committed_or_skip(name)
    path = folder / script
    cmd = [sys.executable, str(path), "--help"] if path.suffix == ".py" else \
        ["bash", str(path), "--help"]
    r = run(cmd)
    assert r.returncode == 0, f"{path.relative_to(REPO)} --help: exit {r.returncode}\n" \
                              f"{r.stderr[-2000:]}"
    assert r.stdout.strip()


def benchmarks_named() -> list[str]:
    """The benchmarks/ scripts a run.sh (or another script there) or experiments/lib.sh runs."""
    texts = [EXPERIMENTS / "lib.sh", *EXPERIMENTS.glob("*/*.sh")]
    found = set()
    for t in texts:
        found |= set(re.findall(r"benchmarks/(\w+\.py)", t.read_text(encoding="utf-8")))
    return sorted(found)


def test_the_experiments_name_benchmarks_at_all():
    assert "tvm_vs_ort.py" in benchmarks_named()       # the scan looks in the right place


@pytest.mark.parametrize("script", benchmarks_named())
def test_every_benchmark_the_experiments_run_answers_help(script):
    path = REPO / "benchmarks" / script
    assert path.is_file(), f"an experiment runs benchmarks/{script}, which is not there"
    r = run([sys.executable, str(path), "--help"])
    assert r.returncode == 0, f"benchmarks/{script} --help: exit {r.returncode}\n{r.stderr[-2000:]}"


def test_experiments_stay_small():
    assert len(folders()) <= MAX_FOLDERS, folders()
    files = tracked(EXPERIMENTS)
    if files is None:
        pytest.skip("not a git checkout: the committed files cannot be counted")
    assert len(files) <= MAX_FILES, f"{len(files)} files under experiments/ (at most {MAX_FILES})"


def index_rows(readme: Path, pattern: str) -> list[str]:
    """The first cell of each table row of ``readme`` that is a code span matching ``pattern``."""
    rows = re.findall(r"^\|\s*`([^`]+)`\s*\|", readme.read_text(encoding="utf-8"), re.M)
    return [r for r in rows if re.fullmatch(pattern, r)]


def test_the_index_names_every_folder_and_no_other():
    rows = [r.rstrip("/") for r in index_rows(EXPERIMENTS / "README.md", r"[\w.-]+/?")]
    assert len(rows) == len(set(rows)), "a folder has two rows in experiments/README.md"
    assert sorted(rows) == folders(), (
        f"no row in experiments/README.md: {sorted(set(folders()) - set(rows))}; "
        f"rows naming no folder: {sorted(set(rows) - set(folders()))}")


def test_the_data_index_lists_every_archive_and_no_missing_one():
    rows = index_rows(DATA / "README.md", r"[\w./-]+\.tar\.xz")
    there = sorted(str(p.relative_to(DATA)) for p in DATA.rglob("*.tar.xz"))
    assert there, "no archive under data/tvm-databases/: the scan looks in the wrong place"
    assert len(rows) == len(set(rows)), "an archive has two rows in data/tvm-databases/README.md"
    assert sorted(rows) == there, (f"not in the index: {sorted(set(there) - set(rows))}; "
                                   f"in the index, not there: {sorted(set(rows) - set(there))}")


def test_the_index_checks_catch_a_missing_row(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("| folder | q |\n|---|---|\n| `a/` | x |\n| `b.tar.xz` | y |\n"
                      "text `c/` |\n", encoding="utf-8")
    assert index_rows(readme, r"[\w.-]+/?") == ["a/", "b.tar.xz"]
    assert index_rows(readme, r"[\w./-]+\.tar\.xz") == ["b.tar.xz"]
