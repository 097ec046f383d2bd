"""What the exact check of unsure approximate lookups costs on each account, learned from the
checks that ran and kept for a while (process-wide, per account).

An exact check scans the account once per lookup it checks, so its cost is about linear in
the lookups. On an account too large for the check's budget, starting one only spends the
budget and ends with the approximate answer anyway: a check predicted to reach its budget is
not started, and the answer says `similar_approximate_unverified` at once. A check that ran
out of budget teaches a lower bound (budget / lookups); one that finished, its cost. What was
learned is forgotten after `ttl_s`, so an account that shrank, or a faster server, is tried
again."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from uuid import UUID

import structlog

log = structlog.get_logger(__name__)

CHECK_COSTS_TTL_S = 300.0
CHECK_COSTS_ACCOUNTS = 10_000  # accounts kept, least recently used first out


class CheckCosts:
    """Per account, the last check's cost per lookup and when it was learned (process-wide,
    like the model catalog; a worker process learns on its own)."""

    def __init__(self, ttl_s: float = CHECK_COSTS_TTL_S) -> None:
        self.ttl_s = ttl_s
        self._per_lookup_ms: OrderedDict[UUID, tuple[float, float]] = OrderedDict()

    def per_lookup_ms(self, account_id: UUID) -> float | None:
        """What a lookup of the account's last check cost, or None when nothing recent is
        known."""
        known = self._per_lookup_ms.get(account_id)
        if known is None or time.monotonic() - known[0] >= self.ttl_s:
            return None
        self._per_lookup_ms.move_to_end(account_id)
        return known[1]

    def affordable(self, account_id: UUID, lookups: int, budget_ms: int) -> bool:
        """Whether a check of `lookups` lookups is expected to finish within `budget_ms`
        (yes when nothing recent is known about the account)."""
        cost = self.per_lookup_ms(account_id)
        return cost is None or lookups * cost < budget_ms

    def learn(self, account_id: UUID, lookups: int, cost_ms: float) -> None:
        """A check of `lookups` lookups cost `cost_ms` (its whole budget when it could not
        finish)."""
        if lookups <= 0:
            return
        self._per_lookup_ms[account_id] = (time.monotonic(), cost_ms / lookups)
        self._per_lookup_ms.move_to_end(account_id)
        while len(self._per_lookup_ms) > CHECK_COSTS_ACCOUNTS:
            self._per_lookup_ms.popitem(last=False)


@dataclass(frozen=True, slots=True)
class Clock:
    """A started check of `lookups` lookups within `budget_ms`: its end teaches its cost."""

    checks: CheckCosts
    account_id: UUID
    lookups: int
    budget_ms: int
    started: float

    def end(self, finished: bool) -> None:
        """The check finished within its budget, or ran past it (it then cost the budget)."""
        elapsed_ms = (time.perf_counter() - self.started) * 1000
        cost_ms = elapsed_ms if finished else self.budget_ms
        self.checks.learn(self.account_id, self.lookups, cost_ms)
        log.info("exact_check", lookups=self.lookups, started=True, finished=finished)


def begin_check(checks: CheckCosts, account_id: UUID, lookups: int, budget_ms: int) -> Clock | None:
    """The clock of an exact check about to start; None when the account's last checks
    predict it would run past its budget (it is then not started)."""
    if not checks.affordable(account_id, lookups, budget_ms):
        log.info("exact_check", lookups=lookups, started=False, finished=False)
        return None
    return Clock(checks, account_id, lookups, budget_ms, time.perf_counter())
