"""Fair queuing across accounts, in one process: what Kubernetes' API Priority and Fairness
does for an API server, for one priority level.

Every request of an account is one flow, whatever key it came with. The process has
`SIMILAR_SESSIONS_SEATS` seats, and a request holds as many as it costs while it runs (its
Cost's seats, schema/cost.py: the failure modes 3, a search or a page of sessions 2, anything
else 1). A
request wider than one seat leaves one seat free, so a quick question never waits for slow
ones to end. A request starts at once when its seats fit and nobody waits: a lone account
may use the whole process. Else it waits in its account's queue, and whenever seats free the
queues are served fairly: the head of the account that has had the least work goes first,
once its seats fit (a wide request is not passed over by narrow ones, so it is not starved).

Work is seats times seconds run; the time a request waits in the queue is never charged. An
account entering the queue after a quiet spell starts level with the least-served account
queuing (ahead of it only by having been started fewer times): neither owed the time it was
away nor charged for others' past. Only an account whose own queue is full
(`SIMILAR_SESSIONS_ACCOUNT_QUEUE` requests waiting) is refused, with Retry-After, never
because another account once asked.

What APF has and this does not: priority levels (every account is one level here), and
shuffle sharding (one queue per account is affordable in one process's memory: an account
with nothing waiting or running is not kept)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

ONE = 1  # the seats of a request that asks nothing wide
RETRY_AFTER_S = 1  # what a refusal's Retry-After says: a turn comes as a request ends
KEPT_FOR_ONE = 1  # seats a wider request leaves free: a quick question never waits for a slow one


class QueueFull(Exception):
    """The account's queue holds as many requests as it may; retry after `retry_after_s`."""

    def __init__(self, waiting: int, retry_after_s: int) -> None:
        super().__init__(f"{waiting} requests of this account are waiting")
        self.waiting = waiting
        self.retry_after_s = retry_after_s


@dataclass(slots=True)
class _Waiter:
    seats: int
    ready: asyncio.Future[None]


@dataclass(slots=True)
class _Flow:
    """One account's queue, its requests running (seats, since when) and the work done."""

    done: float = 0.0  # seat-seconds run, of finished requests
    started: int = 0  # requests started since it was last idle
    waiting: deque[_Waiter] = field(default_factory=deque)
    running: list[tuple[int, float]] = field(default_factory=list)

    def work(self, now: float) -> float:
        """Seat-seconds run so far, the requests still running counted to now."""
        return self.done + sum(seats * (now - since) for seats, since in self.running)


class FairQueue:
    """The process's seats, shared across accounts by fair queuing."""

    def __init__(
        self, seats: int, queue_length: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.seats, self.queue_length, self.clock = seats, queue_length, clock
        self.free = seats
        self.flows: dict[str, _Flow] = {}

    def width(self, cost: int) -> int:
        """The seats a request of this cost takes: at most all but those kept for requests of
        one seat, and at least one."""
        return max(ONE, min(cost, self.seats - KEPT_FOR_ONE))

    def fits(self, seats: int) -> bool:
        """Whether a request taking `seats` may start now: a wider one leaves some free."""
        return self.free - seats >= (KEPT_FOR_ONE if seats > ONE else 0)

    @contextlib.asynccontextmanager
    async def seated(self, account: str, cost: int) -> AsyncIterator[None]:
        """Hold the seats the request costs while the block runs, waiting in the account's
        queue for them when they are taken or others wait; QueueFull when that queue is full
        (nothing held then)."""
        seats = self.width(cost)
        flow = self._flow(account)
        if self.fits(seats) and not any(f.waiting for f in self.flows.values()):
            self.free -= seats
        else:
            await self._wait(account, flow, seats)
        since = self.clock()
        flow.running.append((seats, since))
        flow.started += 1
        try:
            yield
        finally:
            flow.running.remove((seats, since))
            flow.done += seats * (self.clock() - since)
            self.free += seats
            self._forget_idle(account)
            self._dispatch()

    def _flow(self, account: str) -> _Flow:
        flow = self.flows.get(account)
        if flow is None:
            now = self.clock()
            busy = [f.work(now) for f in self.flows.values() if f.waiting]
            flow = self.flows[account] = _Flow(done=min(busy, default=0.0))
        return flow

    async def _wait(self, account: str, flow: _Flow, seats: int) -> None:
        if len(flow.waiting) >= self.queue_length:
            self._forget_idle(account)
            raise QueueFull(len(flow.waiting), RETRY_AFTER_S)
        waiter = _Waiter(seats, asyncio.get_running_loop().create_future())
        flow.waiting.append(waiter)
        self._dispatch()
        try:
            await waiter.ready
        except asyncio.CancelledError:
            if waiter.ready.done() and not waiter.ready.cancelled():
                self.free += seats  # granted as the request went away: give them back
            elif waiter in flow.waiting:
                flow.waiting.remove(waiter)
            self._forget_idle(account)
            self._dispatch()
            raise

    def _dispatch(self) -> None:
        """Start waiting requests while seats allow: each time the head of the queued account
        that has had the least work (ties: the one started fewer times, then the account id),
        once its seats fit (a wide request is not passed over by narrow ones)."""
        now = self.clock()
        while True:
            queued = [(f.work(now), f.started, a) for a, f in self.flows.items() if f.waiting]
            if not queued:
                return
            *_, account = min(queued)
            waiting = self.flows[account].waiting
            head = waiting[0]
            if head.ready.done():  # its request went away: it leaves the queue as it wakes
                waiting.popleft()
                continue
            if not self.fits(head.seats):
                return
            waiting.popleft()
            self.free -= head.seats
            head.ready.set_result(None)

    def _forget_idle(self, account: str) -> None:
        """An account with nothing waiting or running is not kept: it comes back level."""
        flow = self.flows.get(account)
        if flow is not None and not flow.waiting and not flow.running:
            del self.flows[account]
