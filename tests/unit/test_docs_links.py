"""Every relative link and #anchor in the project's Markdown (README, docs/, examples/, benchmarks/) resolves."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# A report.md that pmuprof wrote (findings.json beside it) links to files written beside it, and an
# example output directory keeps only some of them: those are outputs, not pages, and are left out.
PAGES = sorted(
    p
    for p in [
        REPO / "README.md",
        *REPO.glob("docs/**/*.md"),
        *REPO.glob("examples/**/*.md"),
        *REPO.glob("benchmarks/**/*.md"),
    ]
    if not (p.parent / "findings.json").exists()
)

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^ {0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$", re.M)
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=[\"']([^\"']+)[\"']", re.I)


def _text(markdown: str) -> str:
    """The Markdown without fenced blocks and code spans, where a link is not a link."""
    return CODE_SPAN.sub("", FENCE.sub("", markdown))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text lower-cased, punctuation dropped, each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = text.replace("`", "").lower()
    kept = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LNM")
    return kept.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """The anchors a page offers: one per heading (repeats get -1, -2, ... as on GitHub) and HTML ids."""
    out: set[str] = set()
    seen: dict[str, int] = {}
    for match in HEADING.finditer(FENCE.sub("", markdown)):
        base = slug(match.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out | set(HTML_ANCHOR.findall(markdown))


def links(markdown: str) -> list[str]:
    text = _text(markdown)
    return LINK.findall(text) + REF_DEF.findall(text)


def broken_links(page: Path) -> list[str]:
    bad = []
    for target in links(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:: not checked here
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text(encoding="utf-8")):
            bad.append(f"{target}: no heading with that anchor in {dest.name}")
    return bad


def test_the_slugs_are_githubs():
    assert (
        slug("Off-CPU tracing (`--off-cpu`): overhead and caveats") == "off-cpu-tracing---off-cpu-overhead-and-caveats"
    )
    assert (
        slug("Distinct frame names: what they cost (2026-11-26, not bounded yet)")
        == "distinct-frame-names-what-they-cost-2026-11-26-not-bounded-yet"
    )
    assert slug("Production install (a database host)") == "production-install-a-database-host"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}


def test_the_checker_finds_a_broken_link_and_a_broken_anchor(tmp_path):
    (tmp_path / "b.md").write_text("# Here\n")
    page = tmp_path / "a.md"
    page.write_text(
        "[ok](b.md#here) [gone](c.md) [anchor](b.md#there) [self](#nowhere) `[code](x.md)`\n"
        "```\n[fenced](y.md)\n```\n[web](https://example.com/x.md)\n"
    )
    assert broken_links(page) == [
        "c.md: no such file",
        "b.md#there: no heading with that anchor in b.md",
        "#nowhere: no heading with that anchor in a.md",
    ]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_relative_links_and_anchors_resolve(page):
    assert not broken_links(page), broken_links(page)


def test_the_readme_links_every_page_of_docs():
    readme = set(links((REPO / "README.md").read_text(encoding="utf-8")))
    for page in sorted((REPO / "docs").iterdir()):
        assert f"docs/{page.name}" in readme, f"README's documentation table does not link docs/{page.name}"
