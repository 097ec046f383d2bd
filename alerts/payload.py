"""An alert's body, as its webhook receives it: the group (its representative session, member
count, first and last seen, shared terms, the console's link to it) and a Slack-compatible
`text`; every session shown as the account is shown it (credentials masked)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

from alerts.rules import RuleSpec, Verdict
from data.sessions import SessionRow
from resolvers.comparison.results import shown_session
from values import credentials

CONSOLE_PAGE = "/console/runtime-sessions"


@dataclass(frozen=True, slots=True)
class Told:
    """What an alert tells of one group."""

    rule_id: UUID
    group_id: UUID
    spec: RuleSpec
    verdict: Verdict
    representative: SessionRow
    members: int
    first_seen: datetime
    last_seen: datetime
    terms: Sequence[str]


def console_link(base: str, told: Told) -> str:
    """The representative in the console, its similar sessions open over the rule's window."""
    params = {
        "sessionId": str(told.representative.id),
        "similar": "open",
        "failureModes": str(told.spec.window_days),
        "failureStatus": ",".join(told.spec.statuses or ()),
    }
    return f"{base.rstrip('/')}{CONSOLE_PAGE}?{urlencode(params)}"


def text_of(told: Told, link: str, title: str) -> str:
    """The one-paragraph message (Slack mrkdwn)."""
    if told.spec.kind == "new":
        head = f"New failure mode: {told.verdict.recent} sessions in {told.spec.window_hours} h"
    else:
        mean = told.verdict.baseline_mean or 0.0
        head = (
            f"Failure mode surging: {told.verdict.recent} sessions in {told.spec.window_hours} h "
            f"(baseline {mean:.1f})"
        )
    terms = f" Shared terms: {', '.join(told.terms)}." if told.terms else ""
    return f"*{head}*: “{title}”.{terms} <{link}|Open in the console>"


def body_of(told: Told, base: str, now: datetime) -> str:
    """The JSON body signed and sent (its bytes are the same on every attempt)."""
    shown = shown_session(told.representative)
    link = console_link(base, told)
    terms = [credentials.shown(term) for term in told.terms]
    data: dict[str, Any] = {
        "rule_id": str(told.rule_id),
        "group_id": str(told.group_id),
        "kind": told.spec.kind,
        "representative": {
            "runtime_session_id": str(shown.id),
            "title": shown.title,
            "status": shown.status,
            "started_at": shown.started_at.isoformat(),
        },
        "member_count": told.members,
        "recent_members": told.verdict.recent,
        "window_hours": told.spec.window_hours,
        "baseline_mean": told.verdict.baseline_mean,
        "first_seen": told.first_seen.isoformat(),
        "last_seen": told.last_seen.isoformat(),
        "shared_terms": terms,
        "console_link": link,
    }
    body = {
        "type": f"failure_mode.{told.spec.kind}",
        "timestamp": now.isoformat(),
        "data": data,
        "text": text_of(told, link, shown.title),
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))
