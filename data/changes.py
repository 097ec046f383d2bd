"""The indexers' wake-up: the live receiver's transaction notifies `CHANNEL` with its account
id as it commits (data/ingest.notify), and `index --watch` listens on a connection of its
own. A notification is only a hint of what changed, never the change itself: one missed (the
listener was reconnecting, or a transaction-pooling proxy sits in between and delivers none)
costs the time until the next full pass, which finds the change in the tables."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from data.ingest import CHANNEL

log = structlog.get_logger(__name__)


class Wakeups:
    """The accounts notified since they were last taken, and an event set while any are."""

    def __init__(self) -> None:
        self.accounts: set[UUID] = set()
        self.event = asyncio.Event()
        self.listening = False

    def notified(self, payload: str) -> None:
        with contextlib.suppress(ValueError):
            self.accounts.add(UUID(payload))
            self.event.set()

    def take(self) -> list[UUID]:
        taken, self.accounts = sorted(self.accounts), set()
        self.event.clear()
        return taken


@contextlib.asynccontextmanager
async def listening(engine: AsyncEngine, wakeups: Wakeups) -> AsyncIterator[Wakeups]:
    """Listen on CHANNEL on a connection held for the block; if the database refuses, the
    block runs without it (wakeups.listening False: the full passes find every change)."""
    async with contextlib.AsyncExitStack() as stack:
        try:
            conn = await stack.enter_async_context(engine.connect())
            raw: Any = (await conn.get_raw_connection()).driver_connection
            await raw.add_listener(CHANNEL, lambda *args: wakeups.notified(str(args[-1])))
            wakeups.listening = True
        except Exception as exc:  # a database that cannot listen: the passes still run
            log.warning("index_listen_failed", error=str(exc))
        yield wakeups
