"""The resolvers: a page of the account's sessions (GraphQL), and the comparison of one
session (the GraphQL field and the REST route both call it)."""

from __future__ import annotations

import contextlib
from uuid import UUID

from data.sessions import SessionRow, SessionSearch, recent_sessions
from resolvers import search
from resolvers.arguments import SimilarArgs, plain_text
from resolvers.context import Context
from resolvers.cursors import decode_session_cursor
from resolvers.errors import BadArgument
from resolvers.results import SearchResult, SimilarResult
from resolvers.timeline import TimelineBucket, TimelineResult

MAX_PAGE = 100
MAX_SEARCH_CHARS = 200


async def similar_sessions(
    context: Context, session_id: UUID, args: SimilarArgs
) -> SimilarResult | None:
    """The comparison for one session of the caller's account; None when it has no such session."""
    context.budget.spend()
    return await context.similar.load((session_id, args))


async def similar_timeline(
    context: Context, session_id: UUID, args: SimilarArgs, bucket: TimelineBucket
) -> TimelineResult:
    """How many sessions matched the comparison's session, by bucket (counted as a
    comparison of the request's budget)."""
    context.budget.spend()
    result = await context.timelines.load((session_id, args, bucket))
    assert result is not None, "asked only of a session the comparison found"
    return result


async def search_sessions(context: Context, text: str, args: SimilarArgs) -> SearchResult:
    """The account's sessions nearest a described text (GraphQL and REST both call it)."""
    context.budget.spend()
    return await search.search_sessions(context, text, args)


def session_search(search: str | None) -> SessionSearch | None:
    """The search asked for, checked; None when there is nothing to search for."""
    if search is None or not search.strip():
        return None
    text = plain_text(search, "search", MAX_SEARCH_CHARS)
    ids = []
    for word in text.split():
        with contextlib.suppress(ValueError):
            ids.append(UUID(word))
    return SessionSearch(tuple(ids), text)


async def session_page(
    context: Context, first: int, after: str | None, search: str | None = None
) -> tuple[list[SessionRow], bool]:
    """Newest sessions first, keyset-paged by an opaque cursor, optionally searched."""
    if not 1 <= first <= MAX_PAGE:
        raise BadArgument("first", f"must be between 1 and {MAX_PAGE}, got {first}")
    position = None if after is None else decode_session_cursor(after)
    searched = session_search(search)
    async with context.services.engine.connect() as conn:
        rows = await recent_sessions(conn, context.principal.account_id, first, position, searched)
    for row in rows[:first]:
        context.sessions.prime(row.id, row)
    return rows[:first], len(rows) > first
