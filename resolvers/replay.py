"""A session's replay, read a page at a time: bounds, the opaque cursor, and the page."""

from __future__ import annotations

import base64
import binascii
import json
from uuid import UUID

from data.sessions import ActivityRow, ReplayPageKey, ReplayPosition
from resolvers.context import Context
from resolvers.cursors import NOT_OURS
from resolvers.errors import BadArgument

DEFAULT_REPLAY_PAGE = 100
MAX_REPLAY_PAGE = 500


def replay_cursor(row: ActivityRow) -> str:
    """Where a page that follows this turn starts."""
    raw = json.dumps([row.ordinal, str(row.id)])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_replay_cursor(cursor: str, name: str = "after") -> ReplayPosition:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        ordinal, activity_id = json.loads(raw)
        if not isinstance(ordinal, int) or isinstance(ordinal, bool) or not 0 <= ordinal < 2**31:
            raise ValueError(ordinal)
        return ordinal, UUID(str(activity_id))
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        raise BadArgument(name, NOT_OURS) from None


def replay_key(session_id: UUID, first: int, after: str | None) -> ReplayPageKey:
    """The page asked for, checked: `first` within 1..MAX_REPLAY_PAGE, `after` ours."""
    if not 1 <= first <= MAX_REPLAY_PAGE:
        raise BadArgument("first", f"must be between 1 and {MAX_REPLAY_PAGE}, got {first}")
    position = None if after is None else decode_replay_cursor(after)
    return ReplayPageKey(session_id, first, position)


async def replay_page(
    context: Context, session_id: UUID, first: int, after: str | None
) -> tuple[list[ActivityRow], bool]:
    """The turns of one page, and whether more follow it."""
    key = replay_key(session_id, first, after)
    rows = await context.loaders.replays.load(key)
    return rows[:first], len(rows) > first
