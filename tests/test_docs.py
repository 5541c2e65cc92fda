"""The documentation stays readable: the README within 1,500 words, no paragraph of the docs over 150 words, and
every relative link pointing at a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted(
    [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), ROOT / "notebooks" / "README.md", ROOT / "models" / "README.md",
     *(ROOT / "data").rglob("README.md")]
)
README_WORDS = 1500
PARAGRAPH_WORDS = 150


def paragraphs(text: str) -> list[str]:
    """A Markdown text's paragraphs, code blocks and tables left out; each list item counts as a paragraph."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    out = []
    for block in re.split(r"\n\s*\n", text):
        if block.strip() and not block.lstrip().startswith("|"):
            out += [item.strip() for item in re.split(r"\n(?=\s*[-*] |\s*\d+\. )", block)]
    return out


def test_paragraphs_are_read_as_a_reader_sees_them() -> None:
    text = "One two.\nThree.\n\n- a b\n- c d e\n\n```\nnot counted at all\n```\n\n| table | row |\n"
    assert [len(p.split()) for p in paragraphs(text)] == [3, 3, 4]


def test_the_readme_is_short() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").split()) <= README_WORDS


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_paragraph_is_over_150_words(doc: Path) -> None:
    long = [p[:60] for p in paragraphs(doc.read_text(encoding="utf-8")) if len(p.split()) > PARAGRAPH_WORDS]
    assert not long, f"{doc.relative_to(ROOT)}: paragraphs over {PARAGRAPH_WORDS} words begin {long}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_at_files_that_exist(doc: Path) -> None:
    text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" in target or target.startswith("mailto:"):
            continue
        assert (doc.parent / target).exists(), f"{doc.relative_to(ROOT)} links to {target}, which does not exist"


def test_the_tool_count_the_docs_write_is_the_registrys() -> None:
    """"75 tool classes" is written in several docs; the registry is where it is counted (a new tool changes it)."""
    from apibank_lib.env.tools.base import LEVEL3, LEVEL12
    from apibank_lib.env.tools.registry import tool_classes

    count = len(tool_classes(LEVEL12)) + len(tool_classes(LEVEL3))
    written = [
        (doc.relative_to(ROOT), int(n))
        for doc in DOCS
        for n in re.findall(r"\bthe (\d+) tool(?:s| classes)\b", doc.read_text(encoding="utf-8"))
    ]
    assert written and all(n == count for _, n in written), (count, written)
