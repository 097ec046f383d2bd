"""How a search's legs become one list: each leg ranks the account's sessions in its own
space (the lexical leg by BM25, the dense leg by cosine in its model), and their ranks are
fused, never their scores across models (the design document's rule: no distance across
models), by reciprocal-rank fusion (Cormack, Clarke and Buettcher, 2009). A weighted blend of
each leg's scores is measured beside it, by the benchmark's own code (bench/search/blend.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from uuid import UUID

RRF_K = 60  # the paper's constant; the rank of a session in a leg counts from 1


@dataclass(frozen=True, slots=True)
class Fused:
    """A session's place in the fused list: its fused score and its rank in each leg (None
    where that leg did not find it)."""

    session_id: UUID
    score: float
    ranks: tuple[int | None, ...]


def leg_order(best: Mapping[UUID, tuple[float, int]]) -> list[UUID]:
    """A leg's sessions best first, from each one's (best passage score, passages found):
    score desc, then passages desc, then session id."""
    return sorted(best, key=lambda s: (-best[s][0], -best[s][1], s))


def reciprocal_rank_fusion(
    legs: Sequence[Sequence[UUID]], k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[Fused]:
    """Each session's sum over the legs that found it of weight / (k + rank), best first
    (ties: the better best rank, then session id)."""
    weights = weights or [1.0] * len(legs)
    ranks: dict[UUID, list[int | None]] = {}
    for n, order in enumerate(legs):
        for rank, session_id in enumerate(order, start=1):
            ranks.setdefault(session_id, [None] * len(legs))[n] = rank
    fused = [
        Fused(s, sum(w / (k + r) for w, r in zip(weights, leg, strict=True) if r), tuple(leg))
        for s, leg in ranks.items()
    ]
    fused.sort(key=lambda f: (-f.score, min(r for r in f.ranks if r), f.session_id))
    return fused
