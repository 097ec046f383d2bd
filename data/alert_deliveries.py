"""The outbox of alerts: each written in the transaction that decided it, then taken when due
by one deliverer at a time (others skip what one holds; a taken row is due again after its
lease, so a deliverer killed mid-delivery leaves it to the next), and its outcome recorded.
Every statement on an account's rows is scoped to it."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from data import tables as t

d, r = t.alert_deliveries, t.alert_rules


async def enqueue(
    conn: AsyncConnection,
    account_id: UUID,
    rule_id: UUID,
    group_id: UUID,
    webhook_id: str,
    body: str,
) -> None:
    """An alert to deliver now, in the caller's transaction."""
    await conn.execute(
        sa.insert(d).values(
            account_id=account_id,
            rule_id=rule_id,
            group_id=group_id,
            webhook_id=webhook_id,
            body=body,
        )
    )


@dataclass(frozen=True, slots=True)
class Due:
    """A delivery to attempt: its alert, its rule's webhook and secret, what came before."""

    account_id: UUID
    id: int
    rule_id: UUID
    webhook_id: str
    body: str
    url: str
    secret: str
    attempts: int
    created_at: datetime


async def take_due(conn: AsyncConnection, now: datetime, lease: timedelta, limit: int) -> list[Due]:
    """The due deliveries of enabled rules, oldest first, leased: due again at now + lease
    unless their outcome is recorded before. Commit before delivering."""
    query = (
        sa.select(
            d.c.account_id,
            d.c.id,
            d.c.rule_id,
            d.c.webhook_id,
            d.c.body,
            r.c.url,
            r.c.secret,
            d.c.attempts,
            d.c.created_at,
        )
        .join(r, sa.and_(r.c.account_id == d.c.account_id, r.c.id == d.c.rule_id))
        .where(d.c.state == "pending", d.c.next_attempt_at <= now, r.c.enabled)
        .order_by(d.c.next_attempt_at, d.c.id)
        .limit(limit)
        .with_for_update(of=d, skip_locked=True)
    )
    due = [Due(*row) for row in await conn.execute(query)]
    for item in due:
        await conn.execute(
            sa.update(d)
            .where(d.c.account_id == item.account_id, d.c.id == item.id)
            .values(next_attempt_at=now + lease)
        )
    return due


async def next_due(conn: AsyncConnection) -> datetime | None:
    """When the earliest pending delivery of an enabled rule is due (None: none is)."""
    query = (
        sa.select(sa.func.min(d.c.next_attempt_at))
        .join(r, sa.and_(r.c.account_id == d.c.account_id, r.c.id == d.c.rule_id))
        .where(d.c.state == "pending", r.c.enabled)
    )
    found: datetime | None = (await conn.execute(query)).scalar()
    return found


async def delivered(
    conn: AsyncConnection, due: Due, status: int, response: str, now: datetime
) -> None:
    """A 2xx answer: the delivery done, its rule's run of failures ended."""
    await conn.execute(
        sa.update(d)
        .where(d.c.account_id == due.account_id, d.c.id == due.id)
        .values(
            state="delivered",
            attempts=d.c.attempts + 1,
            last_attempt_at=now,
            delivered_at=now,
            last_status=status,
            last_error=None,
            response=response,
        )
    )
    await conn.execute(
        sa.update(r)
        .where(r.c.account_id == due.account_id, r.c.id == due.rule_id)
        .values(failures=0)
    )


@dataclass(frozen=True, slots=True)
class Failure:
    status: int | None  # the receiver's status, None when none came
    error: str
    response: str | None


async def failed(
    conn: AsyncConnection,
    due: Due,
    failure: Failure,
    now: datetime,
    retry_at: datetime | None,
    max_failures: int,
) -> bool:
    """A failed attempt: retried at retry_at (None: given up); the rule's failures counted
    and the rule disabled, with the reason, at max_failures in a row. Whether it was."""
    await conn.execute(
        sa.update(d)
        .where(d.c.account_id == due.account_id, d.c.id == due.id)
        .values(
            state="pending" if retry_at is not None else "failed",
            attempts=d.c.attempts + 1,
            last_attempt_at=now,
            next_attempt_at=retry_at or now,
            last_status=failure.status,
            last_error=failure.error,
            response=failure.response,
        )
    )
    rule = sa.and_(r.c.account_id == due.account_id, r.c.id == due.rule_id)
    count = (
        await conn.execute(
            sa.update(r).where(rule).values(failures=r.c.failures + 1).returning(r.c.failures)
        )
    ).scalar_one()
    if count < max_failures:
        return False
    reason = f"{count} deliveries failed in a row; the last: {failure.error}"
    await conn.execute(
        sa.update(r).where(rule).values(enabled=False, disabled_reason=reason[:1000])
    )
    await conn.execute(  # the rule's other alerts are not delivered either
        sa.update(d)
        .where(d.c.account_id == due.account_id, d.c.rule_id == due.rule_id, d.c.state == "pending")
        .values(state="dropped")
    )
    return True


@dataclass(frozen=True, slots=True)
class DeliveryRow:
    """A delivery as the console and the CLI show it (no body, no secret)."""

    id: int
    rule_id: UUID
    group_id: UUID
    webhook_id: str
    state: str
    attempts: int
    created_at: datetime
    next_attempt_at: datetime
    last_attempt_at: datetime | None
    last_status: int | None
    last_error: str | None
    delivered_at: datetime | None


async def recent(conn: AsyncConnection, account_id: UUID, limit: int) -> list[DeliveryRow]:
    """The account's latest deliveries, newest first."""
    query = (
        sa.select(*(d.c[f.name] for f in fields(DeliveryRow)))
        .where(d.c.account_id == account_id)
        .order_by(d.c.id.desc())
        .limit(limit)
    )
    return [DeliveryRow(*row) for row in await conn.execute(query)]
