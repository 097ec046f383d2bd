"""`similar-sessions alerts add|list|remove`: an account's alert rules from the command line
(docs/alerts.md). `add` prints the new rule's id; `list` one line per rule, without secrets."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncEngine

from alerts import manage
from alerts.rules import BASELINE_DAYS, FACTOR, KINDS, MIN_SESSIONS, WINDOW_HOURS, RuleSpec
from alerts.urls import AllowedHosts
from config.settings import Settings, SettingsError
from data.alerts import RuleRow

Work = Callable[[AsyncEngine], Awaitable[int]]


def alerts_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="alerts_command", required=True)
    add = sub.add_parser("add", help="add a rule; prints its id")
    add.add_argument("--account", type=UUID, required=True)
    add.add_argument("--kind", choices=KINDS, required=True)
    add.add_argument("--url", required=True, help="the webhook (https, or http to allowed hosts)")
    add.add_argument("--secret", required=True, help="its signing secret, whsec_...")
    add.add_argument("--min-sessions", type=int, default=MIN_SESSIONS[0])
    add.add_argument("--window-hours", type=int, default=WINDOW_HOURS[0])
    add.add_argument("--factor", type=float, default=FACTOR[0], help="surge: times the baseline")
    add.add_argument("--baseline-days", type=int, default=BASELINE_DAYS[0])
    add.add_argument("--status", nargs="+", default=["failed"], help="statuses; `any`: all")
    add.add_argument("--source-type", nargs="+", default=None)
    listed = sub.add_parser("list", help="an account's rules, without their secrets")
    listed.add_argument("--account", type=UUID, required=True)
    remove = sub.add_parser("remove", help="remove a rule, its groups and deliveries")
    remove.add_argument("rule_id", type=UUID)


def spec_of(args: argparse.Namespace) -> RuleSpec:
    statuses = None if args.status == ["any"] else tuple(args.status)
    return RuleSpec(
        args.kind,
        args.url,
        args.secret,
        args.min_sessions,
        args.window_hours,
        args.factor,
        args.baseline_days,
        statuses,
        None if args.source_type is None else tuple(args.source_type),
    )


def described(rule: RuleRow) -> str:
    numbers = f"min_sessions={rule.min_sessions} window_hours={rule.window_hours}"
    if rule.kind == "surge":
        numbers += f" factor={rule.factor:g} baseline_days={rule.baseline_days}"
    statuses = "any" if rule.statuses is None else ",".join(rule.statuses)
    state = "enabled" if rule.enabled else f"disabled ({rule.disabled_reason})"
    return f"{rule.id} {rule.kind} {rule.url} {numbers} status={statuses} {state}"


def alerts_work(settings: Settings, args: argparse.Namespace) -> Work:
    """What the subcommand does on an engine; its exit code."""
    try:
        allowed = AllowedHosts.parse(settings.alert_allow_hosts)
    except ValueError as exc:
        raise SettingsError(f"SIMILAR_SESSIONS_ALERT_ALLOW_HOSTS: {exc}") from None

    async def add(engine: AsyncEngine) -> int:
        print(await manage.add_rule(engine, args.account, spec_of(args), allowed))
        return 0

    async def listed(engine: AsyncEngine) -> int:
        for rule in await manage.list_rules(engine, args.account):
            print(described(rule))
        return 0

    async def remove(engine: AsyncEngine) -> int:
        gone = await manage.remove_rule(engine, args.rule_id, None)
        print("removed" if gone else "no such rule", file=sys.stderr)
        return 0 if gone else 1

    return {"add": add, "list": listed, "remove": remove}[args.alerts_command]
