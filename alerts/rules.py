"""The alert rules' pure parts: a rule as an account sets it (checked, with its defaults), when
a group is worth telling (`new`, `surge`), and which kept group a regrouped one is.

A group keeps its identity across regroupings: a group of an evaluation is the kept group it
shares the most members with, when they share more than half of the smaller one's members
(each kept group matched once, the largest overlaps first). Imports no SQL."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal
from uuid import UUID

from resolvers.arguments import filter_values
from resolvers.errors import BadArgument

Kind = Literal["new", "surge"]
KINDS: tuple[Kind, ...] = ("new", "surge")
# (default, low, high) of each number a rule takes.
MIN_SESSIONS = (3, 1, 10_000)
WINDOW_HOURS = (24, 1, 24 * 30)
FACTOR = (3.0, 1.0, 1000.0)
BASELINE_DAYS = (7, 1, 90)
SECRET_PREFIX = "whsec_"  # noqa: S105 (the format's prefix, not a secret)


@dataclass(frozen=True, slots=True)
class RuleSpec:
    """What an account sets: the kind, its numbers, the failureModes filters, the webhook."""

    kind: Kind
    url: str
    secret: str
    min_sessions: int = MIN_SESSIONS[0]
    window_hours: int = WINDOW_HOURS[0]
    factor: float = FACTOR[0]
    baseline_days: int = BASELINE_DAYS[0]
    statuses: tuple[str, ...] | None = ("failed",)
    source_types: tuple[str, ...] | None = None

    def checked(self) -> RuleSpec:
        """The same rule, its filters normalised; BadArgument naming the first bad value."""
        if self.kind not in KINDS:
            raise BadArgument("kind", f"must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if not self.secret.startswith(SECRET_PREFIX) or len(self.secret) < 24:
            raise BadArgument("secret", "must be a Standard Webhooks secret: whsec_ and base64")
        for name, value, (_, low, high) in (
            ("minSessions", self.min_sessions, MIN_SESSIONS),
            ("windowHours", self.window_hours, WINDOW_HOURS),
            ("factor", self.factor, FACTOR),
            ("baselineDays", self.baseline_days, BASELINE_DAYS),
        ):
            if not (isinstance(value, int | float) and low <= value <= high):
                raise BadArgument(name, f"must be between {low} and {high}, got {value}")
        return RuleSpec(
            self.kind,
            self.url.strip(),
            self.secret,
            int(self.min_sessions),
            int(self.window_hours),
            float(self.factor),
            int(self.baseline_days),
            filter_values(self.statuses, "status"),
            filter_values(self.source_types, "sourceType"),
        )

    @property
    def window_days(self) -> int:
        """The failureModes window the rule is evaluated over: its own window (and, for a
        surge, its baseline before it), in whole days."""
        days = math.ceil(self.window_hours / 24)
        return days + self.baseline_days if self.kind == "surge" else days


@dataclass(frozen=True, slots=True)
class Seen:
    """A group as an evaluation sees it: its members' start times, and whether any session
    before the failureModes window is like it (`is_new` false)."""

    members: dict[UUID, datetime]
    representative: UUID
    is_new: bool


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether the group is worth telling now, with the counts that decided it."""

    fires: bool
    recent: int
    baseline_mean: float | None = None


def verdict(spec: RuleSpec, group: Seen, now: datetime) -> Verdict:
    """`new`: no member before the window and at least min_sessions members in the last
    window_hours. `surge`: a recurring group whose members in the last window_hours reach
    `factor` times its mean per window_hours over the baseline_days before, and min_sessions."""
    since = now - timedelta(hours=spec.window_hours)
    recent = sum(1 for t in group.members.values() if t >= since)
    if spec.kind == "new":
        return Verdict(group.is_new and recent >= spec.min_sessions, recent)
    start = since - timedelta(days=spec.baseline_days)
    before = sum(1 for t in group.members.values() if start <= t < since)
    mean = before / (spec.baseline_days * 24 / spec.window_hours)
    recurring = before > 0 or not group.is_new
    fires = recurring and recent >= spec.min_sessions and recent >= spec.factor * mean
    return Verdict(fires, recent, mean)


def matched(current: Sequence[frozenset[UUID]], kept: Sequence[frozenset[UUID]]) -> dict[int, int]:
    """Which kept group (by index) each current group (by index) is: the one sharing the most
    members, when more than half of the smaller group's; each kept group once, the largest
    overlaps first (ties: the earlier indexes)."""
    pairs = sorted(
        (-len(c & k), i, j)
        for i, c in enumerate(current)
        for j, k in enumerate(kept)
        if 2 * len(c & k) > min(len(c), len(k))
    )
    found: dict[int, int] = {}
    used: set[int] = set()
    for _, i, j in pairs:
        if i not in found and j not in used:
            found[i] = j
            used.add(j)
    return found
