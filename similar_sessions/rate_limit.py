"""Per-key rate limits, in process: a key past its rate is answered 429 with Retry-After.

Counted per API key (by its SHA-256) in this process's memory, with `limits`' moving
window: N processes (serve --workers N) let a key make N times the configured rate."""

from __future__ import annotations

import math
import time

from limits import RateLimitItem, parse_many
from limits.aio.storage import MemoryStorage
from limits.aio.strategies import (
    MovingWindowRateLimiter,
    RateLimiter,
    SlidingWindowCounterRateLimiter,
)


class RateLimits:
    """The configured rates, each counted per key; no rates, no limit. `weighted`: counted
    in a sliding window of two counters (what `limits` keeps per unit of cost in a moving
    window, one entry per unit, would be millions of entries for a rate of bytes)."""

    def __init__(self, spec: str | None, *, weighted: bool = False) -> None:
        self.items: list[RateLimitItem] = parse_many(spec) if spec else []
        self.limiter: RateLimiter = (
            SlidingWindowCounterRateLimiter(MemoryStorage())
            if weighted
            else MovingWindowRateLimiter(MemoryStorage())
        )

    async def admit(self, key: str, cost: int = 1) -> tuple[RateLimitItem, int] | None:
        """Count one request of `key` (`cost` units of it); None when every rate allows it,
        else the rate it would pass and the seconds until it would not (nothing is counted).
        A cost larger than a rate's whole amount is refused by that rate."""
        if cost <= 0:
            return None
        for item in self.items:
            if not await self.limiter.test(item, key, cost=cost):
                stats = await self.limiter.get_window_stats(item, key)
                return item, max(1, math.ceil(stats.reset_time - time.time()))
        for item in self.items:
            await self.limiter.hit(item, key, cost=cost)
        return None


def describe(item: RateLimitItem) -> str:
    """A rate as the setting spells it: `20/second`, `600/minute`."""
    unit = item.GRANULARITY.name
    return (
        f"{item.amount}/{unit}"
        if item.multiples == 1
        else f"{item.amount}/{item.multiples} {unit}s"
    )
