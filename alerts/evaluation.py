"""An account's rules evaluated over its failure modes: each distinct question (window, status,
source type) grouped once by the grouping `failureModes` serves (resolvers/failure_modes.py),
each rule's groups matched to the ones it kept (alerts/rules.py), and every alert decided
written to the outbox in the transaction that decided it."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from alerts.payload import Told, body_of
from alerts.rules import RuleSpec, Seen, Verdict, matched, verdict
from data import alert_deliveries
from data import alerts as sql
from data.accounts import Principal
from data.alerts import RuleRow
from resolvers.arguments import FailureArgs
from resolvers.context import Context
from resolvers.cursors import Cursors
from resolvers.failure_members import group_terms
from resolvers.failure_modes import TIMED_OUT, grouping
from resolvers.groupings import Grouping
from resolvers.rules import failure_groups as rules
from resolvers.services import Services

log = structlog.get_logger(__name__)
# The grouping's own cursors are never shown: a key of the process's own does.
_CURSORS = Cursors(secrets.token_bytes(32))


def spec_of(rule: RuleRow) -> RuleSpec:
    return RuleSpec(
        rule.kind,  # type: ignore[arg-type]  # the table's check holds it to the kinds
        rule.url,
        "",
        rule.min_sessions,
        rule.window_hours,
        rule.factor,
        rule.baseline_days,
        rule.statuses,
        rule.source_types,
    )


def seen(group: rules.Group) -> Seen:
    return Seen(
        {m.session_id: m.started_at for m in group.members}, group.representative, group.is_new
    )


@dataclass(frozen=True, slots=True)
class Candidate:
    """A group whose verdict fires now, with what its alert would tell."""

    group: rules.Group
    verdict: Verdict
    terms: tuple[str, ...]


async def evaluate_account(
    services: Services, account_id: UUID, now: datetime, console_url: str
) -> list[str]:
    """The account's enabled rules evaluated now; the webhook ids of the alerts decided."""
    async with services.engine.connect() as conn:
        found = await sql.rules(conn, account_id, enabled_only=True)
    context = Context.of(services, Principal(account_id, "", frozenset(), frozenset()), _CURSORS)
    told: list[str] = []
    for rule in found:
        spec = spec_of(rule)
        args = FailureArgs(spec.window_days, spec.statuses, spec.source_types)
        grouped, _ = await grouping(context, args)  # one grouping per question: memoised
        if TIMED_OUT in grouped.reasons:
            log.warning("alert_grouping_timed_out", account_id=str(account_id), rule=str(rule.id))
            continue
        candidates = await _candidates(context, spec, grouped, now)
        told += await _decide(services.engine, rule, spec, grouped, candidates, console_url, now)
    return told


async def _candidates(
    context: Context, spec: RuleSpec, grouped: Grouping, now: datetime
) -> list[Candidate]:
    """The groups whose verdict fires, with their shared terms (chosen in one batch)."""
    firing = [(g, v) for g in grouped.groups if (v := verdict(spec, seen(g), now)).fires]
    if not firing:
        return []
    terms, _ = await group_terms(context, [g for g, _ in firing])
    return [Candidate(g, v, tuple(t)) for (g, v), t in zip(firing, terms, strict=True)]


async def _decide(
    engine: AsyncEngine,
    rule: RuleRow,
    spec: RuleSpec,
    grouped: Grouping,
    candidates: Sequence[Candidate],
    console_url: str,
    now: datetime,
) -> list[str]:
    """In one transaction, the rule locked: its groups matched to the kept ones, the firing
    groups not already told in this episode alerted (their outbox rows written), the kept
    groups updated. The webhook ids written."""
    firing = {c.group.representative: c for c in candidates}
    told: list[str] = []
    async with engine.begin() as conn:
        if not await sql.lock_rule(conn, rule.account_id, rule.id):
            return []
        kept = await sql.kept_groups(conn, rule.account_id, rule.id)
        current = [frozenset(m.session_id for m in g.members) for g in grouped.groups]
        match = matched(current, [k.members for k in kept])
        for i, group in enumerate(grouped.groups):
            known = kept[match[i]] if i in match else None
            candidate = firing.get(group.representative)
            if known is None and candidate is None:
                continue  # nothing to keep: a group is kept once it has fired
            tell = candidate is not None and (known is None or not known.telling)
            # a `new` group is told once; a surge's episode ends when it no longer surges
            telling = candidate is not None or (spec.kind == "new" and known is not None)
            group_id = await sql.keep_group(
                conn,
                rule.account_id,
                rule.id,
                None if known is None else known.id,
                sorted(current[i]),
                group.representative,
                telling,
                tell,
            )
            if tell and candidate is not None:
                told.append(
                    await _enqueue(conn, rule, spec, grouped, candidate, group_id, console_url, now)
                )
    return told


async def _enqueue(
    conn: AsyncConnection,
    rule: RuleRow,
    spec: RuleSpec,
    grouped: Grouping,
    candidate: Candidate,
    group_id: UUID,
    console_url: str,
    now: datetime,
) -> str:
    """The alert's outbox row, its webhook id made now and kept for every attempt."""
    sessions = {row.id: row for row in grouped.found.sessions}
    group = candidate.group
    told = Told(
        rule.id,
        group_id,
        spec,
        candidate.verdict,
        sessions[group.representative],
        group.size,
        group.first.started_at,
        group.last.started_at,
        candidate.terms,
    )
    webhook_id = f"msg_{uuid.uuid4().hex}"
    body = body_of(told, console_url, now)
    await alert_deliveries.enqueue(conn, rule.account_id, rule.id, group_id, webhook_id, body)
    log.info("alert_decided", account_id=str(rule.account_id), rule=str(rule.id), kind=spec.kind)
    return webhook_id
