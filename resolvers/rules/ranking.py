"""The comparison's pure parts: probe positions, model choice, grouping, order, bands.

Hits in (data/lookups.py's rows), ordered neighbours out. Imports neither SQLAlchemy nor
strawberry.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from operator import attrgetter
from uuid import UUID

from values.lookups import Hit as Hit  # the rows ranking reads, re-exported for its callers

SIMILAR_PROBE_CHUNKS = 8
SIMILAR_NEIGHBOURS_PER_PROBE = 25
MIN_SIMILAR_SIMILARITY = 0.35
SIMILARITY_BAND_CLOSE = 0.70
SIMILARITY_BAND_RELATED = 0.50
SIMILAR_BREADTH_WEIGHT = 0.02
SIMILAR_PREVIEW_CHARS = 280
# The timeline counts among this many nearest passages per probe (comparison/timeline.py).
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
        """The contract's order: score desc, then similarity desc, then session id asc."""
        return (-self.score, -self.similarity, self.session_id)


def rank_neighbours(hits: Iterable[Hit], max_matches: int) -> list[Neighbour]:
    """Group hits by session and order them by score, similarity, then session id. A chunk
    found by several probes counts once, at its best similarity (ties: the lowest probe)."""
    best: dict[UUID, Hit] = {}
    for hit in hits:
        seen = best.get(hit.chunk_id)
        if (
            seen is None
            or hit.similarity > seen.similarity
            or (hit.similarity == seen.similarity and hit.probe < seen.probe)
        ):
            best[hit.chunk_id] = hit
    by_session: dict[UUID, list[Hit]] = {}
    for hit in best.values():
        found = by_session.get(hit.session_id)
        if found is None:
            by_session[hit.session_id] = [hit]
        else:
            found.append(hit)
    neighbours = [
        _neighbour(session_id, found, max_matches) for session_id, found in by_session.items()
    ]
    neighbours.sort(key=attrgetter("sort_key"))
    return neighbours


def _neighbour(session_id: UUID, found: list[Hit], max_matches: int) -> Neighbour:
    if len(found) > 1:
        found.sort(key=_match_order)
    top = found[0].similarity
    return Neighbour(
        session_id,
        top + SIMILAR_BREADTH_WEIGHT * math.log(len(found)),
        top,
        len(found),
        tuple(Match(h.chunk_id, h.similarity, h.probe) for h in found[:max_matches]),
    )


def _match_order(hit: Hit) -> tuple[float, UUID]:
    return (-hit.similarity, hit.chunk_id)


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
