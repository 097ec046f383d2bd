"""A session's replay, read a page at a time: bounds, the signed cursor, and the page."""

from __future__ import annotations

from uuid import UUID

from data.sessions import ActivityRow, ReplayPageKey, ReplayTurn
from resolvers.context import Context
from resolvers.errors import BadArgument

DEFAULT_REPLAY_PAGE = 100
MAX_REPLAY_PAGE = 500


def replay_key(context: Context, session_id: UUID, first: int, after: str | None) -> ReplayPageKey:
    """The page asked for, checked: `first` within 1..MAX_REPLAY_PAGE, `after` a cursor this
    deployment handed out for this session's replay."""
    if not 1 <= first <= MAX_REPLAY_PAGE:
        raise BadArgument("first", f"must be between 1 and {MAX_REPLAY_PAGE}, got {first}")
    position = None if after is None else context.cursors.open_replay(after, session_id)
    return ReplayPageKey(session_id, first, position)


def replay_cursor(context: Context, row: ActivityRow) -> str:
    """Where a page that follows this turn starts, sealed for its session's replay."""
    return context.cursors.replay(row.runtime_session_id, (row.ordinal, row.id))


async def replay_page(
    context: Context, session_id: UUID, first: int, after: str | None
) -> tuple[list[ReplayTurn], bool]:
    """The turns of one page, and whether more follow it."""
    key = replay_key(context, session_id, first, after)
    rows = await context.loaders.replays.load(key)
    return rows[:first], len(rows) > first
