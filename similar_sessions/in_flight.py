"""Requests in progress per account, in process: an account past its bound is answered 429
at once rather than queued, so one account's burst, through any number of keys, cannot hold
the connection pool or the event loop while other accounts wait.

Counted per account in this process's memory: N processes let an account have N times the
bound in progress."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator


class InFlight:
    """The requests of each account in progress; no bound (0), no limit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.running: Counter[str] = Counter()

    @contextlib.contextmanager
    def slot(self, key: str) -> Iterator[bool]:
        """Hold one of the account's slots while the block runs: True, or False when every
        slot is taken (nothing is held then)."""
        if self.limit and self.running[key] >= self.limit:
            yield False
            return
        self.running[key] += 1
        try:
            yield True
        finally:
            self.running[key] -= 1
            if self.running[key] == 0:
                del self.running[key]  # an account seen once is not kept
