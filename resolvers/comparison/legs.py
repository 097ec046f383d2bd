"""A search's legs, each run in its own space: the lexical leg ranks passages by BM25 over
their words (data/bm25.py), the dense leg by cosine to the text in the dense model's space
(the same lookups as a comparison's probes). Each leg answers the passages it found, with
their similarity to the text in the answer's one space (the published number)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncConnection

from data import bm25
from data import comparison as sql
from data.account_snapshot import AccountSnapshot
from data.lookups import Ask, TextAnswer
from data.vector_slots import Space
from resolvers.comparison.check_costs import CheckCosts, exact_check
from resolvers.comparison.plans import text_route
from resolvers.rules.degraded import in_contract_order
from resolvers.rules.lookup_path import vouches_for
from resolvers.rules.lookup_plan import LookupPlan
from values.lookups import Limits, LookupPath
from values.reasons import Reason

# Passages a search's lexical leg answers, and the candidates it scores at most (rarest terms
# first); a dense leg answers the contract's 25 nearest.
LEXICAL_PASSAGES = 100
LEXICAL_CANDIDATES = 5000


class Leg(StrEnum):
    LEXICAL = "lexical"
    DENSE = "dense"


@dataclass(frozen=True, slots=True)
class Found:
    """A passage a leg found: its score in the leg (BM25, or cosine in the leg's model) and
    its similarity to the text in the answer's space (None: it has no vector there)."""

    chunk_id: UUID
    session_id: UUID
    score: float
    similarity: float | None


@dataclass(frozen=True, slots=True)
class LegAnswer:
    """What one leg did: whether it ran (else the reason codes why not), in which model, with
    which floor, on which lookup path, the passages it found, best first, and how long it
    took (its lookup, and for the dense leg the text's embedding before it)."""

    leg: Leg
    model: str | None
    ran: bool
    found: tuple[Found, ...] = ()
    floor: float | None = None
    path: LookupPath | None = None
    why_not: frozenset[Reason] = frozenset()  # why it did not run
    unverified: bool = False
    elapsed_ms: float = 0.0

    @property
    def reasons(self) -> tuple[Reason, ...]:
        """Why it did not run, in the contract's order (none when it ran)."""
        return () if self.ran else in_contract_order(self.why_not)


@dataclass(frozen=True, slots=True)
class Text:
    """The text searched for: its account, words, ask (window, filters), and its vector in
    the answer's space when it has one."""

    account_id: UUID
    words: str
    ask: Ask
    answer: tuple[Space, str] | None


async def lexical_leg(conn: AsyncConnection, text: Text) -> LegAnswer:
    """The account's passages richest in the text's words, by BM25 (no floor: a passage
    sharing no word with the text is not found)."""
    scored = await bm25.ranked_passages(
        conn,
        text.account_id,
        text.words,
        text.ask,
        LEXICAL_PASSAGES,
        LEXICAL_CANDIDATES,
        text.answer,
    )
    found = tuple(Found(s.chunk_id, s.session_id, s.score, s.similarity) for s in scored)
    return LegAnswer(Leg.LEXICAL, None, True, found)


async def dense_leg(
    conn: AsyncConnection,
    text: Text,
    space: Space,
    vector: str,
    floor: float,
    plan: LookupPlan,
    checks: CheckCosts,
    snapshot: AccountSnapshot,
) -> LegAnswer:
    """The passages nearest the text's vector in the dense model's space, at or above the
    model's floor for a text, as the search's plan says; an approximate lookup that cannot
    vouch for its answer is checked by an exact pass, as a comparison's probes are."""
    limits = plan.limits(floor=floor)
    looked = await sql.look_up_text(
        conn,
        text.account_id,
        space.identity,
        vector,
        text.ask,
        limits,
        text_route(plan, snapshot, space),
        space.slot,
    )
    unverified = False
    if looked.path.path.approximate and not vouches_for(
        looked.answer.window, limits.window, limits.per_probe
    ):
        exact = await _checked(conn, text, space, vector, limits, plan, checks, snapshot)
        unverified = exact is None
        # the path reported stays the one the lookup took
        looked = looked if exact is None else TextAnswer(looked.path, exact.answer)
    same = text.answer is not None and text.answer[0] == space
    found = tuple(
        Found(h.chunk_id, h.session_id, h.similarity, h.similarity if same else None)
        for h in looked.answer.hits
    )
    model = str(space.identity)
    return LegAnswer(Leg.DENSE, model, True, found, floor, looked.path.path, unverified=unverified)


async def _checked(
    conn: AsyncConnection,
    text: Text,
    space: Space,
    vector: str,
    limits: Limits,
    plan: LookupPlan,
    checks: CheckCosts,
    snapshot: AccountSnapshot,
) -> TextAnswer | None:
    """The text's lookup by an exact pass within the plan's check budget; None past it, or
    when the account's last checks predict it would run past it."""
    budget_ms = plan.check_budget_ms
    if budget_ms <= 0:
        return None

    exactly = text_route(plan.checked(), snapshot, space)

    async def look() -> TextAnswer:
        return await sql.look_up_text(
            conn, text.account_id, space.identity, vector, text.ask, limits, exactly, space.slot
        )

    return await exact_check(conn, checks, text.account_id, 1, budget_ms, look)
