"""Thin resolvers shared by the GraphQL schema and the REST route."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from uuid import UUID

from strawberry.types.nodes import FragmentSpread, InlineFragment, SelectedField, Selection

from data.sessions import SessionRow, recent_sessions
from resolvers.arguments import BadArgument, SimilarArgs
from resolvers.context import Context
from resolvers.similar import SimilarResult

MAX_PAGE = 100


async def similar_sessions(
    context: Context, session_id: UUID, args: SimilarArgs
) -> SimilarResult | None:
    """The comparison for one session of the caller's account; None when it has no such session."""
    context.budget.spend()
    return await context.similar.load((session_id, args))


async def session_page(
    context: Context, first: int, after: str | None
) -> tuple[list[SessionRow], bool]:
    """Newest sessions first, keyset-paged by an opaque cursor."""
    if not 1 <= first <= MAX_PAGE:
        raise BadArgument("first", f"must be between 1 and {MAX_PAGE}, got {first}")
    position = None if after is None else decode_session_cursor(after)
    async with context.engine.connect() as conn:
        rows = await recent_sessions(conn, context.principal.account_id, first, position)
    for row in rows[:first]:
        context.sessions.prime(row.id, row)
    return rows[:first], len(rows) > first


def session_cursor(row: SessionRow) -> str:
    return f"{row.started_at.isoformat()}|{row.id}"


def decode_session_cursor(cursor: str) -> tuple[datetime, UUID]:
    try:
        started, session_id = cursor.split("|", 1)
        return datetime.fromisoformat(started), UUID(session_id)
    except ValueError:
        raise BadArgument("after", "is not a cursor this endpoint handed out") from None


def selects(selections: Iterable[Selection], *path: str) -> bool:
    """Whether the selection set asks for the field at `path` (through any fragment)."""
    if not path:
        return True
    for selection in selections:
        if isinstance(selection, FragmentSpread | InlineFragment):
            rest: tuple[str, ...] = path
        elif isinstance(selection, SelectedField) and selection.name == path[0]:
            rest = path[1:]
        else:
            continue
        if selects(selection.selections, *rest):
            return True
    return False
