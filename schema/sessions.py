"""RuntimeSession, its similarSessions field and what that answers: the sessions ranked
beside it (a type refers to the session it ranks, so they live together)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

import strawberry

from data.sessions import SessionRow
from resolvers.arguments import SimilarArgs
from resolvers.comparison.results import NeighbourResult, SimilarResult
from resolvers.comparison.timeline import TimelineBucket
from resolvers.context import Context
from resolvers.replay import DEFAULT_REPLAY_PAGE, replay_cursor, replay_page
from resolvers.sessions import similar_list, similar_sessions, similar_timeline
from resolvers.turns import TakesTurn
from schema.arguments import ranked_request, with_ranked_arguments
from schema.cost import Granted
from schema.mapping import from_result
from schema.replay import REPLAY_PAGING, ReplayEntry, ReplayPage
from schema.similar import (
    NEAREST,
    Lookup,
    Match,
    RankedAnswer,
    SimilarityBand,
    Timeline,
    answer_fields,
)
from values import credentials


@strawberry.type(description="One recorded agent run of the account.")
class RuntimeSession:
    id: UUID
    title: str
    source_type: str
    source_id: str
    reference: str
    status: str
    started_at: datetime
    last_activity_at: datetime

    @classmethod
    def of(cls, row: SessionRow) -> RuntimeSession:
        shown = credentials.shown
        return from_result(
            cls,
            row,
            title=shown(row.title),
            source_id=shown(row.source_id),
            reference=shown(row.reference),
        )

    @strawberry.field(
        extensions=[TakesTurn()], description=f"The session's activity, in order. {REPLAY_PAGING}"
    )
    async def replay(
        self,
        info: strawberry.Info[Context, None],
        first: int = DEFAULT_REPLAY_PAGE,
        after: str | None = None,
    ) -> list[ReplayEntry] | None:
        rows, _ = await replay_page(info.context, self.id, first, after)
        return [ReplayEntry.of(row) for row in rows]

    @strawberry.field(
        extensions=[TakesTurn()],
        description=f"The replay as pages that say whether more follow. {REPLAY_PAGING}",
    )
    async def replay_page(
        self,
        info: strawberry.Info[Context, None],
        first: int = DEFAULT_REPLAY_PAGE,
        after: str | None = None,
    ) -> ReplayPage | None:
        rows, more = await replay_page(info.context, self.id, first, after)
        return ReplayPage(
            nodes=[ReplayEntry.of(row) for row in rows],
            end_cursor=replay_cursor(info.context, rows[-1]) if rows else None,
            has_next_page=more,
        )

    @strawberry.field(
        extensions=[Granted()],
        description="Other sessions of this account that went the same way; null, with an "
        "error, when refused (BAD_USER_INPUT, or LIMIT_EXCEEDED: more comparisons than one "
        "request may ask for, counted from the query before any runs).",
    )
    @with_ranked_arguments
    async def similar_sessions(
        self, info: strawberry.Info[Context, None], **ranked: Any
    ) -> SimilarSessions | None:
        args, terms = ranked_request(info, ranked, "similarSessions", similar_list(self.id))
        result = await similar_sessions(info.context, self.id, args, terms)
        assert result is not None, "the session was read through the same account"
        return SimilarSessions.of(result)


@strawberry.interface(description="Another session of the account, ranked by its best passage.")
class RankedSession:
    runtime_session_id: UUID
    session_source_type: str
    session_source_id: str
    session_reference: str
    title: str
    session_status: str = strawberry.field(
        description="How the other session ended, or where it is: its status (failed, "
        "completed, running)."
    )
    started_at: datetime
    last_activity_at: datetime
    session: RuntimeSession
    score: float
    similarity: float
    band: SimilarityBand  # type: ignore[valid-type]
    matched_chunk_count: int
    console_link: str = strawberry.field(
        description="The other session in the console, at the turn of its best match when "
        "that match came from a replay turn."
    )


T = TypeVar("T")


def ranked(cls: type[T], n: NeighbourResult, matches: list[Any]) -> T:
    """A ranked session's type: its fields read from the result, its session and matches."""
    return from_result(cls, n, session=RuntimeSession.of(n.session), matches=matches)


@strawberry.type(description="Another session of the account that went the same way.")
class Neighbour(RankedSession):
    matches: list[Match]

    @classmethod
    def of(cls, n: NeighbourResult) -> Neighbour:
        return ranked(cls, n, [Match.of(m) for m in n.matches])


@strawberry.type(description="The sessions most similar to one session, best first.")
class SimilarSessions(RankedAnswer):
    runtime_session_id: UUID
    embedded_chunks: int
    probe_chunks: int
    pending_chunks: int
    results: list[Neighbour]
    nearest: list[Neighbour] = strawberry.field(description=NEAREST)
    lookup: Lookup = strawberry.field(
        description="How its lookups ran: the path, and the probes widened or checked exactly."
    )
    args: strawberry.Private[SimilarArgs]

    @strawberry.field(
        extensions=[Granted(), TakesTurn()],
        description="How often this has happened, counted by bucket; null, with an error, "
        "when refused (LIMIT_EXCEEDED: it counts as a comparison of the request's budget).",
    )
    async def timeline(
        self, info: strawberry.Info[Context, None], bucket: TimelineBucket = TimelineBucket.WEEK
    ) -> Timeline | None:
        result = await similar_timeline(info.context, self.runtime_session_id, self.args, bucket)
        return Timeline.of(result)

    @classmethod
    def of(cls, r: SimilarResult) -> SimilarSessions:
        fields = answer_fields(r, Neighbour.of)
        return from_result(cls, r, lookup=Lookup.of(r.lookup), **fields)
