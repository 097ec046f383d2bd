"""What every request of a process shares: the engines, the tuning, the accounts' snapshots
(their models, indexes and fits), what exact checks cost per account, the embedders of
search texts, and the failure modes' groupings of the last minutes, and the event loop's
turns."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from data.account_snapshot import Snapshots
from indexer.embedders import Registry
from resolvers.comparison.check_costs import CheckCosts
from resolvers.groupings import Groupings
from resolvers.tuning import Tuning
from resolvers.turns import LoopTurns

# Connections of the read pool one request holds at once, whatever it asks (29 aliases of a
# page of sessions had taken every one, and another account's request waited behind them
# for its own): the pool has SIMILAR_SESSIONS_POOL_SIZE (5 by default).
READS_PER_REQUEST = 2
_READS: ContextVar[asyncio.Semaphore | None] = ContextVar("reads", default=None)


def utc_now() -> datetime:
    return datetime.now(UTC)


def share_reads() -> None:
    """Begin a request: its reads (`Services.read`) share READS_PER_REQUEST connections from
    here on, in this task and the tasks it starts."""
    _READS.set(asyncio.Semaphore(READS_PER_REQUEST))


@dataclass(frozen=True)
class Services:
    """Built once per process (similar_sessions/app.py)."""

    engine: AsyncEngine
    tuning: Tuning
    comparisons: AsyncEngine | None = None  # the comparisons' own pool; else `engine`
    snapshots: Snapshots = field(default_factory=Snapshots)
    embedders: Registry = field(default_factory=Registry)
    checks: CheckCosts = field(default_factory=CheckCosts)
    groupings: Groupings = field(default_factory=Groupings)
    turns: LoopTurns = field(default_factory=LoopTurns)
    # The time a window or a pin is counted back from: the wall clock, or a test's fixed one
    # (an answer recorded on the demo reads the same instant as the demo was loaded at).
    clock: Callable[[], datetime] = utc_now

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        """A connection of the read pool, within the request's share of it (no share outside
        a request: the start-up, a test)."""
        async with _READS.get() or contextlib.nullcontext(), self.engine.connect() as conn:
            yield conn

    @property
    def comparison_engine(self) -> AsyncEngine:
        return self.comparisons or self.engine
