"""RuntimeSession, its replay, and its similarSessions field."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import strawberry

from data.sessions import ReplayTurn, SessionRow
from indexer import credentials
from resolvers.context import Context
from resolvers.replay import DEFAULT_REPLAY_PAGE, MAX_REPLAY_PAGE, replay_cursor, replay_page
from resolvers.sessions import similar_list, similar_sessions
from resolvers.turns import TakesTurn
from schema.arguments import ranked_args, with_ranked_arguments
from schema.comparison_budget import require_granted
from schema.mapping import from_result
from schema.selection import selects_passage_text, selects_shared_terms
from schema.similar import SimilarSessions


@strawberry.type(description="One step of a session's replay.")
class ReplayEntry:
    id: UUID
    ordinal: int
    occurred_at: datetime
    role: str
    kind: str
    api_usage_id: UUID | None
    row: strawberry.Private[ReplayTurn]
    shown: strawberry.Private[str | None] = None  # decided once, by content or contentTruncated

    @classmethod
    def of(cls, row: ReplayTurn) -> ReplayEntry:
        return from_result(cls, row, row=row, shown=None)

    @strawberry.field(
        description="Pass as `after` to read the turns that follow this one (in this session's "
        "replay only)."
    )
    def cursor(self, info: strawberry.Info[Context, None]) -> str:
        return replay_cursor(info.context, self.row)

    def _shown(self, info: strawberry.Info[Context, None]) -> str:
        if self.shown is None:
            self.shown = info.context.content.take(self._whole())
        return self.shown

    def _whole(self) -> str:
        """The turn's text as the account is shown it (its credentials masked unless it
        shows them)."""
        return credentials.shown(self.row.content)

    @strawberry.field(
        description="The turn's text; cut when the request's replay content budget "
        "(SIMILAR_SESSIONS_REPLAY_CONTENT_CHARS read, and as many returned, across all its "
        "aliases and sessions) ran out."
    )
    def content(self, info: strawberry.Info[Context, None]) -> str:
        return self._shown(info)

    @strawberry.field(description="True when `content` was cut by the request's content budget.")
    def content_truncated(self, info: strawberry.Info[Context, None]) -> bool:
        read_whole = len(self.row.content) >= self.row.content_chars
        return not read_whole or len(self._shown(info)) < len(self._whole())


@strawberry.type(description="One page of a session's replay, in order.")
class ReplayPage:
    nodes: list[ReplayEntry]
    end_cursor: str | None = strawberry.field(
        description="Pass as `after` for the next page; null when the page is empty."
    )
    has_next_page: bool


_REPLAY_PAGING = (
    f"At most `first` turns ({DEFAULT_REPLAY_PAGE} by default, {MAX_REPLAY_PAGE} at most) "
    "after the cursor `after` (one of this session's replay cursors). Null, with an error, "
    "when refused (BAD_USER_INPUT naming `first` or `after`); the rest of the query keeps its "
    "data. A query whose replay fields could read more than SIMILAR_SESSIONS_REPLAY_TURNS "
    "turns together (each its `first` times the sessions it can run for) is refused before "
    "it runs (LIMIT_EXCEEDED)."
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
        return from_result(cls, row, title=credentials.shown(row.title))

    @strawberry.field(
        extensions=[TakesTurn()], description=f"The session's activity, in order. {_REPLAY_PAGING}"
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
        description=f"The replay as pages that say whether more follow. {_REPLAY_PAGING}",
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
        description="Other sessions of this account that went the same way; null, with an "
        "error, when refused (BAD_USER_INPUT, or LIMIT_EXCEEDED: more comparisons than one "
        "request may ask for, counted from the query before any runs).",
    )
    @with_ranked_arguments
    async def similar_sessions(
        self, info: strawberry.Info[Context, None], **ranked: Any
    ) -> SimilarSessions | None:
        require_granted(info)
        terms = selects_shared_terms(info.selected_fields, "similarSessions")
        selected = terms or selects_passage_text(info.selected_fields, "similarSessions")
        args = ranked_args(info, ranked, similar_list(self.id), selected)
        result = await similar_sessions(info.context, self.id, args, terms)
        assert result is not None, "the session was read through the same account"
        return SimilarSessions.of(result, RuntimeSession.of)
