"""The resolvers: a page of the account's sessions (GraphQL), and the comparison of one
session (the GraphQL field and the REST route both call it)."""

from __future__ import annotations

import contextlib
from uuid import UUID

from data.sessions import SessionRow, SessionSearch, recent_sessions
from resolvers.arguments import SimilarArgs
from resolvers.context import Context
from resolvers.cursors import decode_session_cursor
from resolvers.errors import BadArgument
from resolvers.results import SimilarResult

MAX_PAGE = 100
MAX_SEARCH_CHARS = 200


async def similar_sessions(
    context: Context, session_id: UUID, args: SimilarArgs
) -> SimilarResult | None:
    """The comparison for one session of the caller's account; None when it has no such session."""
    context.budget.spend()
    return await context.similar.load((session_id, args))


def session_search(search: str | None) -> SessionSearch | None:
    """The search asked for, checked; None when there is nothing to search for."""
    if search is None or not search.strip():
        return None
    text = search.strip()
    if len(text) > MAX_SEARCH_CHARS:
        raise BadArgument("search", f"must be at most {MAX_SEARCH_CHARS} characters")
    # PostgreSQL text holds neither NUL nor lone surrogates (which JSON strings may carry).
    if "\x00" in text or not _is_utf8(text):
        raise BadArgument("search", "must be text without NUL characters or lone surrogates")
    ids = []
    for word in text.split():
        with contextlib.suppress(ValueError):
            ids.append(UUID(word))
    return SessionSearch(tuple(ids), text)


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


async def session_page(
    context: Context, first: int, after: str | None, search: str | None = None
) -> tuple[list[SessionRow], bool]:
    """Newest sessions first, keyset-paged by an opaque cursor, optionally searched."""
    if not 1 <= first <= MAX_PAGE:
        raise BadArgument("first", f"must be between 1 and {MAX_PAGE}, got {first}")
    position = None if after is None else decode_session_cursor(after)
    searched = session_search(search)
    async with context.engine.connect() as conn:
        rows = await recent_sessions(conn, context.principal.account_id, first, position, searched)
    for row in rows[:first]:
        context.sessions.prime(row.id, row)
    return rows[:first], len(rows) > first
