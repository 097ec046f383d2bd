"""Why two passages match (`sharedTerms`): for every pair a request shows, in one batch (a
per-request DataLoader), the terms that carry most of their similarity under the account's
fitted lexical model, however the pair was found. The fit is read once per process and fit,
the passages' whole texts in one statement; the selection is pure
(resolvers/rules/shared_terms.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from uuid import UUID

from data.passages import clear_texts
from indexer.lexical import LexicalEmbedder
from indexer.query import account_fit
from resolvers.comparison.results import MatchResult, NeighbourResult
from resolvers.rules.shared_terms import shared_terms
from resolvers.services import Services

# A pair: one side (a passage's id, or a search text) and the other passage's id.
TermsKey = tuple[UUID | str, UUID]


@dataclass(frozen=True, slots=True)
class Terms:
    """A pair's terms (None: one of its passages is no longer clear), and the fitted lexical
    model they were chosen with (None: the account has no fit, and they are empty)."""

    terms: tuple[str, ...] | None
    model: str | None


async def terms_for(services: Services, account_id: UUID, keys: Sequence[TermsKey]) -> list[Terms]:
    """One Terms per pair, in key order: the account's fit and the passages read once."""
    fit = await account_fit(services.engine, services.embedders, account_id)
    if fit is None:
        return [Terms((), None) for _ in keys]
    ids = {side for key in keys for side in key if isinstance(side, UUID)}
    async with services.read() as conn:
        read = await clear_texts(conn, account_id, sorted(ids))
    texts: dict[UUID | str, str] = dict(read.items())
    # Tokenising is CPU work: off the event loop.
    return await asyncio.to_thread(_chosen, fit, keys, texts)


def _chosen(
    fit: LexicalEmbedder, keys: Sequence[TermsKey], texts: dict[UUID | str, str]
) -> list[Terms]:
    weighted: dict[UUID | str, dict[str, float]] = {}

    def of(side: UUID | str) -> dict[str, float] | None:
        text = side if isinstance(side, str) else texts.get(side)
        if text is None:
            return None
        if side not in weighted:
            weighted[side] = fit.weighted(text)
        return weighted[side]

    out = []
    model = str(fit.identity)
    for one, other in keys:
        a, b = of(one), of(other)
        out.append(Terms(None if a is None or b is None else shared_terms(a, b), model))
    return out


def pairs_of(neighbours: Sequence[NeighbourResult], text: str | None = None) -> list[TermsKey]:
    """The pairs of the neighbours' shown matches, in order: each match with its probe (or,
    for a search, with the searched text)."""
    keys: list[TermsKey] = []
    for n in neighbours:
        for m in n.matches:
            one: UUID | str = m.probe.document_id if m.probe is not None else (text or "")
            keys.append((one, m.document_id))
    return keys


def with_terms(
    neighbours: Sequence[NeighbourResult], answers: Sequence[Terms]
) -> tuple[tuple[NeighbourResult, ...], str | None]:
    """The neighbours with each match's terms (answers in `pairs_of` order), and the fitted
    model they were chosen with (None: the account has no fit, or no match was shown)."""
    given = iter(answers)
    filled = []
    for n in neighbours:
        filled.append(replace(n, matches=tuple(_shown(m, next(given)) for m in n.matches)))
    return tuple(filled), next((a.model for a in answers if a.model is not None), None)


def _shown(m: MatchResult, answer: Terms) -> MatchResult:
    """A match's terms when both its texts are shown (a passage withheld shows none)."""
    hidden = m.text is None or (m.probe is not None and m.probe.text is None)
    return replace(m, shared_terms=None if hidden else answer.terms)
