"""The exact check: approximate lookups that cannot vouch for their answer are answered by
exact passes over the account, within one budget (never more than the comparison's); past
it their approximate answer stands, and their comparisons say so
(`similar_approximate_unverified`). The path reported stays the one the comparison took.

A comparison's doubtful probes are checked together or not at all, the comparisons with the
fewest lookups first: on a page, one whose check the account cannot afford (a session beside
a clump of identical chunks) leaves the others' checks alone instead of taking them past the
budget with it. While nothing is known of what a check costs on the account, the first
comparison is checked alone; then as many of the rest as that cost predicts to fit what is
left, in one pass. A check predicted to reach its budget is not started."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace

import structlog
from opentelemetry import trace
from sqlalchemy.ext.asyncio import AsyncConnection

from data.account_snapshot import AccountSnapshot
from resolvers.comparison.check_costs import CheckCosts, exact_check
from resolvers.comparison.looking import Pick, look_again
from resolvers.comparison.state import Batch, Comparison
from resolvers.rules.lookup_path import vouches_for, why_not_vouched
from resolvers.rules.lookup_plan import LookupPlan

log = structlog.get_logger(__name__)


def doubtful(c: Comparison, batch: Batch, plan: LookupPlan) -> frozenset[int]:
    """The comparison's approximate probes whose lookup cannot vouch for its answer."""
    path = batch.path(c.model)
    if path is None or not path.approximate:
        return frozenset()
    limits = plan.limits()
    return frozenset(
        p.number
        for p in c.probes
        if not vouches_for(p.answer.window, limits.window, limits.per_probe)
    )


# The span attributes `say_doubts` writes: the approximate lookups, and how many could not
# vouch for each reason (`<DOUBTS>.<the reason's name in lower case>`, those that occurred).
APPROXIMATE = "similar_sessions.lookups.approximate"
DOUBTS = "similar_sessions.lookups.doubts"


def say_doubts(batch: Batch, plan: LookupPlan) -> None:
    """On the current span (the first lookups'), when it is recorded: how many distinct
    lookups took an approximate path, and how many of them could not vouch, by reason."""
    span = trace.get_current_span()
    if not span.is_recording():
        return
    limits = plan.limits()
    approximate = [
        p
        for c in batch.comparisons
        if (path := batch.path(c.model)) is not None and path.approximate
        for p in c.probes
        if p.lookup == p.number  # probes with one vector share one lookup
    ]
    reasons = Counter(
        why_not_vouched(p.answer.window, limits.window, limits.per_probe) for p in approximate
    )
    span.set_attribute(APPROXIMATE, len(approximate))
    for reason, count in reasons.items():
        if reason is not None:
            span.set_attribute(f"{DOUBTS}.{reason.name.lower()}", count)


async def verify(
    conn: AsyncConnection,
    batch: Batch,
    snapshot: AccountSnapshot,
    plan: LookupPlan,
    checks: CheckCosts,
) -> Batch:
    """The batch with its doubtful lookups checked, as many comparisons as the plan's check
    budget lets; the others marked unverified."""
    unsure = {c.ask.key: d for c in batch.comparisons if (d := doubtful(c, batch, plan))}
    waiting = sorted(
        (c.lookups(unsure[c.ask.key]), c.ask.key) for c in batch.found if unsure.get(c.ask.key)
    )
    started = time.perf_counter()
    while waiting:
        left_ms = plan.check_budget_ms - int((time.perf_counter() - started) * 1000)
        if left_ms <= 0:
            break
        per_lookup_ms = checks.per_lookup_ms(batch.account_id)
        taken = fitting(per_lookup_ms, [n for n, _ in waiting], left_ms)
        pick = _picking(unsure, {key for _, key in waiting[:taken]})
        lookups = sum(n for n, _ in waiting[:taken])  # comparisons share no lookup
        checked = await _check(conn, batch, snapshot, plan, checks, pick, lookups, left_ms)
        probes = sum(len(unsure[key]) for _, key in waiting[:taken])
        log.info("similar_sessions_verified", probes=probes, exact=checked is not None)
        if checked is None:
            break
        batch, waiting = checked, waiting[taken:]
    left = {key for _, key in waiting}
    return batch.with_comparisons(
        replace(c, unverified=True) if c.ask.key in left else c for c in batch.comparisons
    )


def _picking(unsure: dict[int, frozenset[int]], chosen: set[int]) -> Pick:
    def pick(c: Comparison) -> frozenset[int]:
        return unsure[c.ask.key] if c.ask.key in chosen else frozenset()

    return pick


async def _check(
    conn: AsyncConnection,
    batch: Batch,
    snapshot: AccountSnapshot,
    plan: LookupPlan,
    checks: CheckCosts,
    pick: Pick,
    lookups: int,
    budget_ms: int,
) -> Batch | None:
    """The picked probes answered by one exact pass within `budget_ms`; None when it ran
    past it, or was not started because the account's last checks predict it would."""

    async def look() -> Batch:
        return await look_again(conn, batch, snapshot, plan.checked(), pick)

    return await exact_check(conn, checks, batch.account_id, lookups, budget_ms, look)


def fitting(per_lookup_ms: float | None, lookups: list[int], left_ms: int) -> int:
    """How many comparisons, of these lookup counts (fewest first), one pass checks: the
    first alone while the account's check cost is unknown, else as many as that cost
    predicts to fit `left_ms` (at least one: the check then decides whether it starts)."""
    if per_lookup_ms is None:
        return 1
    taken, total = 1, lookups[0]
    for n in lookups[1:]:
        total += n
        if total * per_lookup_ms >= left_ms:
            break
        taken += 1
    return taken
