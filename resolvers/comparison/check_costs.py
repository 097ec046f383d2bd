"""What the exact check of unsure approximate lookups costs on each account, learned from the
checks that ran and kept for a while (process-wide, per account).

An exact check scans the account once per lookup it checks, so its cost is about linear in
the lookups. On an account too large for the check's budget, starting one only spends the
budget and ends with the approximate answer anyway: a check predicted to reach its budget is
not started, and the answer says `similar_approximate_unverified` at once. A check that ran
out of budget teaches a lower bound (budget / lookups); one that finished, its cost. What was
learned is forgotten after `ttl_s`, so an account that shrank, or a faster server, is tried
again.

The same memory routes an account: when an exact pass costs a lookup no more than a lookup
on the account's approximate path cost (its scan, wider retry and checks together, the
median of its last ROUTE_SAMPLES approximate comparisons, at least ROUTE_MIN_SAMPLES of them),
its comparisons take the exact path at once. One comparison never routes: the first of an
account in a process reads its index from disk, which later ones do not (on a freshly loaded
25k-chunk account, 144 ms against 11 ms warm), and one dear session (321 ms among ~30 ms
ones on the clustered 25k account) routed it exact for the whole of ttl_s. On a
small or sparse account (real sessions under the lexical model, issue #29) the approximate
lookups cannot vouch and are checked anyway, so the scan before the check is time spent for
nothing. Once the approximate cost is forgotten, the approximate path is tried again."""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from uuid import UUID

import structlog
from cachetools import TTLCache
from opentelemetry import trace
from sqlalchemy.ext.asyncio import AsyncConnection

from data import comparison as sql

log = structlog.get_logger(__name__)

CHECK_COSTS_TTL_S = 300.0
CHECK_COSTS_ACCOUNTS = 10_000  # accounts kept, least recently used first out

Learned = TTLCache[UUID, float]  # per account: what was learned, for ttl_s since


def _learned(ttl_s: float) -> TTLCache[UUID, Any]:
    """Per account, forgotten ttl_s after it was learned; past CHECK_COSTS_ACCOUNTS, the least
    recently used go first. The clock is looked up at each use (a test sets it)."""
    return TTLCache(CHECK_COSTS_ACCOUNTS, ttl_s, timer=lambda: time.monotonic())


class CheckCosts:
    """Per account, the last check's cost per lookup, kept for ttl_s after it was learned
    (cachetools' TTLCache; process-wide, like the accounts' snapshots; a worker process
    learns on its own)."""

    def __init__(self, ttl_s: float = CHECK_COSTS_TTL_S) -> None:
        self.ttl_s = ttl_s
        self._per_lookup_ms: Learned = _learned(ttl_s)
        self._exact_ms: Learned = _learned(ttl_s)  # from passes that finished: not a lower bound
        # per account, its last approximate comparisons: (when, cost per lookup); the account
        # is kept for ttl_s after its newest
        self._approximate: TTLCache[UUID, deque[tuple[float, float]]] = _learned(ttl_s)

    def routes_exact(self, account_id: UUID) -> bool:
        """Whether the account's comparisons take the exact path at once: both costs are
        known, and an exact lookup costs no more than an approximate one."""
        exact = self._exact_ms.get(account_id)
        approximate = self.approximate_ms(account_id)
        return exact is not None and approximate is not None and exact <= approximate

    def approximate_ms(self, account_id: UUID) -> float | None:
        """What a lookup on the account's approximate path costs: the median of its recent
        comparisons (the lower middle one of an even count), when at least ROUTE_MIN_SAMPLES are
        recent."""
        now = time.monotonic()
        recent = [v for when, v in self._approximate.get(account_id, ()) if now - when < self.ttl_s]
        return statistics.median_low(recent) if len(recent) >= ROUTE_MIN_SAMPLES else None

    def learn_approximate(self, account_id: UUID, lookups: int, cost_ms: float) -> None:
        """An approximate comparison of `lookups` lookups cost `cost_ms`, checks included."""
        if lookups <= 0:
            return
        samples = self._approximate.get(account_id) or deque(maxlen=ROUTE_SAMPLES)
        samples.append((time.monotonic(), cost_ms / lookups))
        self._approximate[account_id] = samples  # used last, and kept for ttl_s from now

    def per_lookup_ms(self, account_id: UUID) -> float | None:
        """What a lookup of the account's last check cost, or None when nothing recent is
        known."""
        return self._per_lookup_ms.get(account_id)

    def affordable(self, account_id: UUID, lookups: int, budget_ms: int) -> bool:
        """Whether a check of `lookups` lookups is expected to finish within `budget_ms`
        (yes when nothing recent is known about the account)."""
        cost = self.per_lookup_ms(account_id)
        return cost is None or lookups * cost < budget_ms

    def learn(self, account_id: UUID, lookups: int, cost_ms: float, finished: bool = True) -> None:
        """A check (or an exact pass) of `lookups` lookups cost `cost_ms` (its whole budget
        when it could not finish: then only a lower bound, which never routes exact)."""
        if lookups > 0:
            self._per_lookup_ms[account_id] = cost_ms / lookups
            if finished:
                _blend(self._exact_ms, account_id, cost_ms / lookups)


# The exact path's cost is averaged (an exponential moving average with this weight on the
# newest); the approximate path's is the median of its last ROUTE_SAMPLES comparisons, known
# once ROUTE_MIN_SAMPLES are recent: one session's many or few lookups, or one cold or dear
# comparison, does not flip the account's path.
ROUTE_COST_WEIGHT = 0.25
ROUTE_SAMPLES = 5
ROUTE_MIN_SAMPLES = 3


def _blend(known: Learned, account: UUID, value: float) -> None:
    """The account's cost, averaged with what was learned before (when still recent), learned
    now."""
    before = known.get(account)
    known[account] = value if before is None else before + ROUTE_COST_WEIGHT * (value - before)


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
        self.checks.learn(self.account_id, self.lookups, cost_ms, finished)
        said(self.lookups, started=True, finished=finished)


def begin_check(checks: CheckCosts, account_id: UUID, lookups: int, budget_ms: int) -> Clock | None:
    """The clock of an exact check about to start; None when the account's last checks
    predict it would run past its budget (it is then not started)."""
    if not checks.affordable(account_id, lookups, budget_ms):
        said(lookups, started=False, finished=False)
        return None
    return Clock(checks, account_id, lookups, budget_ms, time.perf_counter())


EXACT_CHECK = "exact_check"  # the log line's event, and the span's event, of each exact check


def said(lookups: int, started: bool, finished: bool) -> None:
    """An exact check, started or not, in the log and as an event of the span it ran in (a
    comparison's `check` phase; for a search's dense leg, the search's span)."""
    log.info(EXACT_CHECK, lookups=lookups, started=started, finished=finished)
    attributes = {"lookups": lookups, "started": started, "finished": finished}
    trace.get_current_span().add_event(EXACT_CHECK, attributes)


Checked = TypeVar("Checked")


async def exact_check(
    conn: AsyncConnection,
    checks: CheckCosts,
    account_id: UUID,
    lookups: int,
    budget_ms: int,
    look: Callable[[], Awaitable[Checked]],
) -> Checked | None:
    """The exact check of `lookups` lookups (`look`, an exact pass) within `budget_ms`, which
    teaches its cost; None when it ran past the budget, or was not started because the
    account's last checks predict it would (the one exact check of comparisons and search)."""
    clock = begin_check(checks, account_id, lookups, budget_ms)
    if clock is None:
        return None
    checked: Checked | None = None
    async with sql.own_budget(conn, budget_ms):
        checked = await look()
    clock.end(finished=checked is not None)
    return checked
