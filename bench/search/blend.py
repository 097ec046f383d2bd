"""The fusion measured beside the product's reciprocal rank: a weighted blend of each leg's
scores, normalised within the leg, computed here from the legs a search answered (the
product fuses by rank alone, resolvers/rules/fusion.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from uuid import UUID

from resolvers.comparison.legs import Leg, LegAnswer
from resolvers.comparison.searched import best_of
from resolvers.rules.fusion import Fused

BLEND_LEXICAL_WEIGHT = 0.5  # the blend's share of the lexical leg


def weighted_blend(legs: Sequence[Mapping[UUID, float]], weights: Sequence[float]) -> list[Fused]:
    """Each session's weighted sum of its leg scores, each leg's scores divided by the leg's
    best (a session a leg did not find scores 0 there), best first (ties: session id)."""
    ranks: dict[UUID, list[int | None]] = {}
    totals: dict[UUID, float] = {}
    for n, (scores, weight) in enumerate(zip(legs, weights, strict=True)):
        top = max(scores.values(), default=0.0)
        for rank, session_id in enumerate(sorted(scores, key=lambda s: (-scores[s], s)), 1):
            ranks.setdefault(session_id, [None] * len(legs))[n] = rank
            share = scores[session_id] / top if top > 0 else 0.0
            totals[session_id] = totals.get(session_id, 0.0) + weight * share
    fused = [Fused(s, totals[s], tuple(ranks[s])) for s in totals]
    fused.sort(key=lambda f: (-f.score, f.session_id))
    return fused


def blended_order(legs: Sequence[LegAnswer]) -> list[UUID]:
    """The sessions the legs that ran found, by the weighted blend of their best passage's
    score in each leg."""
    ran = [leg for leg in legs if leg.ran]
    weights = [
        BLEND_LEXICAL_WEIGHT if leg.leg is Leg.LEXICAL else 1 - BLEND_LEXICAL_WEIGHT for leg in ran
    ]
    scores = [{s: v[0] for s, v in best_of(leg.found).items()} for leg in ran]
    return [f.session_id for f in weighted_blend(scores, weights)]
