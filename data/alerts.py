"""The alerts' statements: an account's rules (the secret read by the deliveries alone), the
groups each rule has seen, and the outbox of deliveries. Every statement on an account's rows
is scoped to it: another account's rule id reads as a missing one."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from data import tables as t


@dataclass(frozen=True, slots=True)
class RuleRow:
    """A rule as it reads back: everything but its secret."""

    id: UUID
    account_id: UUID
    kind: str
    url: str
    min_sessions: int
    window_hours: int
    factor: float
    baseline_days: int
    statuses: tuple[str, ...] | None
    source_types: tuple[str, ...] | None
    enabled: bool
    disabled_reason: str | None
    failures: int
    created_at: datetime


RULE_COLUMNS = [c for c in t.alert_rules.c if c.name != "secret"]


def _rule(row: Any) -> RuleRow:
    values = dict(row._mapping)
    for name in ("statuses", "source_types"):
        values[name] = None if values[name] is None else tuple(values[name])
    return RuleRow(**values)


async def add_rule(conn: AsyncConnection, account_id: UUID, values: dict[str, Any]) -> UUID:
    """A new rule of the account (values: alert_rules' columns); its id."""
    rule_id = uuid.uuid4()
    await conn.execute(sa.insert(t.alert_rules).values(account_id=account_id, id=rule_id, **values))
    return rule_id


async def account_exists(conn: AsyncConnection, account_id: UUID) -> bool:
    query = sa.select(sa.literal(1)).where(t.accounts.c.account_id == account_id)
    return (await conn.execute(query)).first() is not None


async def rules(
    conn: AsyncConnection, account_id: UUID, enabled_only: bool = False
) -> list[RuleRow]:
    """The account's rules, oldest first."""
    query = sa.select(*RULE_COLUMNS).where(t.alert_rules.c.account_id == account_id)
    if enabled_only:
        query = query.where(t.alert_rules.c.enabled)
    rows = await conn.execute(query.order_by(t.alert_rules.c.created_at, t.alert_rules.c.id))
    return [_rule(r) for r in rows]


async def remove_rule(conn: AsyncConnection, rule_id: UUID, account_id: UUID | None) -> bool:
    """The rule deleted with its groups and deliveries (only the account's, when one is
    named: the CLI names none); whether there was one."""
    query = sa.delete(t.alert_rules).where(t.alert_rules.c.id == rule_id)
    if account_id is not None:
        query = query.where(t.alert_rules.c.account_id == account_id)
    return bool((await conn.execute(query)).rowcount)


async def accounts_with_rules(conn: AsyncConnection) -> list[UUID]:
    query = sa.select(t.alert_rules.c.account_id).where(t.alert_rules.c.enabled).distinct()
    return [r[0] for r in await conn.execute(query)]


@dataclass(frozen=True, slots=True)
class KeptGroup:
    id: UUID
    members: frozenset[UUID]
    telling: bool
    alerts: int


async def kept_groups(conn: AsyncConnection, account_id: UUID, rule_id: UUID) -> list[KeptGroup]:
    """The groups the rule has seen, locked for this evaluation (oldest first)."""
    g = t.alert_groups
    query = (
        sa.select(g.c.id, g.c.members, g.c.telling, g.c.alerts)
        .where(g.c.account_id == account_id, g.c.rule_id == rule_id)
        .order_by(g.c.first_seen_at, g.c.id)
        .with_for_update()
    )
    rows = await conn.execute(query)
    return [KeptGroup(r.id, frozenset(r.members), r.telling, r.alerts) for r in rows]


async def keep_group(
    conn: AsyncConnection,
    account_id: UUID,
    rule_id: UUID,
    group_id: UUID | None,
    members: Sequence[UUID],
    representative: UUID,
    telling: bool,
    alerted: bool,
) -> UUID:
    """The group as this evaluation saw it (a new row when group_id is None), `alerted` now;
    its id."""
    g = t.alert_groups
    values: dict[str, Any] = {
        "members": list(members),
        "representative": representative,
        "seen_at": sa.func.now(),
        "telling": telling,
    }
    if alerted:
        values["alerted_at"] = sa.func.now()
    if group_id is None:
        group_id = uuid.uuid4()
        await conn.execute(
            sa.insert(g).values(
                account_id=account_id, id=group_id, rule_id=rule_id, alerts=int(alerted), **values
            )
        )
        return group_id
    await conn.execute(
        sa.update(g)
        .where(g.c.account_id == account_id, g.c.id == group_id)
        .values(alerts=g.c.alerts + int(alerted), **values)
    )
    return group_id


async def alerted_groups(
    conn: AsyncConnection, account_id: UUID
) -> list[tuple[frozenset[UUID], datetime]]:
    """The account's groups some rule alerted: their members as last seen, and the last alert."""
    g = t.alert_groups
    query = sa.select(g.c.members, g.c.alerted_at).where(
        g.c.account_id == account_id, g.c.alerts > 0, g.c.alerted_at.is_not(None)
    )
    return [(frozenset(r.members), r.alerted_at) for r in await conn.execute(query)]


async def lock_rule(conn: AsyncConnection, account_id: UUID, rule_id: UUID) -> bool:
    """The rule locked for this transaction's evaluation; whether it is still there, enabled."""
    query = (
        sa.select(t.alert_rules.c.enabled)
        .where(t.alert_rules.c.account_id == account_id, t.alert_rules.c.id == rule_id)
        .with_for_update()
    )
    return bool((await conn.execute(query)).scalar())
