"""Adding, listing and removing an account's alert rules (the GraphQL mutations and the CLI
share these): a rule is checked whole, its URL by the rules of alerts/urls.py, before it is
stored; it reads back without its secret."""

from __future__ import annotations

from dataclasses import asdict
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncEngine

from alerts.rules import RuleSpec
from alerts.urls import AllowedHosts, RefusedUrl, checked_url
from data import alerts as sql
from data.alerts import RuleRow
from resolvers.errors import BadArgument


class UnknownAccount(LookupError):
    """No account has this id."""


async def add_rule(
    engine: AsyncEngine, account_id: UUID, spec: RuleSpec, allowed: AllowedHosts
) -> UUID:
    """The new rule's id; BadArgument naming what is wrong (the URL's reason included)."""
    spec = spec.checked()
    try:
        checked_url(spec.url, allowed)
    except RefusedUrl as exc:
        raise BadArgument("url", str(exc)) from None
    values = asdict(spec)
    for name in ("statuses", "source_types"):
        values[name] = None if values[name] is None else list(values[name])
    async with engine.begin() as conn:
        if not await sql.account_exists(conn, account_id):
            raise UnknownAccount(f"no account {account_id}")
        return await sql.add_rule(conn, account_id, values)


async def list_rules(engine: AsyncEngine, account_id: UUID) -> list[RuleRow]:
    async with engine.connect() as conn:
        return await sql.rules(conn, account_id)


async def remove_rule(engine: AsyncEngine, rule_id: UUID, account_id: UUID | None) -> bool:
    """Whether the rule was there (the account's, when one is named) and is now gone."""
    async with engine.begin() as conn:
        return await sql.remove_rule(conn, rule_id, account_id)
