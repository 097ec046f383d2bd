"""`index --watch`: passes until stopped, a full one every interval and between them one over
each account the live receiver notifies (data/changes.py) or a bounded pass left chunks
waiting of, the own indexes built and their tails merged and new lexical fits built beside
them, and the hook (the alerts) told after each."""

from __future__ import annotations

import asyncio
import time
from uuid import UUID

import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from data import indexing as sql
from data import ingest as ingest_sql
from data.changes import Wakeups, listening
from indexer.embedders import Registry
from indexer.fitting import Refits
from indexer.passes import IndexerConfig, PassHook, PassReport
from indexer.worker import build_own_indexes, index_once, merge_tails

log = structlog.get_logger(__name__)


async def watch(
    engine: AsyncEngine,
    registry: Registry,
    config: IndexerConfig,
    interval_s: float,
    stop: asyncio.Event | None = None,
    hook: PassHook | None = None,
) -> None:
    """Run passes until stopped: a full pass over every account every interval_s (which also
    completes the live sessions gone idle), and between them, as soon as the live receiver
    notifies an account's change (data/changes.py), a pass over the accounts notified; the
    hook told after each which accounts it embedded, and woken when it is due. A pass bounded
    by `config.backlog_s` that left an account's chunks waiting (a re-embedding after a new
    fit) is followed at once by another over that account, beside the accounts notified
    meanwhile, so a running session's passages wait for one bounded pass, not for the whole
    re-embedding. The own indexes are built, and their tails merged, beside the passes, one
    build at a time, so that a build of a whole index (seconds) never holds up a running
    session's passages. A failed pass is logged and the next one retries."""
    stop = stop or asyncio.Event()
    beside = None if hook is None else asyncio.ensure_future(hook.run(stop))
    merges, refits = _Merges(engine, config.account_index_min_chunks), Refits()
    try:
        async with listening(engine, Wakeups()) as wakeups:
            due, backlog = 0.0, set[UUID]()
            while not stop.is_set():
                full = due <= time.monotonic()
                report = await _pass(engine, registry, config, wakeups, full, backlog, refits)
                if full:  # the next full pass an interval on, whether this one failed or not
                    due = time.monotonic() + interval_s
                embedded = set() if report is None else report.embedded
                backlog = set() if report is None else report.backlog  # failed: the full pass's
                merges.after(None if full else embedded)
                wait = 0.0 if backlog else due - time.monotonic()
                if hook is not None:
                    await _told(hook, embedded)
                    hook_due = hook.due_in()
                    wait = wait if hook_due is None else min(wait, hook_due)
                await _until(stop, wakeups, wait)
    finally:
        await merges.stopped()
        await refits.stopped()
        if beside is not None:
            stop.set()
            await asyncio.gather(beside, return_exceptions=True)


class _Merges:
    """The own indexes' builds and tail merges a watching indexer runs beside its passes:
    after a pass, one task (of the accounts it embedded, or of every account after a full
    pass) when none is running; the accounts of passes meanwhile wait for the next."""

    def __init__(self, engine: AsyncEngine, min_rows: int | None) -> None:
        self.engine, self.min_rows = engine, min_rows
        self.task: asyncio.Task[int] | None = None
        self.waiting: set[UUID] | None = set()  # None: every account

    def after(self, embedded: set[UUID] | None) -> None:
        """A pass ended, embedding these accounts' chunks (None: a full pass, every account)."""
        if self.min_rows is None:
            return
        if embedded is None or self.waiting is None:
            self.waiting = None
        else:
            self.waiting |= embedded
        if (self.task is None or self.task.done()) and self.waiting != set():
            accounts, self.waiting = self.waiting, set()
            self.task = asyncio.ensure_future(self._merge(accounts))

    async def _merge(self, accounts: set[UUID] | None) -> int:
        assert self.min_rows is not None
        try:
            if accounts is None:
                async with self.engine.connect() as conn:
                    enabled = await sql.enabled_accounts(conn, None)
                accounts = {work.account_id for work in enabled}
            built = await build_own_indexes(self.engine, self.min_rows, sorted(accounts))
            return built + await merge_tails(self.engine, self.min_rows, sorted(accounts))
        except Exception:  # its tails stay; the next full pass's merge tries them again
            log.exception("index_merge_failed")
            return 0

    async def stopped(self) -> None:
        """The merge running cancelled (its half-built index is dropped by the next merge)."""
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if self.task is not None:
            await asyncio.gather(self.task, return_exceptions=True)


async def _pass(
    engine: AsyncEngine,
    registry: Registry,
    config: IndexerConfig,
    wakeups: Wakeups,
    full: bool,
    backlog: set[UUID],
    refits: Refits,
) -> PassReport | None:
    """A full pass (and the idle sessions completed), or one over the accounts notified and
    those the last pass left chunks waiting of, or none; its report (None: no pass ran, or it
    failed)."""
    try:
        if full:
            wakeups.take()  # the full pass covers them
            await complete_idle(engine, config.session_idle_s)
            return await index_once(engine, registry, config, merge=False, refits=refits)
        if accounts := sorted(set(wakeups.take()) | backlog):
            return await index_once(
                engine, registry, config, account_ids=accounts, changed_only=True, merge=False
            )
    except Exception:
        log.exception("index_pass_failed")
    return None


async def _told(hook: PassHook, embedded: set[UUID]) -> None:
    try:
        await hook.after_pass(embedded)
    except Exception:
        log.exception("pass_hook_failed")


async def _until(stop: asyncio.Event, wakeups: Wakeups, timeout_s: float) -> None:
    """Wait until stopped, woken, or timeout_s passed."""
    if wakeups.accounts or timeout_s <= 0:
        return
    waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(wakeups.event.wait())]
    try:
        await asyncio.wait(waits, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in waits:
            waiting.cancel()


async def complete_idle(engine: AsyncEngine, idle_s: int) -> int:
    """The running live sessions with no span for idle_s marked completed; how many."""
    async with engine.begin() as conn:
        accounts = await ingest_sql.complete_idle(conn, idle_s)
    if accounts:
        log.info("idle_sessions_completed", sessions=len(accounts), accounts=len(set(accounts)))
    return len(accounts)
