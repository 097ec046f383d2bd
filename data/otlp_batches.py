"""The export requests the live receiver acknowledged, kept as sent until the indexer makes
them into sessions (transfer/live.py): stored and the indexers woken in the receiver's
transaction; taken, oldest first, by one indexer at a time each (others skip what one holds);
deleted in the transaction that made their sessions. Every statement is scoped to one
account."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from data import tables as t
from data.ingest import notify


@dataclass(frozen=True, slots=True)
class Batch:
    id: int
    encoding: str
    gzipped: bool
    body: bytes
    received_at: datetime


async def accept(
    conn: AsyncConnection, account_id: UUID, encoding: str, gzipped: bool, body: bytes
) -> None:
    """The request stored as sent, and the indexers woken when this transaction commits."""
    await conn.execute(
        sa.insert(t.otlp_batches).values(
            account_id=account_id, encoding=encoding, gzipped=gzipped, body=body
        )
    )
    await notify(conn, account_id)


async def take(conn: AsyncConnection, account_id: UUID, limit: int) -> list[Batch]:
    """The account's oldest requests not failed, at most `limit`, held for this transaction;
    those another transaction holds are passed over."""
    b = t.otlp_batches.c
    rows = await conn.execute(
        sa.select(b.id, b.encoding, b.gzipped, b.body, b.received_at)
        .where(b.account_id == account_id, b.failure.is_(None))
        .order_by(b.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return [Batch(*row) for row in rows]


async def drop(conn: AsyncConnection, account_id: UUID, ids: Sequence[int]) -> None:
    b = t.otlp_batches.c
    await conn.execute(
        sa.delete(t.otlp_batches).where(b.account_id == account_id, b.id.in_(list(ids)))
    )


async def fail(conn: AsyncConnection, account_id: UUID, batch_id: int, reason: str) -> None:
    """The request kept, with why it could not be made into sessions; not taken again."""
    b = t.otlp_batches.c
    await conn.execute(
        sa.update(t.otlp_batches)
        .where(b.account_id == account_id, b.id == batch_id)
        .values(failure=reason[:2000])
    )


async def accounts_waiting(
    conn: AsyncConnection, account_ids: Sequence[UUID] | None = None
) -> list[UUID]:
    """The accounts (of those named, or all) with requests waiting to be made into sessions."""
    b = t.otlp_batches.c
    query = sa.select(b.account_id).distinct().where(b.failure.is_(None))
    if account_ids is not None:
        query = query.where(b.account_id.in_(list(account_ids)))
    return list((await conn.execute(query)).scalars())
