"""Template text: runs of words whose 5-word shingles recur in many sessions of an account
(an agent's instruction template, a scaffold's boilerplate). A chunk's template words are
left out of its vector; a chunk of template only has no vector at all (it is skipped).

Exact repeats are caught by content hash (data/indexing.py); a template quoted around
each session's own text is split at different words every time, so only its shingles
show it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from indexer.keys import feature_key

SHINGLE_WORDS = 5
_BASE = 0x100000001B3  # FNV prime: mixes the word keys of a shingle
_MASK = (1 << 64) - 1
_TOP = pow(_BASE, SHINGLE_WORDS - 1, 1 << 64)


def shingles(words: list[str]) -> list[int]:
    """The stable 64-bit key of every run of SHINGLE_WORDS words (a rolling hash)."""
    if len(words) < SHINGLE_WORDS:
        return []
    keys = [feature_key(w) for w in words]
    h = 0
    for k in keys[:SHINGLE_WORDS]:
        h = (h * _BASE + k) & _MASK
    out = [h]
    for i in range(SHINGLE_WORDS, len(keys)):
        h = ((h - keys[i - SHINGLE_WORDS] * _TOP) * _BASE + keys[i]) & _MASK
        out.append(h)
    return out


def words_of(text: str) -> list[str]:
    return text.casefold().split()


def strip(text: str, common: frozenset[int]) -> str:
    """The text without the words of its common shingles."""
    if not common:
        return text
    words = words_of(text)
    hits = [i for i, key in enumerate(shingles(words)) if key in common]
    if not hits:
        return text
    keep = [True] * len(words)
    for i in hits:
        keep[i : i + SHINGLE_WORDS] = [False] * SHINGLE_WORDS
    return " ".join(w for w, k in zip(words, keep, strict=True) if k)


class TemplateCounter:
    """Counts in how many sessions each shingle occurs, one session at a time."""

    def __init__(self) -> None:
        self.sessions: Counter[int] = Counter()
        self.count = 0

    def add_session(self, passages: Iterable[str]) -> None:
        seen: set[int] = set()
        for text in passages:
            seen.update(shingles(words_of(text)))
        self.sessions.update(seen)
        self.count += 1

    def common(self, min_sessions: int, min_share_percent: int) -> frozenset[int]:
        """Shingles in at least min_sessions sessions and min_share_percent of them all."""
        least = max(min_sessions, -(-min_share_percent * self.count // 100))
        return frozenset(k for k, n in self.sessions.items() if n >= least)
