"""One grouping per failure-modes question: what a window's groups were made from, and a
short-lived memo of them per process, keyed on what pins the answer (the account, the
arguments that decide the groups, the window's end and the account's data watermark).

A later page of the same question (a cursor or `asOf` naming the same pin, the data
unchanged) is served from the memo, or computed again from the same pin when the memo no
longer holds it (another process, or past its time): the same data and the same window give
the same grouping, so every page shows one. Nothing stale is served: a watermark that moved
makes a new question. Concurrent askers of one key share one computation."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from cachetools import TTLCache

from config import heap
from data.failures import InWindow, Pin
from resolvers.rules import failure_groups as rules
from resolvers.rules.calibration import BandCuts

# Groupings kept per process, and for how long: a question's pages are read within minutes,
# and one grouping of 500 sessions holds its groups and rows, not its comparisons.
GROUPINGS_KEPT = 32
GROUPING_TTL_S = 300.0


@dataclass(frozen=True, slots=True)
class Grouping:
    """Every group of a window, in order, and what the answer says of it: the window's
    sessions (the newest `bound`), each member's comparison's cut points, the earlier
    session most like each recurring group (by representative), the sessions with no
    embedded passage, and the reasons (the answer is `semantic` when something compared)."""

    pin: Pin
    window_start: datetime
    bound: int
    found: InWindow
    groups: tuple[rules.Group, ...]
    cuts: dict[UUID, BandCuts]
    seen_before: dict[UUID, UUID]
    not_embedded: int
    semantic: bool
    reasons: frozenset[str]


# A question asked again within this many seconds, over data that has not moved (no write
# since: no session started or changed), is answered from the same pin: the window ends up
# to this much earlier than now, so at most this much more of its oldest end is in it.
SAME_QUESTION_S = 10.0


class Groupings:
    """The process's memo of groupings, each computed once per key while kept."""

    def __init__(self, kept: int = GROUPINGS_KEPT, ttl_s: float = GROUPING_TTL_S) -> None:
        self._kept: TTLCache[Hashable, asyncio.Future[Grouping]] = TTLCache(kept, ttl_s)
        self._recent: TTLCache[Hashable, Pin] = TTLCache(kept, SAME_QUESTION_S)

    def recent(self, question: Hashable, make: Callable[[], Pin]) -> Pin:
        """The pin a question was last asked at, within SAME_QUESTION_S over the same data
        (`question` holds the account's watermark), else a new one (`make`): six keys asking
        the same failure modes at once wait for one grouping, not six."""
        pin = self._recent.get(question)
        if pin is None:
            pin = self._recent[question] = make()
        return pin

    async def get(self, key: Hashable, compute: Callable[[], Awaitable[Grouping]]) -> Grouping:
        """The grouping of `key`: kept, being computed by another request, or computed now.
        A computation that fails is forgotten (the next request tries again); a request
        that goes away does not cancel the others' wait."""
        future = self._kept.get(key)
        if future is None:
            future = asyncio.ensure_future(_trimmed_after(compute))
            self._kept[key] = future
            future.add_done_callback(lambda done: self._forget_failed(key, done))
        return await asyncio.shield(future)

    def __len__(self) -> int:
        return len(self._kept)

    def forget(self, key: Hashable) -> None:
        """Keep no grouping for `key`: the next request computes it again."""
        self._kept.pop(key, None)

    def _forget_failed(self, key: Hashable, done: asyncio.Future[Grouping]) -> None:
        if (done.cancelled() or done.exception() is not None) and self._kept.get(key) is done:
            del self._kept[key]


async def _trimmed_after(compute: Callable[[], Awaitable[Grouping]]) -> Grouping:
    """The grouping; then the heap the pass freed (its hundreds of comparisons) is given
    back to the system (glibc's malloc_trim, in a worker thread; nothing elsewhere), or the
    process would keep its high water for good."""
    grouping = await compute()
    await asyncio.to_thread(heap.trim)
    return grouping
