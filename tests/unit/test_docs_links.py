"""Every path README.md, docs/*.md and bench/README.md cite exists: relative links, and
backticked repo paths.

A markdown link's target (`[text](path)`, images too) is resolved against the page that holds
it; http(s) and mailto links are left alone, and a `#fragment` is dropped for that check (a
fragment into a page of these is checked apart: it must name one of that page's headings).
A word of an inline code span is a repo path when it holds a "/" and ends in one of
`PATH_ENDINGS` ("/" for a folder); it is resolved against the repository's root, and a glob
(`*`) must match something. Fenced code blocks are examples, not citations: they are not read.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]

PATH_ENDINGS = (".py", ".md", ".json", ".jsonl", ".toml", ".png", ".ini", ".graphql", ".txt", "/")

# Cited on purpose outside the repository, on a page whose text is frozen (the contract).
OUTSIDE_THE_REPO = {
    # The design document where the contract names it; its copy here is docs/design.md.
    ("docs/contract.md", "../seed/000_03c1083ba8038d84.txt"),
}
# Made when the product runs, so a fresh checkout has none; each must be one of .gitignore's
# lines (checked below), so no path the repository should hold can hide here.
MADE_AT_RUN_TIME = {".pgdata/"}

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s<>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_CODE_SPAN = re.compile(r"(`+)((?:(?!\n\s*\n).)+?)\1", re.DOTALL)  # within one paragraph
# A relative path of names: no quotes, no leading "/", no "?" or "=" (routes and queries).
_PATH_WORD = re.compile(r"[\w.*-]+(/[\w.*-]+)*/?")
_EXTERNAL = ("http://", "https://", "mailto:")


def _prose(text: str) -> str:
    """The text without its fenced code blocks (their lines blanked: lines keep their numbers)."""
    kept, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            kept.append("")
        else:
            kept.append("" if fenced else line)
    return "\n".join(kept)


def _read(page: Path) -> str:
    return _prose(page.read_text(encoding="utf-8"))


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _links(text: str) -> list[tuple[int, str]]:
    """(line, target) of every link outside code spans, external ones left out."""
    blanked = _CODE_SPAN.sub(lambda span: re.sub(r"[^\n]", " ", span.group(0)), text)
    return [
        (_line_of(blanked, link.start()), link.group(1))
        for link in _LINK.finditer(blanked)
        if not link.group(1).startswith(_EXTERNAL)
    ]


def _code_paths(text: str) -> list[tuple[int, str]]:
    """(line, path) of every word of an inline code span that reads as a repo path."""
    found = []
    for span in _CODE_SPAN.finditer(text):
        for word in span.group(2).split():
            word = word.rstrip(",;:)").lstrip("(")
            if "/" in word and word.endswith(PATH_ENDINGS) and _PATH_WORD.fullmatch(word):
                found.append((_line_of(text, span.start()), word))
    return found


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(text: str) -> set[str]:
    anchors: set[str] = set()
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            slug, n = _slug(heading.group(1)), 1
            while slug in anchors:
                slug, n = f"{_slug(heading.group(1))}-{n}", n + 1
            anchors.add(slug)
    return anchors


def _exists(path: Path) -> bool:
    if not path.resolve().is_relative_to(ROOT):
        return False
    if "*" in path.as_posix():
        return any(ROOT.glob(path.resolve().relative_to(ROOT).as_posix()))
    return path.exists()


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_relative_link_resolves(page: Path) -> None:
    missing = [
        f"{_name(page)}:{line}: {target}"
        for line, target in _links(_read(page))
        if not target.startswith("#") and not _exists(page.parent / target.split("#", 1)[0])
    ]
    assert not missing, "links to nothing:\n" + "\n".join(missing)


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_backticked_repo_path_exists(page: Path) -> None:
    missing = [
        f"{_name(page)}:{line}: {path}"
        for line, path in _code_paths(_read(page))
        if (_name(page), path) not in OUTSIDE_THE_REPO
        and path not in MADE_AT_RUN_TIME
        and not _exists(ROOT / path)
    ]
    assert not missing, "paths that are not in the repository:\n" + "\n".join(missing)


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_fragment_names_a_heading(page: Path) -> None:
    missing = []
    for line, target in _links(_read(page)):
        path, _, fragment = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        checked = fragment and linked.suffix == ".md" and linked.exists()
        if checked and fragment not in _anchors(_read(linked)):
            missing.append(f"{_name(page)}:{line}: {target}")
    assert not missing, "fragments that name no heading:\n" + "\n".join(missing)


def test_what_is_made_at_run_time_is_ignored_by_git() -> None:
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert sorted(MADE_AT_RUN_TIME - set(ignored)) == []


def test_every_docs_page_is_linked() -> None:
    linked = {
        (page.parent / target.split("#", 1)[0]).resolve()
        for page in PAGES
        for _, target in _links(_read(page))
        if not target.startswith("#")
    }
    orphans = [_name(page) for page in PAGES[1:] if page.resolve() not in linked]
    assert not orphans, "docs pages no page links to: " + ", ".join(orphans)


def test_the_checks_read_what_they_should() -> None:
    text = _prose(
        "See [the contract](docs/contract.md#import) and ![a shot](docs/x.png),\n"
        "[`vendor/README.md`](a/b.md), [web](https://example.com), [here](#anchor-1);\n"
        "`tests/db/test_similar_exact.py`, `python -m bench.search --out bench/results/s.md`,\n"
        '`transfer/formats/`, `GET /api/v1/search?q=`, `a/b.vouches_for`, `x "d/c.py ..."`,\n'
        "`floor(i * (n - 1) / 7)`, `[masked: x](y.md)`.\n"
        "```sh\n`in/a/fence.py` [fenced](fenced.md)\n```\n"
        "# Here (`a`)\n## Here: a's\n### Here (`a`)\n"
    )
    assert _links(text) == [
        (1, "docs/contract.md#import"),
        (1, "docs/x.png"),
        (2, "a/b.md"),
        (2, "#anchor-1"),
    ]
    assert [path for _, path in _code_paths(text)] == [
        "vendor/README.md",
        "tests/db/test_similar_exact.py",
        "bench/results/s.md",
        "transfer/formats/",
    ]
    assert _anchors(text) == {"here-a", "here-as", "here-a-1"}
    assert _slug("The ef_search fitted on each account's index") == (
        "the-ef_search-fitted-on-each-accounts-index"
    )
    assert _exists(ROOT / "bench/search/queries/*-holdout.jsonl")
    assert not _exists(ROOT / "bench/search/queries/*-nowhere.jsonl")
    assert not _exists(ROOT / "../outside.txt")
