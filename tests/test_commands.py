"""One command, ``edgebench``, with a subcommand per job (``edgebench.commands``), each also
reachable as ``python -m edgebench.<module>``; and every command the user docs name exists:
each is parsed from the markdown and run with --help."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from testlib import REPO

DOCS = [REPO / "README.md", REPO / "jetson" / "README.md", REPO / "datasets" / "README.md",
        *sorted((REPO / "docs").glob("*.md"))]
# `python -m edgebench.<module>` and `edgebench <command>` as the docs write them, in code
# (fenced blocks and `inline code`: prose says "edgebench converts ...")
CODE = re.compile(r"```.*?```|`[^`\n]+`", re.S)
MODULE_FORM = re.compile(r"python -m (edgebench(?:\.[a-z_]+)*)")
COMMAND_FORM = re.compile(r"(?:^|[\s;&|(`])edgebench ([a-z][a-z-]*)")


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=timeout)


def test_edgebench_help_lists_every_command():
    from edgebench.commands import COMMANDS

    r = _run("edgebench", "--help")
    assert r.returncode == 0, r.stderr
    for name in ("run", "parity", "tune", "compare", "report", "fleet", "telemetry"):
        assert re.search(rf"^  {name} +\S", r.stdout, re.M), (name, r.stdout)
    assert set(COMMANDS) == {"run", "parity", "tune", "compare", "report", "fleet", "telemetry"}


def test_unknown_command_and_no_command_exit_2():
    r = _run("edgebench", "tun")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "unknown command 'tun'; did you mean tune or run?" in r.stderr
    r = _run("edgebench")
    assert r.returncode == 2 and "usage: edgebench COMMAND" in r.stderr


def test_options_without_a_command_are_the_run_command():
    """``edgebench --models ...`` was the main job before subcommands; it still is."""
    r = _run("edgebench", "--models", "resnet15", "--variants", "pytorch")
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("edgebench: error: --models: unknown model 'resnet15'"), r.stderr


def _documented() -> set[tuple[str, ...]]:
    found: set[tuple[str, ...]] = set()
    for doc in DOCS:
        code = "\n".join(CODE.findall(doc.read_text(encoding="utf-8")))
        found |= {(m,) for m in MODULE_FORM.findall(code)}
        found |= {("edgebench", c) for c in COMMAND_FORM.findall(code)}
    return found


def test_the_docs_name_commands_at_all():
    cmds = _documented()
    assert ("edgebench.full",) in cmds and ("edgebench.tune",) in cmds, sorted(cmds)


def test_the_docs_write_commands_in_one_form():
    """``python -m edgebench.<module>`` everywhere; the ``edgebench <command>`` form only in
    the README's one paragraph that introduces it."""
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for para in text.split("\n\n"):
            if doc.name == "README.md" and doc.parent == REPO and "`edgebench --help`" in para:
                continue
            for code in CODE.findall(para):
                code = re.sub(r"edgebench [a-z-]+: error", "", code)   # a message, quoted
                found += [f"{doc.relative_to(REPO)}: edgebench {c}"
                          for c in COMMAND_FORM.findall(code)]
    assert not found, found


@pytest.mark.parametrize("cmd", sorted(_documented()), ids=lambda c: " ".join(c))
def test_every_command_the_docs_name_answers_help(cmd):
    r = _run(*cmd, "--help", timeout=180)
    assert r.returncode == 0, f"{' '.join(cmd)} --help: exit {r.returncode}\n{r.stderr[-2000:]}"
    assert "usage:" in r.stdout
    from test_docs_links import history

    assert not history(r.stdout), history(r.stdout)     # --help speaks of the product too
