"""Requests in progress per API key, in process: a key past its bound is answered 429 at
once rather than queued, so one key's burst cannot hold the connection pool or the event
loop while other accounts wait.

Counted per API key (by its SHA-256) in this process's memory, as the rate limit is: N
processes let a key have N times the bound in progress."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator


class InFlight:
    """The requests of each key in progress; no bound (0), no limit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.running: Counter[str] = Counter()

    @contextlib.contextmanager
    def slot(self, key: str) -> Iterator[bool]:
        """Hold one of the key's slots while the block runs: True, or False when every slot
        is taken (nothing is held then)."""
        if self.limit and self.running[key] >= self.limit:
            yield False
            return
        self.running[key] += 1
        try:
            yield True
        finally:
            self.running[key] -= 1
            if self.running[key] == 0:
                del self.running[key]  # a key seen once is not kept
