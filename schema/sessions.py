"""RuntimeSession, its replay, and its similarSessions field."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import strawberry

from data.sessions import ActivityRow, SessionRow
from resolvers.arguments import BadArgument, SimilarArgs
from resolvers.context import Context, LimitExceeded
from resolvers.fields import selects, similar_sessions
from schema.errors import bad_user_input, limit_exceeded
from schema.similar import SimilarSessions

_GRAPHQL_NAMES = {
    "limit": "limit",
    "max_matches_per_session": "maxMatchesPerSession",
    "window_days": "windowDays",
    "cursor": "after",
}


@strawberry.type(description="One step of a session's replay.")
class ReplayEntry:
    id: UUID
    ordinal: int
    occurred_at: datetime
    role: str
    kind: str
    content: str
    api_usage_id: UUID | None

    @classmethod
    def of(cls, row: ActivityRow) -> ReplayEntry:
        return cls(
            id=row.id,
            ordinal=row.ordinal,
            occurred_at=row.occurred_at,
            role=row.role,
            kind=row.kind,
            content=row.content,
            api_usage_id=row.api_usage_id,
        )


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
        return cls(
            id=row.id,
            title=row.title,
            source_type=row.source_type,
            source_id=row.source_id,
            reference=row.reference,
            status=row.status,
            started_at=row.started_at,
            last_activity_at=row.last_activity_at,
        )

    @strawberry.field(description="The session's activity, in order.")
    async def replay(self, info: strawberry.Info[Context, None]) -> list[ReplayEntry]:
        return [ReplayEntry.of(row) for row in await info.context.replays.load(self.id)]

    @strawberry.field(description="Other sessions of this account that went the same way.")
    async def similar_sessions(
        self,
        info: strawberry.Info[Context, None],
        limit: int = 5,
        max_matches_per_session: int = 2,
        window_days: int | None = None,
        include_match_text: bool = True,
        after: str | None = None,
    ) -> SimilarSessions:
        try:
            args = SimilarArgs.checked(
                limit=limit,
                max_matches_per_session=max_matches_per_session,
                window_days=window_days,
                # No passage text is read when no client selected it.
                include_match_text=include_match_text
                and selects(info.selected_fields, "similarSessions", "results", "matches", "text"),
                cursor=after,
                names=_GRAPHQL_NAMES,
            )
        except BadArgument as exc:
            raise bad_user_input(exc) from None
        try:
            result = await similar_sessions(info.context, self.id, args)
        except LimitExceeded as exc:
            raise limit_exceeded(exc) from None
        assert result is not None, "the session was read through the same account"
        return SimilarSessions.of(result)
