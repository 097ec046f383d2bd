"""Reads of runtime sessions and their replay, always scoped to one account."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from data import tables as t


@dataclass(frozen=True, slots=True)
class SessionRow:
    id: UUID
    title: str
    source_type: str
    source_id: str
    reference: str
    status: str
    started_at: datetime
    last_activity_at: datetime


@dataclass(frozen=True, slots=True)
class ActivityRow:
    id: UUID
    runtime_session_id: UUID
    ordinal: int
    occurred_at: datetime
    role: str
    kind: str
    content: str
    api_usage_id: UUID | None


_SESSION_COLUMNS = [getattr(t.runtime_sessions.c, f) for f in SessionRow.__slots__]
_ACTIVITY_COLUMNS = [getattr(t.runtime_session_activity.c, f) for f in ActivityRow.__slots__]


async def sessions_by_id(
    conn: AsyncConnection, account_id: UUID, ids: Sequence[UUID]
) -> dict[UUID, SessionRow]:
    if not ids:
        return {}
    rows = await conn.execute(
        sa.select(*_SESSION_COLUMNS).where(
            t.runtime_sessions.c.account_id == account_id,
            t.runtime_sessions.c.id.in_(list(set(ids))),
        )
    )
    return {row.id: SessionRow(*row) for row in rows}


async def recent_sessions(
    conn: AsyncConnection, account_id: UUID, first: int, after: tuple[datetime, UUID] | None
) -> list[SessionRow]:
    """Newest first (started_at desc, id desc), keyset-paged; one more row than asked."""
    s = t.runtime_sessions.c
    query = sa.select(*_SESSION_COLUMNS).where(s.account_id == account_id)
    if after is not None:
        query = query.where(sa.tuple_(s.started_at, s.id) < sa.tuple_(*after))
    rows = await conn.execute(query.order_by(s.started_at.desc(), s.id.desc()).limit(first + 1))
    return [SessionRow(*row) for row in rows]


async def activity_by_session(
    conn: AsyncConnection, account_id: UUID, session_ids: Sequence[UUID]
) -> dict[UUID, list[ActivityRow]]:
    a = t.runtime_session_activity.c
    rows = await conn.execute(
        sa.select(*_ACTIVITY_COLUMNS)
        .where(a.account_id == account_id, a.runtime_session_id.in_(list(set(session_ids))))
        .order_by(a.runtime_session_id, a.ordinal, a.id)
    )
    grouped: dict[UUID, list[ActivityRow]] = {sid: [] for sid in session_ids}
    for row in rows:
        grouped[row.runtime_session_id].append(ActivityRow(*row))
    return grouped
