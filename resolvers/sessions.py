"""The resolvers: a page of the account's sessions (GraphQL), and the comparison of one
session (the GraphQL field and the REST route both call it)."""

from __future__ import annotations

from dataclasses import replace
from uuid import UUID

from data.sessions import SessionRow, recent_sessions
from resolvers.arguments import SimilarArgs
from resolvers.context import Context
from resolvers.errors import BadArgument
from resolvers.results import SimilarResult

MAX_PAGE = 100


async def similar_sessions(
    context: Context, session_id: UUID, args: SimilarArgs
) -> SimilarResult | None:
    """The comparison for one session of the caller's account; None when it has no such session.
    Its end cursor is sealed for this session's list with these arguments."""
    result = await context.similar.load((session_id, args))
    if result is None or result.next_after is None:
        return result
    cursor = context.cursors.neighbours(
        result.next_after, session_id, args.window_days, args.max_matches_per_session
    )
    return replace(result, end_cursor=cursor)


async def session_page(
    context: Context, first: int, after: str | None
) -> tuple[list[SessionRow], bool]:
    """Newest sessions first, keyset-paged by an opaque cursor."""
    if not 1 <= first <= MAX_PAGE:
        raise BadArgument("first", f"must be between 1 and {MAX_PAGE}, got {first}")
    account_id = context.principal.account_id
    position = None if after is None else context.cursors.open_sessions(after, account_id)
    async with context.engine.connect() as conn:
        rows = await recent_sessions(conn, account_id, first, position)
    for row in rows[:first]:
        context.sessions.prime(row.id, row)
    return rows[:first], len(rows) > first
