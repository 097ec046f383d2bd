"""A search's legs into one ranked page (pure but for the nearest passages' lookup): each leg
orders the sessions it found by their best passage, the orders are fused by reciprocal rank,
and each session is shown by its passages most similar to the text in the answer's space."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncConnection

from data import comparison as sql
from data.account_snapshot import AccountSnapshot
from data.vector_slots import Space
from resolvers.arguments import SimilarArgs
from resolvers.comparison.legs import Found, LegAnswer, Text
from resolvers.comparison.plans import text_route
from resolvers.rules import ranking
from resolvers.rules.calibration import NO_FLOOR
from resolvers.rules.fusion import Fused, leg_order, reciprocal_rank_fusion
from resolvers.rules.lookup_plan import LookupPlan


def fused(legs: Sequence[LegAnswer]) -> list[Fused]:
    """The sessions the legs found, fused by reciprocal rank."""
    return reciprocal_rank_fusion([leg_order(best_of(leg.found)) for leg in legs])


def fused_page(
    legs: Sequence[LegAnswer], args: SimilarArgs
) -> tuple[list[ranking.Neighbour], bool]:
    """The legs' sessions fused, in the contract's order over (fused score, similarity,
    session id), and the page the arguments ask for, with whether more follow."""
    ran = [leg for leg in legs if leg.ran]
    passages = passages_by_session(found for leg in ran for found in leg.found)
    neighbours = [
        neighbour(f, passages[f.session_id], args.max_matches_per_session) for f in fused(ran)
    ]
    neighbours.sort(key=lambda n: n.sort_key)
    page, more = ranking.page_after(neighbours, args.after, args.limit)
    return page, more


def best_of(found: Iterable[Found]) -> dict[UUID, tuple[float, int]]:
    """Per session, its best passage's score in the leg and how many passages it found."""
    best: dict[UUID, tuple[float, int]] = {}
    for f in found:
        score, count = best.get(f.session_id, (f.score, 0))
        best[f.session_id] = (max(score, f.score), count + 1)
    return best


def passages_by_session(found: Iterable[Found]) -> dict[UUID, dict[UUID, float]]:
    """Per session, each passage any leg found, at its similarity in the answer's space (0
    for a passage without a vector there)."""
    out: dict[UUID, dict[UUID, float]] = {}
    for f in found:
        similarity = f.similarity if f.similarity is not None else 0.0
        chunks = out.setdefault(f.session_id, {})
        chunks[f.chunk_id] = max(similarity, chunks.get(f.chunk_id, similarity))
    return out


def neighbour(fused: Fused, chunks: dict[UUID, float], max_matches: int) -> ranking.Neighbour:
    """A fused session: its fused score, its best similarity, its passages found, and the
    first `max_matches` of them by similarity (ties: chunk id)."""
    order = sorted(chunks.items(), key=lambda kv: (-kv[1], kv[0]))
    matches = tuple(ranking.Match(chunk, sim, 0) for chunk, sim in order[:max_matches])
    top = order[0][1] if order else 0.0
    return ranking.Neighbour(fused.session_id, fused.score, top, len(chunks), matches)


async def nearest_page(
    conn: AsyncConnection,
    text: Text,
    answer: tuple[Space, str],
    nearest: LookupPlan,
    args: SimilarArgs,
    snapshot: AccountSnapshot,
) -> list[ranking.Neighbour]:
    """The sessions of the passages nearest the text in the answer's space, floor or no
    floor, ranked by the contract's rule: offered (loose) when nothing passed."""
    space, vector = answer
    limits = nearest.limits(floor=NO_FLOOR)
    looked = await sql.look_up_text(
        conn,
        text.account_id,
        space.identity,
        vector,
        text.ask,
        limits,
        text_route(nearest, snapshot, space),
        space.slot,
    )
    neighbours = ranking.rank_neighbours(looked.answer.hits, args.max_matches_per_session)
    return neighbours[: args.limit]
