"""The alerts' part of the indexing worker: after a pass that embedded an account's sessions,
its rules are evaluated (at most once per SIMILAR_SESSIONS_ALERT_INTERVAL_S per account; one
embedded sooner is evaluated once the interval has passed), and beside the passes the outbox
is delivered, each due alert attempted and its outcome recorded."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from uuid import UUID

import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from alerts.delivery import Answered, DeliveryConfig, attempt, retry_at
from alerts.evaluation import evaluate_account
from alerts.urls import AllowedHosts
from config.settings import Settings
from data import alert_deliveries as outbox
from data import alerts as sql
from resolvers.services import Services
from resolvers.tuning import Tuning

log = structlog.get_logger(__name__)
DELIVERIES_AT_ONCE = 16
# A taken alert is due again after this many timeouts: an attempt takes at most three (the
# resolution, then the POST bounded by twice it), and its outcome is recorded after.
LEASE_TIMEOUTS = 4


@dataclass(frozen=True, slots=True)
class AlertConfig:
    interval_s: float
    console_url: str
    delivery: DeliveryConfig

    @classmethod
    def of(cls, settings: Settings) -> AlertConfig:
        delivery = DeliveryConfig(
            AllowedHosts.parse(settings.alert_allow_hosts),
            settings.alert_timeout_s,
            settings.alert_retry_base_s,
            settings.alert_max_failures,
        )
        return cls(settings.alert_interval_s, settings.alert_console_url, delivery)


@dataclass
class Cost:
    """What evaluating has cost: accounts evaluated, and the seconds (wall and CPU) spent."""

    accounts: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0


@dataclass
class AlertWorker:
    """Per process: which accounts wait for an evaluation, when each was last evaluated."""

    services: Services
    config: AlertConfig
    pending: set[UUID] = field(default_factory=set)
    last: dict[UUID, float] = field(default_factory=dict)
    cost: Cost = field(default_factory=Cost)
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    @classmethod
    def of(cls, engine: AsyncEngine, settings: Settings) -> AlertWorker:
        return cls(Services(engine, Tuning.of(settings)), AlertConfig.of(settings))

    @property
    def engine(self) -> AsyncEngine:
        return self.services.engine

    async def start(self) -> None:
        """Every account with an enabled rule is evaluated once (what a restart missed)."""
        async with self.engine.connect() as conn:
            self.pending |= set(await sql.accounts_with_rules(conn))

    async def after_pass(self, embedded: Iterable[UUID]) -> list[str]:
        """The accounts a pass embedded sessions of wait for an evaluation; those whose
        interval has passed are evaluated now. The webhook ids decided."""
        self.pending |= set(embedded)
        now = time.monotonic()
        ready = [a for a in self.pending if now >= self.last.get(a, -1e18) + self.config.interval_s]
        told: list[str] = []
        for account_id in sorted(ready):
            self.pending.discard(account_id)
            self.last[account_id] = time.monotonic()
            told += await self.evaluate(account_id)
        if told:
            self.wake.set()
        return told

    async def evaluate(self, account_id: UUID) -> list[str]:
        """One account's rules evaluated now (a failure is logged: the next pass retries)."""
        wall, cpu = time.perf_counter(), time.process_time()
        told: list[str] = []
        try:
            told = await evaluate_account(
                self.services, account_id, datetime.now(UTC), self.config.console_url
            )
        except Exception:
            log.exception("alert_evaluation_failed", account_id=str(account_id))
            self.pending.add(account_id)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        self.cost.accounts += 1
        self.cost.wall_s += wall
        self.cost.cpu_s += cpu
        log.info(  # what bench.alerts reads the worker's cost from
            "alert_evaluated",
            account_id=str(account_id),
            alerts=len(told),
            wall_ms=round(wall * 1000, 2),
            cpu_ms=round(cpu * 1000, 2),
        )
        return told

    def due_in(self) -> float | None:
        """Seconds until the next account waiting is due an evaluation (None: none waits)."""
        if not self.pending:
            return None
        now = time.monotonic()
        due = min(self.last.get(a, -1e18) + self.config.interval_s for a in self.pending)
        return max(0.0, due - now)

    async def deliver_due(self) -> int:
        """The due alerts attempted, at most DELIVERIES_AT_ONCE at once; how many."""
        now = datetime.now(UTC)
        lease = timedelta(seconds=self.config.delivery.timeout_s * LEASE_TIMEOUTS)
        async with self.engine.begin() as conn:
            due = await outbox.take_due(conn, now, lease, DELIVERIES_AT_ONCE)
        await asyncio.gather(*(self._deliver(item) for item in due))
        return len(due)

    async def _deliver(self, due: outbox.Due) -> None:
        outcome = await attempt(due, self.config.delivery)
        now = datetime.now(UTC)
        async with self.engine.begin() as conn:
            if isinstance(outcome, Answered):
                await outbox.delivered(conn, due, outcome.status, outcome.response, now)
                log.info("alert_delivered", webhook_id=due.webhook_id, status=outcome.status)
                return
            again = retry_at(due, now, self.config.delivery.retry_base_s)
            limit = self.config.delivery.max_failures
            disabled = await outbox.failed(conn, due, outcome, now, again, limit)
        log.warning(
            "alert_delivery_failed",
            webhook_id=due.webhook_id,
            error=outcome.error,
            retry_at=None if again is None else again.isoformat(),
            rule_disabled=disabled,
        )

    async def run(self, stop: asyncio.Event) -> None:
        """Deliver until stopped: whatever is due, then wait for the next due time, a new
        alert, or the stop (every account with a rule evaluated first: what a restart
        missed)."""
        try:
            await self.start()
        except Exception:
            log.exception("alert_start_failed")
        while not stop.is_set():
            self.wake.clear()  # before looking: an alert decided from here on wakes the wait
            try:
                while await self.deliver_due() == DELIVERIES_AT_ONCE:
                    pass
                async with self.engine.connect() as conn:
                    upcoming = await outbox.next_due(conn)
            except Exception:
                log.exception("alert_delivery_pass_failed")
                upcoming = None
            wait = 60.0 if upcoming is None else (upcoming - datetime.now(UTC)).total_seconds()
            await _first(stop, self.wake, max(0.0, min(wait, 60.0)))


async def _first(stop: asyncio.Event, wake: asyncio.Event, timeout_s: float) -> None:
    waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(wake.wait())]
    try:
        await asyncio.wait(waits, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in waits:
            waiting.cancel()
