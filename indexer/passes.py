"""What an indexing pass is given and what it did: the worker's settings, the pass's totals
over accounts, and the degraded mark an account carries from one pass to the next."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncEngine

from config.settings import default_of
from data import indexing as sql
from indexer.chunking import ChunkPolicy


@dataclass(frozen=True, slots=True)
class IndexerConfig:
    """The worker's settings (indexer/commands.py reads them); defaults the declared ones."""

    policy: ChunkPolicy = field(default_factory=ChunkPolicy)
    repeat_min_sessions: int = default_of("repeat_min_sessions")
    batch_size: int = default_of("embed_batch")
    progress: bool | None = None  # None: shown only on a terminal
    # Accounts past this many comparable chunks get their own HNSW index (None: never).
    account_index_min_chunks: int | None = None
    max_attempts: int = default_of("embed_max_attempts")  # failed batches before `failed`
    repeat_min_share_percent: int = default_of("repeat_min_share_percent")
    refit_growth_percent: int = default_of("lexical_refit_growth_percent")
    refit_min_interval_s: int = default_of("lexical_refit_min_interval_s")
    template_min_sessions: int = default_of("template_min_sessions")
    session_idle_s: int = default_of("session_idle_s")  # a running live session then completes
    # The seconds a pass spends on an account's waiting chunks beyond the sessions it chunked
    # (a re-embedding after a new fit, a dense leg behind), the rest left to the next pass; None
    # (a pass run once, an import): all of them. `index --watch` sets it, so that a running
    # session's passages wait for one bounded pass, never for a whole account's.
    backlog_s: float | None = None

    @property
    def repeat(self) -> sql.RepeatRule:
        return sql.RepeatRule(self.repeat_min_sessions, self.repeat_min_share_percent)

    @property
    def hide_progress(self) -> bool | None:
        """tqdm's `disable`: None leaves it to tqdm, which shows the bars only on a terminal."""
        return None if self.progress is None else not self.progress


@dataclass
class PassReport:
    """What one pass did, summed over accounts."""

    accounts: int = 0
    sessions_chunked: int = 0
    chunks_written: int = 0
    chunks_skipped: int = 0
    zero_vectors_skipped: int = 0
    vectors_stripped: int = 0
    chunks_embedded: int = 0
    batches: int = 0
    batches_failed: int = 0
    chunks_failed: int = 0
    tails_merged: int = 0
    # wall seconds: the whole pass, and of it (over every account) the making of sessions,
    # the chunking, the lexical fit, the embedding, the embedding under a staged fit and its
    # swap (indexer/staged.py), the own indexes built and merged
    seconds: float = 0.0
    making_s: float = 0.0
    chunking_s: float = 0.0
    fitting_s: float = 0.0
    embedding_s: float = 0.0
    staged_s: float = 0.0
    indexes_s: float = 0.0
    degraded: dict[UUID, str] = field(default_factory=dict)
    embedded: set[UUID] = field(default_factory=set)  # the accounts it embedded chunks of
    backlog: set[UUID] = field(default_factory=set)  # the accounts it left chunks waiting of


class PassHook(Protocol):
    """What runs beside the passes (the alerts, given by the entry point that starts them):
    told after each pass which accounts it embedded, asked when it is next due, and run
    beside them until stopped."""

    async def after_pass(self, embedded: Iterable[UUID]) -> object: ...

    def due_in(self) -> float | None: ...

    async def run(self, stop: asyncio.Event) -> None: ...


async def mark_degraded(
    engine: AsyncEngine, work: sql.AccountWork, reason: str | None, until: datetime | None
) -> None:
    """The account's degraded reason until a time (None, None: cleared), in one transaction."""
    async with engine.begin() as conn:
        await sql.set_degraded(conn, work.account_id, reason, until)
