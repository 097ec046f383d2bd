"""The share of a process's time one account's requests may take while other accounts are
asking too: each request's time in progress fills its account's bucket (every key of the
account the same one), which drains at `percent` of real time; an account whose bucket
holds more than that share of the window is answered 429 with Retry-After until it drains,
unless no other account made a request within the window (an account alone may use the
whole process).

One process serves every account on one event loop and one pool: a key sending requests
that each keep it busy for half a second, back to back, would otherwise leave every other
account waiting behind them. Counted per account in this process's memory (the caller
names the account: similar_sessions/auth.py).
A bucket rather than `limits`: its windows refuse a cost that does not fit, and a request's
cost is known only once it is answered."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

WINDOW_S = 10.0  # a key may take its whole share of this window at once, then waits


@dataclass(slots=True)
class Bucket:
    held: float  # seconds of requests in progress not yet drained, as of `at`
    at: float
    seen: float  # when the key last started or ended a request


class TimeShare:
    """Each key's requests' time in progress, drained at `percent` of real time."""

    def __init__(
        self, percent: int, window_s: float = WINDOW_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.percent, self.share, self.window_s, self.clock = (
            percent,
            percent / 100,
            window_s,
            clock,
        )
        self.buckets: dict[str, Bucket] = {}

    def _held(self, key: str, now: float) -> float:
        bucket = self.buckets.get(key)
        return 0.0 if bucket is None else max(0.0, bucket.held - (now - bucket.at) * self.share)

    def retry_after(self, key: str) -> int | None:
        """None when the key may start a request now (it is then seen as asking), else the
        whole seconds until it may."""
        if self.percent >= 100:
            return None
        now = self.clock()
        over = self._held(key, now) - self.share * self.window_s
        if over <= 0 or not self._others_asked(key, now):
            self._seen(key, now)
            return None
        return max(1, math.ceil(over / self.share))

    def charge(self, key: str, seconds: float) -> None:
        """Add a request's time in progress to the key's bucket."""
        if self.percent >= 100:
            return
        now = self.clock()
        self.buckets[key] = Bucket(self._held(key, now) + seconds, now, now)
        for other in [k for k, b in self.buckets.items() if self._forgotten(b, now)]:
            del self.buckets[other]  # drained and quiet: a key seen once is not kept

    @contextlib.contextmanager
    def timed(self, key: str) -> Iterator[None]:
        """Charge the time the block takes to the key."""
        started = self.clock()
        try:
            yield
        finally:
            self.charge(key, self.clock() - started)

    def _seen(self, key: str, now: float) -> None:
        bucket = self.buckets.setdefault(key, Bucket(0.0, now, now))
        bucket.seen = now

    def _others_asked(self, key: str, now: float) -> bool:
        return any(k != key and now - b.seen <= self.window_s for k, b in self.buckets.items())

    def _forgotten(self, bucket: Bucket, now: float) -> bool:
        drained = bucket.held <= (now - bucket.at) * self.share
        return drained and now - bucket.seen > self.window_s
