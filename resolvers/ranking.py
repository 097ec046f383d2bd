"""The comparison's pure parts: probe positions, model choice, grouping, order, bands.

Hits in, ordered neighbours out. Imports neither SQLAlchemy nor strawberry.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from uuid import UUID

SIMILAR_PROBE_CHUNKS = 8
SIMILAR_NEIGHBOURS_PER_PROBE = 25
MIN_SIMILAR_SIMILARITY = 0.35
SIMILARITY_BAND_CLOSE = 0.70
SIMILARITY_BAND_RELATED = 0.50
SIMILAR_BREADTH_WEIGHT = 0.02
SIMILAR_PREVIEW_CHARS = 280
# The timeline counts among this many nearest passages per probe (resolvers/timeline.py).
TIMELINE_NEIGHBOURS_PER_PROBE = 200


class Band(Enum):
    CLOSE = "close"
    RELATED = "related"
    LOOSE = "loose"


def band(similarity: float, cuts: tuple[float, float] | None = None) -> Band:
    """The band of a similarity; `cuts` (close, related) defaults to the contract's."""
    close, related = cuts if cuts is not None else (SIMILARITY_BAND_CLOSE, SIMILARITY_BAND_RELATED)
    if similarity >= close:
        return Band.CLOSE
    if similarity >= related:
        return Band.RELATED
    return Band.LOOSE


def probe_positions(n: int, probes: int = SIMILAR_PROBE_CHUNKS) -> list[int]:
    """Positions of the probes among n ordered chunks: all when n <= probes, else an even
    stride floor(i * (n - 1) / (probes - 1) + 0.5), computed in integers."""
    if n <= probes:
        return list(range(n))
    span = probes - 1
    return [(2 * i * (n - 1) + span) // (2 * span) for i in range(probes)]


def comparison_model(configured: str | None, embedded_by_model: dict[str, int]) -> str | None:
    """The configured model if the session has chunks of it, else the one with most chunks
    (ties: the smallest identity string); None when the session has no embedded chunk."""
    if configured is not None and embedded_by_model.get(configured, 0) > 0:
        return configured
    candidates = [(-count, model) for model, count in embedded_by_model.items() if count > 0]
    return min(candidates)[1] if candidates else None


@dataclass(frozen=True, slots=True)
class Hit:
    """One row of a per-probe lookup: probe number `probe` found `chunk_id`."""

    probe: int
    chunk_id: UUID
    session_id: UUID
    similarity: float


@dataclass(frozen=True, slots=True)
class Match:
    chunk_id: UUID
    similarity: float
    probe: int


@dataclass(frozen=True, slots=True)
class Neighbour:
    session_id: UUID
    score: float
    similarity: float
    matched_chunk_count: int
    matches: tuple[Match, ...]

    @property
    def sort_key(self) -> tuple[float, float, UUID]:
        return (-self.score, -self.similarity, self.session_id)


def rank_neighbours(hits: Iterable[Hit], max_matches: int) -> list[Neighbour]:
    """Group hits by session and order them by score, similarity, then session id."""
    best: dict[UUID, Hit] = {}
    for hit in hits:
        seen = best.get(hit.chunk_id)
        if seen is None or (hit.similarity, -hit.probe) > (seen.similarity, -seen.probe):
            best[hit.chunk_id] = hit
    by_session: dict[UUID, list[Hit]] = {}
    for hit in best.values():
        by_session.setdefault(hit.session_id, []).append(hit)
    neighbours = []
    for session_id, chunk_hits in by_session.items():
        chunk_hits.sort(key=lambda h: (-h.similarity, h.chunk_id))
        top = chunk_hits[0].similarity
        neighbours.append(
            Neighbour(
                session_id=session_id,
                score=top + SIMILAR_BREADTH_WEIGHT * math.log(len(chunk_hits)),
                similarity=top,
                matched_chunk_count=len(chunk_hits),
                matches=tuple(
                    Match(h.chunk_id, h.similarity, h.probe) for h in chunk_hits[:max_matches]
                ),
            )
        )
    neighbours.sort(key=lambda n: n.sort_key)
    return neighbours


def page_after(
    neighbours: Sequence[Neighbour], after: tuple[float, float, UUID] | None, limit: int
) -> tuple[list[Neighbour], bool]:
    """The `limit` neighbours strictly after the cursor's position, and whether more follow."""
    if after is not None:
        start = next((i for i, n in enumerate(neighbours) if n.sort_key > after), len(neighbours))
    else:
        start = 0
    window = list(neighbours[start : start + limit])
    return window, start + limit < len(neighbours)
