"""A session's replay: its turns as the API shows them, and a page of them."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import strawberry

from data.sessions import ReplayTurn
from resolvers.context import Context
from resolvers.replay import DEFAULT_REPLAY_PAGE, MAX_REPLAY_PAGE, replay_cursor
from schema.mapping import from_result
from values import credentials


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
    whole: strawberry.Private[str | None] = None  # the turn's text as the account is shown it

    @classmethod
    def of(cls, row: ReplayTurn) -> ReplayEntry:
        return from_result(cls, row, row=row, shown=None, whole=None)

    @strawberry.field(
        description="Pass as `after` to read the turns that follow this one (in this session's "
        "replay only)."
    )
    def cursor(self, info: strawberry.Info[Context, None]) -> str:
        return replay_cursor(info.context, self.row)

    async def _shown(self, info: strawberry.Info[Context, None]) -> str:
        whole = await self._whole()
        if self.shown is None:  # no await between the test and the take: taken once
            self.shown = info.context.content.take(whole)
        return self.shown

    async def _whole(self) -> str:
        """The turn's text as the account is shown it (its credentials masked unless it
        shows them; a long text masked off the event loop)."""
        if self.whole is None:
            self.whole = await credentials.shown_off_loop(self.row.content)
        return self.whole

    @strawberry.field(
        description="The turn's text; cut when the request's replay content budget "
        "(SIMILAR_SESSIONS_REPLAY_CONTENT_CHARS read, and as many returned, across all its "
        "aliases and sessions) ran out."
    )
    async def content(self, info: strawberry.Info[Context, None]) -> str:
        return await self._shown(info)

    @strawberry.field(description="True when `content` was cut by the request's content budget.")
    async def content_truncated(self, info: strawberry.Info[Context, None]) -> bool:
        read_whole = len(self.row.content) >= self.row.content_chars
        return not read_whole or len(await self._shown(info)) < len(await self._whole())


@strawberry.type(description="One page of a session's replay, in order.")
class ReplayPage:
    nodes: list[ReplayEntry]
    end_cursor: str | None = strawberry.field(
        description="Pass as `after` for the next page; null when the page is empty."
    )
    has_next_page: bool


REPLAY_PAGING = (
    f"At most `first` turns ({DEFAULT_REPLAY_PAGE} by default, {MAX_REPLAY_PAGE} at most) "
    "after the cursor `after` (one of this session's replay cursors). Null, with an error, "
    "when refused (BAD_USER_INPUT naming `first` or `after`); the rest of the query keeps its "
    "data. A query whose replay fields could read more than SIMILAR_SESSIONS_REPLAY_TURNS "
    "turns together (each its `first` times the sessions it can run for) is refused before "
    "it runs (LIMIT_EXCEEDED)."
)
