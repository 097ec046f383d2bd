"""Reads of runtime sessions and their replay, always scoped to one account."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import UUID as PG_UUID
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


@dataclass(frozen=True, slots=True)
class TitleSearch:
    """Sessions whose id is one of `ids`, or whose title or source id contains `text`."""

    ids: tuple[UUID, ...]
    text: str


def _contains(text: str) -> str:
    """An ILIKE pattern matching `text` literally anywhere (its wildcards escaped)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


async def recent_sessions(
    conn: AsyncConnection,
    account_id: UUID,
    first: int,
    after: tuple[datetime, UUID] | None,
    search: TitleSearch | None = None,
) -> list[SessionRow]:
    """Newest first (started_at desc, id desc), keyset-paged; one more row than asked."""
    s = t.runtime_sessions.c
    query = sa.select(*_SESSION_COLUMNS).where(s.account_id == account_id)
    if search is not None:
        pattern = _contains(search.text)
        ids = sa.bindparam("ids", list(search.ids), type_=ARRAY(PG_UUID(as_uuid=True)))
        query = query.where(
            sa.or_(
                s.id == sa.any_(ids),
                s.title.ilike(pattern, escape="\\"),
                s.source_id.ilike(pattern, escape="\\"),
            )
        )
    if after is not None:
        query = query.where(sa.tuple_(s.started_at, s.id) < sa.tuple_(*after))
    rows = await conn.execute(query.order_by(s.started_at.desc(), s.id.desc()).limit(first + 1))
    return [SessionRow(*row) for row in rows]


async def activity_by_session(
    conn: AsyncConnection, account_id: UUID, session_ids: Sequence[UUID], from_ordinal: int = 0
) -> dict[UUID, list[ActivityRow]]:
    """The sessions' turns in order (from `from_ordinal` on; 0: all of them)."""
    a = t.runtime_session_activity.c
    since = a.ordinal >= from_ordinal if from_ordinal else sa.true()
    rows = await conn.execute(
        sa.select(*_ACTIVITY_COLUMNS)
        .where(a.account_id == account_id, a.runtime_session_id.in_(list(set(session_ids))), since)
        .order_by(a.runtime_session_id, a.ordinal, a.id)
    )
    grouped: dict[UUID, list[ActivityRow]] = {sid: [] for sid in session_ids}
    for row in rows:
        grouped[row.runtime_session_id].append(ActivityRow(*row))
    return grouped


ReplayPosition = tuple[int, UUID]


@dataclass(frozen=True, slots=True)
class ReplayTurn(ActivityRow):
    """A turn of a replay page; its `content` read only as far as the statement's allowance
    (see replay_pages), `content_chars` the length of the whole of it."""

    content_chars: int


@dataclass(frozen=True, slots=True)
class ReplayPageKey:
    """At most `first` turns of a session after `after` (ordinal, id) in replay order."""

    session_id: UUID
    first: int
    after: ReplayPosition | None = None


_REPLAY_PAGES = sa.text(
    "SELECT key, id, runtime_session_id, ordinal, occurred_at, role, kind, "
    # Content in page order until the statement's allowance is spent: then cut, then none.
    "CASE WHEN before >= :content_chars THEN '' "
    "ELSE left(content, CAST(:content_chars - before AS int)) END, "
    "api_usage_id, chars FROM ("
    "SELECT k.key, a.id, a.runtime_session_id, a.ordinal, a.occurred_at, a.role, a.kind, "
    "a.content, a.api_usage_id, length(a.content) AS chars, "
    "coalesce(sum(length(a.content)) OVER (ORDER BY k.key, a.ordinal, a.id "
    "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before "
    "FROM unnest(CAST(:keys AS int[]), CAST(:session_ids AS uuid[]), CAST(:limits AS int[]), "
    "CAST(:after_ordinals AS int[]), CAST(:after_ids AS uuid[])) "
    "AS k(key, session_id, lim, after_ordinal, after_id) "
    "CROSS JOIN LATERAL (SELECT * FROM runtime_session_activity a "
    "WHERE a.account_id = :account_id AND a.runtime_session_id = k.session_id "
    # The first condition is the index's; the row comparison breaks ties on id.
    "AND a.ordinal >= k.after_ordinal AND (a.ordinal, a.id) > (k.after_ordinal, k.after_id) "
    "ORDER BY a.ordinal, a.id LIMIT k.lim) AS a) AS r "
    "ORDER BY key, ordinal, id"
)
_BEFORE_ALL: ReplayPosition = (-1, UUID(int=0))  # ordinals are never negative


async def replay_pages(
    conn: AsyncConnection,
    account_id: UUID,
    keys: Sequence[ReplayPageKey],
    content_chars: int = 2**31 - 1,
) -> list[list[ReplayTurn]]:
    """For each key, its page plus one more turn (so the caller knows whether more follow),
    every key in one statement, which reads at most `content_chars` characters of content
    in all (in key and replay order; a turn past that comes cut, or empty)."""
    if not keys:
        return []
    positions = [k.after or _BEFORE_ALL for k in keys]
    rows = await conn.execute(
        _REPLAY_PAGES,
        {
            "account_id": account_id,
            "keys": list(range(len(keys))),
            "session_ids": [k.session_id for k in keys],
            "limits": [k.first + 1 for k in keys],
            "after_ordinals": [p[0] for p in positions],
            "after_ids": [p[1] for p in positions],
            "content_chars": content_chars,
        },
    )
    pages: list[list[ReplayTurn]] = [[] for _ in keys]
    for row in rows:
        pages[row[0]].append(ReplayTurn(*row[1:]))
    return pages
