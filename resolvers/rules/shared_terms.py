"""Why two passages match, in words: the terms that carry most of their similarity under the
account's fitted lexical model, whatever model found the pair; and a group's terms, those
most of its members' pairs name. Weighted features in (indexer/lexical.py's `weighted`),
terms out; pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

SHARED_TERMS_MAX = 5  # terms shown for a pair, and for a group
# A pair's terms are the fewest, heaviest first, that carry this share of the similarity its
# shared features make.
SHARED_TERMS_SHARE = 0.8


def shared_terms(
    a: Mapping[str, float],
    b: Mapping[str, float],
    most: int = SHARED_TERMS_MAX,
    share: float = SHARED_TERMS_SHARE,
) -> tuple[str, ...]:
    """The features both texts weigh, by their part of the pair's dot product (a[t] * b[t])
    desc, ties by term: as few as carry `share` of it, at most `most`; none when the texts
    share no weighed feature."""
    parts = sorted(
        ((a[t] * b[t], t) for t in a.keys() & b.keys() if a[t] > 0 and b[t] > 0),
        key=lambda part: (-part[0], part[1]),
    )
    total = sum(part for part, _ in parts)
    chosen: list[str] = []
    carried = 0.0
    for part, term in parts:
        if len(chosen) == most or carried >= share * total:
            break
        chosen.append(term)
        carried += part
    return tuple(chosen)


def group_terms(members: Sequence[Sequence[str]], most: int = SHARED_TERMS_MAX) -> tuple[str, ...]:
    """The terms named by at least half of the members (each member's terms, heaviest first:
    those of the pair that ties it to the group), by how many members name them desc, then by
    how early they name them (the sum of their places), then by term."""
    named: dict[str, list[int]] = {}
    for terms in members:
        for place, term in enumerate(dict.fromkeys(terms)):
            named.setdefault(term, []).append(place)
    common = [
        (-len(places), sum(places), term)
        for term, places in named.items()
        if 2 * len(places) >= len(members)
    ]
    return tuple(term for *_, term in sorted(common)[:most])
