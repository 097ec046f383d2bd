"""The indexing worker: chunk stale sessions, skip repeated content, then embed pending
clear chunks in batches, each batch (vectors, states, spend) in one transaction."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from uuid import UUID

import numpy as np
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine
from tqdm import tqdm

from data import indexing as sql
from data.account_indexes import ensure_large_account_indexes
from data.model_indexes import ensure_model_index
from indexer import budget, lexical
from indexer.chunking import ChunkPolicy
from indexer.embedders import Embedder, EmbedderUnavailable, Registry, tokens_of
from indexer.fitting import ensure_fit
from indexer.rechunk import fingerprint, rechunk_session

log = structlog.get_logger(__name__)
_CAP_LOCK = 0x5E55_1D7C  # advisory lock class: one capped batch per account at a time


@dataclass(frozen=True, slots=True)
class IndexerConfig:
    policy: ChunkPolicy = field(default_factory=ChunkPolicy)
    repeat_min_sessions: int = 5
    batch_size: int = 64
    progress: bool | None = None  # None: shown only on a terminal
    # Accounts past this many comparable chunks get their own HNSW index (None: never).
    account_index_min_chunks: int | None = None
    repeat_min_share_percent: int = 5
    refit_growth_percent: int = 25
    template_min_sessions: int = 20

    @property
    def repeat(self) -> sql.RepeatRule:
        return sql.RepeatRule(self.repeat_min_sessions, self.repeat_min_share_percent)


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
    degraded: dict[UUID, str] = field(default_factory=dict)


async def index_once(
    engine: AsyncEngine,
    registry: Registry,
    config: IndexerConfig,
    *,
    account_ids: list[UUID] | None = None,
    now: datetime | None = None,
) -> PassReport:
    """One pass over every account with an enabled setting (or the ones named)."""
    report = PassReport()
    async with engine.connect() as conn:
        accounts = await sql.enabled_accounts(conn, account_ids)
    for work in accounts:
        report.accounts += 1
        await index_account(engine, registry, config, work, report, now or datetime.now(UTC))
    log.info("index_pass", **{k: v for k, v in vars(report).items() if k != "degraded"})
    return report


async def index_account(
    engine: AsyncEngine,
    registry: Registry,
    config: IndexerConfig,
    work: sql.AccountWork,
    report: PassReport,
    now: datetime,
) -> None:
    async with engine.begin() as conn:
        report.vectors_stripped += await sql.strip_unclear_vectors(conn, work.account_id)
    fitted = lexical.is_lexical(work.identity)
    try:
        embedder = registry.get(lexical.UNFITTED if fitted else work.identity)
    except EmbedderUnavailable as exc:
        log.warning("embedder_unavailable", account_id=str(work.account_id), reason=str(exc))
        await _mark(engine, work, budget.EMBEDDER_UNAVAILABLE, None)
        report.degraded[work.account_id] = budget.EMBEDDER_UNAVAILABLE
        return
    await chunk_account(engine, config, work, embedder, report)
    if fitted:
        work, embedder = await ensure_fit(
            engine,
            registry,
            work,
            config.refit_growth_percent,
            config.repeat,
            config.template_min_sessions,
        )
    capped = work.degraded_reason == budget.CAP_REACHED
    if capped and work.degraded_until is not None and work.degraded_until > now:
        report.degraded[work.account_id] = budget.CAP_REACHED
        return
    if work.degraded_reason is not None:
        await _mark(engine, work, None, None)
    await embed_account(engine, config, work, embedder, report, now)
    if config.account_index_min_chunks is not None:
        async with engine.begin() as conn:
            built = await ensure_large_account_indexes(
                conn, config.account_index_min_chunks, [work.account_id]
            )
        for index in built:
            log.info("account_index_built", index=index.index_name, chunks=index.chunks)


async def chunk_account(
    engine: AsyncEngine,
    config: IndexerConfig,
    work: sql.AccountWork,
    embedder: Embedder,
    report: PassReport,
) -> None:
    async with engine.connect() as conn:
        stale = await sql.stale_sessions(
            conn, work.account_id, fingerprint(config.policy, embedder)
        )
    bar = tqdm(stale, desc="chunking", unit="session", disable=_quiet(config), leave=False)
    for session in bar:
        written = await rechunk_session(engine, work.account_id, session, config.policy, embedder)
        if written is not None:
            report.sessions_chunked += 1
            report.chunks_written += written
    async with engine.begin() as conn:
        report.chunks_skipped += await sql.skip_repeated(
            conn, work.account_id, config.repeat, work.identity
        )


async def embed_account(
    engine: AsyncEngine,
    config: IndexerConfig,
    work: sql.AccountWork,
    embedder: Embedder,
    report: PassReport,
    now: datetime,
) -> None:
    summaries_only = work.scope == "summaries_only"
    async with engine.begin() as conn:
        total = await sql.pending_count(conn, work.account_id, summaries_only)
        if total:
            await ensure_model_index(conn, work.identity)
    if not total:
        return
    with tqdm(total=total, desc="embedding", unit="chunk", disable=_quiet(config)) as bar:
        while True:
            embedded, zero, capped = await embed_batch(engine, config, work, embedder, now)
            bar.update(embedded + zero)
            report.zero_vectors_skipped += zero
            if embedded or zero:
                report.batches += 1
                report.chunks_embedded += embedded
            if capped:
                await _mark(engine, work, budget.CAP_REACHED, budget.next_day(now))
                report.degraded[work.account_id] = budget.CAP_REACHED
                log.warning("daily_cap_reached", account_id=str(work.account_id))
                return
            if not embedded and not zero:
                return


async def embed_batch(
    engine: AsyncEngine,
    config: IndexerConfig,
    work: sql.AccountWork,
    embedder: Embedder,
    now: datetime,
) -> tuple[int, int, bool]:
    """Claim, embed and write one batch in one transaction: (chunks embedded, chunks skipped
    for a zero vector, cap reached). A vector without direction is never stored.

    An error or a cancellation anywhere rolls the whole batch back: no vector, no state
    change and no spend is left behind, and the chunks stay pending."""
    summaries_only = work.scope == "summaries_only"
    async with engine.begin() as conn:
        price = embedder.usd_per_1k_tokens
        capped = work.daily_cap_usd is not None and price > 0
        if capped:
            await conn.exec_driver_sql(
                f"SELECT pg_advisory_xact_lock({_CAP_LOCK}, hashtext('{work.account_id}'))"
            )
        claimed = await sql.claim_pending(conn, work.account_id, summaries_only, config.batch_size)
        if not claimed:
            return 0, 0, False
        tokens = [tokens_of(embedder, c.content) for c in claimed]
        room = None
        if capped:
            assert work.daily_cap_usd is not None
            spent = await sql.spent_since(conn, work.account_id, budget.day_start(now))
            room = work.daily_cap_usd - spent
        fits = budget.affordable([budget.batch_cost(n, price) for n in tokens], room)
        batch, units = claimed[:fits], sum(tokens[:fits])
        live: list[bool] = []
        if batch:
            vectors = await asyncio.to_thread(embedder.embed, [c.content for c in batch])
            live = (np.linalg.norm(vectors, axis=1) > 0).tolist()
            await sql.write_vectors(
                conn,
                work.account_id,
                work.identity,
                [c.id for c, ok in zip(batch, live, strict=True) if ok],
                _as_text(vectors[np.asarray(live, dtype=bool)]),
            )
            await sql.skip_chunks(
                conn, work.account_id, [c.id for c, ok in zip(batch, live, strict=True) if not ok]
            )
            await sql.record_usage(
                conn, work.account_id, work.identity, units, budget.batch_cost(units, price)
            )
    return sum(live), len(live) - sum(live), fits < len(claimed)


async def watch(
    engine: AsyncEngine,
    registry: Registry,
    config: IndexerConfig,
    interval_s: float,
    stop: asyncio.Event | None = None,
) -> None:
    """Run passes until stopped; a failed pass is logged and the next one retries."""
    stop = stop or asyncio.Event()
    while not stop.is_set():
        try:
            await index_once(engine, registry, config)
        except Exception:
            log.exception("index_pass_failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=interval_s)


async def _mark(
    engine: AsyncEngine, work: sql.AccountWork, reason: str | None, until: datetime | None
) -> None:
    async with engine.begin() as conn:
        await sql.set_degraded(conn, work.account_id, reason, until)


def _as_text(vectors: np.ndarray) -> list[str]:
    """pgvector's text form; 9 significant digits round-trip a float32."""
    return ["[" + ",".join(f"{x:.9g}" for x in row) + "]" for row in vectors.tolist()]


def _quiet(config: IndexerConfig) -> bool | None:
    return None if config.progress is None else not config.progress
