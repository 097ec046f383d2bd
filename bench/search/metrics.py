"""Figures of a search by description, from rankings and relevant sets: hit@5, P@5, MRR@10
and empty answers. Relevant sessions are those of the description's task."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

HIT_AT = 5
PRECISION_AT = 5
RANK_AT = 10


@dataclass(frozen=True, slots=True)
class Figures:
    queries: int
    hit_at_5: float
    precision_at_5: float
    mrr_at_10: float
    empty: int  # descriptions answered with no session at all


def hit(ranked: Sequence[str], relevant: Collection[str], k: int = HIT_AT) -> float:
    """1 when any relevant session is among the first k, else 0."""
    return float(any(name in relevant for name in ranked[:k]))


def precision(ranked: Sequence[str], relevant: Collection[str], k: int = PRECISION_AT) -> float:
    """Relevant sessions among the first k, over k (a shorter answer counts its gaps as misses)."""
    return sum(name in relevant for name in ranked[:k]) / k


def reciprocal_rank(ranked: Sequence[str], relevant: Collection[str], k: int = RANK_AT) -> float:
    """1 / the position of the first relevant session within the first k, else 0."""
    return next((1 / (i + 1) for i, name in enumerate(ranked[:k]) if name in relevant), 0.0)


def figures(
    rankings: Mapping[str, Sequence[str]], relevant: Mapping[str, Collection[str]]
) -> Figures:
    """Means over the descriptions of `relevant`; each must have a ranking (possibly empty)."""
    missing = [query for query in relevant if query not in rankings]
    if missing:
        raise ValueError(f"{len(missing)} description(s) have no ranking, e.g. {missing[0]!r}")
    if not relevant:
        raise ValueError("no descriptions to measure")
    count = len(relevant)
    pairs = [(rankings[query], wanted) for query, wanted in relevant.items()]
    return Figures(
        queries=count,
        hit_at_5=sum(hit(r, w) for r, w in pairs) / count,
        precision_at_5=sum(precision(r, w) for r, w in pairs) / count,
        mrr_at_10=sum(reciprocal_rank(r, w) for r, w in pairs) / count,
        empty=sum(not r for r, _ in pairs),
    )
