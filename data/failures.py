"""The sessions a failure-modes request groups: an account's sessions of some statuses (and
source types) that started in a window, newest first, bounded."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from data import tables as t
from data.sessions import SessionRow

_COLUMNS = [getattr(t.runtime_sessions.c, f) for f in SessionRow.__slots__]


@dataclass(frozen=True, slots=True)
class InWindow:
    """The newest `bound` sessions of the window (newest first), and how many it holds."""

    sessions: tuple[SessionRow, ...]
    total: int


async def sessions_in_window(
    conn: AsyncConnection,
    account_id: UUID,
    since: datetime,
    statuses: tuple[str, ...] | None,
    source_types: tuple[str, ...] | None,
    bound: int,
) -> InWindow:
    """The account's sessions that started at or after `since` with these statuses and source
    types (None: any), the newest `bound` of them (started_at desc, id desc), and the count of
    all of them, in one statement."""
    s = t.runtime_sessions.c
    where = [s.account_id == account_id, s.started_at >= since]
    if statuses is not None:
        where.append(s.status.in_(list(statuses)))
    if source_types is not None:
        where.append(s.source_type.in_(list(source_types)))
    total = sa.func.count().over().label("total")
    rows = (
        await conn.execute(
            sa.select(*_COLUMNS, total)
            .where(*where)
            .order_by(s.started_at.desc(), s.id.desc())
            .limit(bound)
        )
    ).all()
    if not rows:
        return InWindow((), 0)
    return InWindow(tuple(SessionRow(*row[:-1]) for row in rows), int(rows[0][-1]))


@dataclass(frozen=True, slots=True)
class Pin:
    """What one failure-modes question is answered as of: its window's end, and the
    account's data as it was then (`watermark`, from `account_watermark`)."""

    window_end: datetime
    watermark: str


# Every row a grouping reads belongs to one of these, scoped to the account: its chunks
# (passages, vectors, states), its sessions (statuses, starts) and its embedding setting.
# A row inserted or updated gets a new xmin, a row deleted changes the count: the sum of the
# rows' xmins and their count change with any write the answer could see, and with no
# other (PostgreSQL's transaction ids, as optimistic concurrency control uses them).
WATERMARK = """SELECT md5(concat_ws(':',
  (SELECT count(*) || '.' || coalesce(sum(xmin::text::bigint), 0) FROM session_chunks
   WHERE account_id = :account_id),
  (SELECT count(*) || '.' || coalesce(sum(xmin::text::bigint), 0) FROM runtime_sessions
   WHERE account_id = :account_id),
  (SELECT xmin::text FROM embedding_settings WHERE account_id = :account_id)))"""


async def account_watermark(conn: AsyncConnection, account_id: UUID) -> str:
    """A digest of the account's data that changes with every write a failure-modes answer
    could see (passages added, embedded, withheld or removed; sessions added or their
    status changed; the embedding setting changed), in one statement."""
    value = (await conn.execute(sa.text(WATERMARK), {"account_id": account_id})).scalar_one()
    return str(value)
