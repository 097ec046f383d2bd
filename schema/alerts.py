"""The account's alert rules over GraphQL: Query.alertRules and alertDeliveries, and the
mutations addAlertRule and removeAlertRule. Every one needs the key's `manage_alerts` scope
(FORBIDDEN without it); a rule reads back without its secret."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import strawberry

from alerts import manage
from alerts.rules import BASELINE_DAYS, FACTOR, MIN_SESSIONS, WINDOW_HOURS, RuleSpec
from alerts.urls import AllowedHosts
from data import alert_deliveries
from data.alerts import RuleRow
from resolvers.context import Context
from resolvers.errors import BadArgument, MissingScope

MANAGE_ALERTS = "manage_alerts"
DELIVERIES_BOUNDS = (1, 100)


def require_scope(info: strawberry.Info[Context, None]) -> None:
    if MANAGE_ALERTS not in info.context.principal.scopes:
        raise MissingScope(MANAGE_ALERTS)


@strawberry.type(description="A rule: when a failure-mode group is told, and where (no secret).")
class AlertRule:
    id: UUID
    kind: str = strawberry.field(description="`new` or `surge`.")
    url: str
    min_sessions: int
    window_hours: int
    factor: float = strawberry.field(description="surge: times the baseline's mean.")
    baseline_days: int
    statuses: list[str] | None = strawberry.field(description="null: any status.")
    source_types: list[str] | None
    enabled: bool
    disabled_reason: str | None = strawberry.field(
        description="Why it was disabled (consecutive failed deliveries)."
    )
    created_at: datetime

    @classmethod
    def of(cls, row: RuleRow) -> AlertRule:
        return cls(
            id=row.id,
            kind=row.kind,
            url=row.url,
            min_sessions=row.min_sessions,
            window_hours=row.window_hours,
            factor=row.factor,
            baseline_days=row.baseline_days,
            statuses=None if row.statuses is None else list(row.statuses),
            source_types=None if row.source_types is None else list(row.source_types),
            enabled=row.enabled,
            disabled_reason=row.disabled_reason,
            created_at=row.created_at,
        )


@strawberry.type(description="One alert's delivery: its state, attempts and next try.")
class AlertDelivery:
    webhook_id: str
    rule_id: UUID
    group_id: UUID
    state: str = strawberry.field(description="pending, delivered, failed (given up), dropped.")
    attempts: int
    created_at: datetime
    next_attempt_at: datetime | None = strawberry.field(description="null unless pending.")
    last_attempt_at: datetime | None
    last_status: int | None
    last_error: str | None
    delivered_at: datetime | None


@strawberry.type
class AlertQuery:
    @strawberry.field(description="The account's alert rules, oldest first (manage_alerts).")
    async def alert_rules(self, info: strawberry.Info[Context, None]) -> list[AlertRule]:
        require_scope(info)
        rules = await manage.list_rules(info.context.services.engine, _account(info))
        return [AlertRule.of(r) for r in rules]

    @strawberry.field(description="The account's latest alert deliveries (manage_alerts).")
    async def alert_deliveries(
        self, info: strawberry.Info[Context, None], first: int = 20
    ) -> list[AlertDelivery]:
        require_scope(info)
        low, high = DELIVERIES_BOUNDS
        if not low <= first <= high:
            raise BadArgument("first", f"must be between {low} and {high}, got {first}")
        async with info.context.services.read() as conn:
            rows = await alert_deliveries.recent(conn, _account(info), first)
        return [
            AlertDelivery(
                webhook_id=r.webhook_id,
                rule_id=r.rule_id,
                group_id=r.group_id,
                state=r.state,
                attempts=r.attempts,
                created_at=r.created_at,
                next_attempt_at=r.next_attempt_at if r.state == "pending" else None,
                last_attempt_at=r.last_attempt_at,
                last_status=r.last_status,
                last_error=r.last_error,
                delivered_at=r.delivered_at,
            )
            for r in rows
        ]


@strawberry.type
class Mutation:
    @strawberry.mutation(
        description="A new alert rule of the account (manage_alerts); BAD_USER_INPUT naming "
        "what is wrong, the URL's reason included (https, or http to allowed hosts)."
    )
    async def add_alert_rule(
        self,
        info: strawberry.Info[Context, None],
        kind: str,
        url: str,
        secret: str,
        min_sessions: int = MIN_SESSIONS[0],
        window_hours: int = WINDOW_HOURS[0],
        factor: float = FACTOR[0],
        baseline_days: int = BASELINE_DAYS[0],
        status: list[str] | None = strawberry.UNSET,
        source_type: list[str] | None = None,
    ) -> AlertRule:
        require_scope(info)
        statuses = ("failed",) if status is strawberry.UNSET else status
        spec = RuleSpec(
            kind,  # type: ignore[arg-type]  # checked() refuses any other
            url,
            secret,
            min_sessions,
            window_hours,
            factor,
            baseline_days,
            None if statuses is None else tuple(statuses),
            None if source_type is None else tuple(source_type),
        )
        allowed = AllowedHosts.parse(info.context.services.tuning.alert_allow_hosts)
        engine = info.context.services.engine
        rule_id = await manage.add_rule(engine, _account(info), spec, allowed)
        rules = await manage.list_rules(engine, _account(info))
        return AlertRule.of(next(r for r in rules if r.id == rule_id))

    @strawberry.mutation(
        description="Remove one of the account's rules with its deliveries (manage_alerts); "
        "false when it has none of that id."
    )
    async def remove_alert_rule(self, info: strawberry.Info[Context, None], id: UUID) -> bool:
        require_scope(info)
        return await manage.remove_rule(info.context.services.engine, id, _account(info))


def _account(info: strawberry.Info[Context, None]) -> UUID:
    return info.context.principal.account_id
