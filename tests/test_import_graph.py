"""No import circles in converters/ or edgebench/: the graph of every import statement
(module level and inside functions alike, where circles hide), read with ``ast``."""
from __future__ import annotations

import ast
from pathlib import Path

from testlib import REPO

PACKAGES = ("converters", "edgebench")


def module_name(path: Path, root: Path = REPO) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(root: Path = REPO) -> dict[str, set[str]]:
    """module -> the project modules it imports (``from . import x`` names module ``x``)."""
    files = [p for pkg in PACKAGES for p in (root / pkg).rglob("*.py")]
    modules = {module_name(p, root): p for p in files}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod, is_package, node)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            for t in targets:
                while t and t not in modules:      # a name inside a module: the module
                    t = t.rpartition(".")[0]
                if t and t != mod and not mod.startswith(t + "."):  # a package's own parent
                    graph[mod].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    import sys

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles():
    found = cycles(import_graph())
    assert not found, "\n".join(" <-> ".join(c) for c in found)


def test_the_cycle_finder_finds_a_circle_hidden_in_a_function(tmp_path):
    pkg = tmp_path / "converters"
    pkg.mkdir()
    (tmp_path / "edgebench").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .a import g\n")
    (pkg / "c.py").write_text("from converters import a\n")
    graph = import_graph(tmp_path)
    assert graph["converters.a"] == {"converters.b"} and graph["converters.c"] == {"converters.a"}
    assert cycles(graph) == [["converters.a", "converters.b"]]


def test_the_tvm_package_lists_its_modules():
    """converters/tvm/__init__.py's docstring names every module of the core, and
    cpu/__init__.py's every module of the research, and nothing that is not there."""
    import re

    for folder in (REPO / "converters" / "tvm", REPO / "converters" / "tvm" / "cpu"):
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8")))
        listed = set(re.findall(r"^  ([a-z_]+\.py|[a-z_]+/)", doc, re.M))
        files = {p.name for p in folder.glob("*.py")} | {
            p.name + "/" for p in folder.iterdir() if (p / "__init__.py").is_file()}
        if folder.name == "cpu":
            files.discard("__init__.py")
        assert listed == files, (folder, sorted(listed ^ files))


MODULE_LINES_MAX = 400     # a module one reader can hold; the TVM package is held as a whole


def long_modules(root: Path = REPO) -> dict[str, int]:
    """Modules of converters/ (outside converters/tvm/) and edgebench/ over the limit."""
    out = {}
    for pkg in PACKAGES:
        for p in (root / pkg).rglob("*.py"):
            if p.is_relative_to(root / "converters" / "tvm"):
                continue
            n = len(p.read_text(encoding="utf-8").splitlines())
            if n > MODULE_LINES_MAX:
                out[str(p.relative_to(root))] = n
    return out


def test_every_module_outside_the_tvm_package_is_at_most_400_lines(tmp_path):
    assert not long_modules(), long_modules()
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir()
    (tmp_path / "converters" / "tvm").mkdir()
    (tmp_path / "edgebench" / "big.py").write_text("x = 1\n" * 401)
    (tmp_path / "converters" / "tvm" / "big.py").write_text("x = 1\n" * 401)
    (tmp_path / "converters" / "fits.py").write_text("x = 1\n" * 400)
    assert long_modules(tmp_path) == {"edgebench/big.py": 401}
