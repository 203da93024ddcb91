"""Every link in the user docs leads somewhere: a relative path that exists, and an anchor
(``file.md#section`` or ``#section``) that is one of the target's headings, slugged as GitHub
slugs them. Web links are not fetched (no network here)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from testlib import REPO

DOCS = [REPO / "README.md", REPO / "jetson" / "README.md", REPO / "datasets" / "README.md",
        *sorted((REPO / "docs").glob("*.md"))]
# Developer pages whose links are checked too (they may name commits and dates: the findings
# page says which commit holds a retired option or a folded experiment).
DEV_DOCS = [REPO / "CONTRIBUTING.md", REPO / "experiments" / "FINDINGS.md"]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"```.*?```", re.S)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*?|_(?=\w)", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(md: Path) -> set[str]:
    text = FENCE.sub("", md.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set()
    for h in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M):
        s = slug(h)
        n = seen.get(s, 0)
        out.add(s if n == 0 else f"{s}-{n}")
        seen[s] = n + 1
    return out


def links(md: Path) -> list[str]:
    return [t for t in LINK.findall(FENCE.sub("", md.read_text(encoding="utf-8")))
            if not re.match(r"^[a-z][a-z+.-]*:", t)]        # http:, https:, mailto: ...


def test_slugs_are_githubs():
    assert slug("Emulated AGX Orin (no board needed)") == "emulated-agx-orin-no-board-needed"
    assert slug("`edgebench tune`: options") == "edgebench-tune-options"


def broken(doc: Path) -> list[str]:
    bad = []
    for target in links(doc):
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}: no heading with anchor #{anchor} in {dest.name}")
    return bad


def test_a_missing_file_or_anchor_is_found(tmp_path):
    (tmp_path / "b.md").write_text("# Real part\n", encoding="utf-8")
    doc = tmp_path / "a.md"
    doc.write_text("## Here\n[ok](b.md#real-part) [ok](#here) [web](https://x.org/y) "
                   "[gone](c.md) [bad](b.md#no-part) [bad](#nowhere)\n"
                   "```\n[not a link](in/code.md)\n```\n", encoding="utf-8")
    assert broken(doc) == ["c.md: no such file", "b.md#no-part: no heading with anchor "
                           "#no-part in b.md", "#nowhere: no heading with anchor #nowhere in a.md"]


@pytest.mark.parametrize("doc", DOCS + DEV_DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_leads_somewhere(doc):
    bad = broken(doc)
    assert not bad, f"{doc.relative_to(REPO)}:\n  " + "\n  ".join(bad)


# A day's date outside a path (folder names such as experiments/own-model-2026-12-05 are
# paths), and a project-history reference: neither is the product's.
HISTORY = re.compile(r"(?<![-/\w])20\d\d-\d\d-\d\d(?![-/\w])|\b(?:[Ii]ssue|[Ss]top|[Ss]ession) "
                     r"\d+(?!\d|\.\d|x)|\b(?:commit|landed) [0-9a-f]{7,40}\b")


def history(text: str) -> list[str]:
    return [m.group(0) for m in HISTORY.finditer(text)]


def test_user_docs_speak_of_the_product_not_its_history():
    found = [f"{doc.relative_to(REPO)}: {h}" for doc in DOCS
             for h in history(doc.read_text(encoding="utf-8"))]
    assert not found, found
    # what it catches, and what it lets be
    assert history("On 2026-11-27 the VM was slower (issue 32), landed 2f067cb at stop 44.") == \
        ["2026-11-27", "issue 32", "landed 2f067cb", "stop 44"]
    assert history("records: experiments/own-model-2026-12-05/ and jetson-containers #1462; "
                   "a session 0.71x as long") == []


CITATION = re.compile(r"experiments/([\w.-]*[\w-])(?:#([\w-]+))?")
DOC_CITATION = re.compile(r"\b(docs/[\w.-]+\.md)#([\w-]+)")


def folder_citations(text: str, have: set[str]) -> list[str]:
    """What in ``text`` cites an experiment folder, or a findings heading that is not there."""
    return [m.group(0) for m in CITATION.finditer(text)
            if m.group(1) != "FINDINGS.md" or (m.group(2) and m.group(2) not in have)]


def test_shipping_code_cites_the_findings_page_not_experiment_folders():
    """Experiments are folded away as their claims are superseded; the code's citations
    outlive them only as headings of the findings page."""
    have = anchors(REPO / "experiments" / "FINDINGS.md")
    assert folder_citations("see experiments/tvm-x-2026/ and experiments/FINDINGS.md#no-such; "
                            "experiments/FINDINGS.md#threads", have) == [
        "experiments/tvm-x-2026", "experiments/FINDINGS.md#no-such"]
    bad = []
    for py in sorted(p for root in ("converters", "edgebench") for p in (REPO / root).rglob("*.py")):
        text = py.read_text(encoding="utf-8")
        bad += [f"{py.relative_to(REPO)}: {c}" for c in folder_citations(text, have)]
        bad += [f"{py.relative_to(REPO)}: {doc}#{a}" for doc, a in DOC_CITATION.findall(text)
                if not (REPO / doc).is_file() or a not in anchors(REPO / doc)]
    assert not bad, "\n".join(bad)
