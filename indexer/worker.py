"""The indexing worker: chunk stale sessions, skip repeated content, then embed pending
clear chunks in batches, each batch (vectors, states, spend) in one transaction."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from datetime import UTC, datetime
from uuid import UUID

import numpy as np
import structlog
from opentelemetry import trace
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from tqdm import tqdm

from data import chunk_writes
from data import indexing as sql
from data.account_indexes import BuiltIndex, ensure_large_account_indexes
from data.model_indexes import ensure_model_index
from data.own_index_rebuilds import Tail, fit_again, merge_due
from data.vector_slots import VectorSlot
from indexer import billing, lexical, spend_cap
from indexer.batches import BatchOutcome, observe_batch
from indexer.embedders import Embedder, EmbedderUnavailable, Registry
from indexer.fitting import ensure_fit
from indexer.passes import IndexerConfig, PassReport, mark_degraded
from indexer.providers import EmbeddingFailed
from indexer.rechunk import fingerprint, rechunk_session
from indexer.vectors import as_text
from indexer.whole_passages import WholePassages
from observability import metrics

log = structlog.get_logger(__name__)
tracer = trace.get_tracer(__name__)


async def index_once(
    engine: AsyncEngine,
    registry: Registry,
    config: IndexerConfig,
    *,
    account_ids: list[UUID] | None = None,
    now: datetime | None = None,
) -> PassReport:
    """One pass over every account with an enabled setting (or the ones named); then the
    own indexes' tails due for a merge, once every account's chunks are embedded (a merge
    builds a whole index again, which no other account's embedding waits on)."""
    report = PassReport()
    async with engine.connect() as conn:
        accounts = await sql.enabled_accounts(conn, account_ids)
    for work in accounts:
        report.accounts += 1
        await index_account(engine, registry, config, work, report, now or datetime.now(UTC))
    if config.account_index_min_chunks is not None and accounts:
        merged = [work.account_id for work in accounts]
        report.tails_merged += await _merge_tails(engine, config.account_index_min_chunks, merged)
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
        await _unavailable(engine, work, report, exc)
        return
    dense = _dense_embedder(registry, work, report)
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
    capped = work.degraded_reason == spend_cap.CAP_REACHED
    if capped and work.degraded_until is not None and work.degraded_until > now:
        report.degraded[work.account_id] = spend_cap.CAP_REACHED
        return
    if work.degraded_reason is not None:
        await mark_degraded(engine, work, None, None)
    try:
        await embed_account(engine, config, work, embedder, report, now)
        if dense is not None and work.dense is not None:
            await _embed_dense(engine, config, work, dense, report, now)
    except EmbedderUnavailable as exc:  # the provider refused the account's key or model
        await _unavailable(engine, work, report, exc)
        return
    if config.account_index_min_chunks is not None:
        await _build_large_index(engine, config.account_index_min_chunks, work.account_id)


async def _build_large_index(engine: AsyncEngine, min_chunks: int, account_id: UUID) -> None:
    """The account's own index of each model it now has more than min_chunks chunks of."""
    async with engine.begin() as conn:
        built = await ensure_large_account_indexes(conn, min_chunks, [account_id], fit=False)
    for index in built:  # fitted once the build's lock on the table is released
        fitted = await fit_again(engine, index.account_id, index.identity)
        log.info(
            "account_index_built",
            index=index.index_name,
            chunks=index.chunks,
            ef_search=None if fitted is None else fitted.ef_search,
        )


async def _merge_tails(engine: AsyncEngine, min_rows: int, account_ids: list[UUID]) -> int:
    """The accounts' own indexes whose tails are due, built again over all their rows
    (data/own_index_rebuilds.py); a merge that fails leaves its tail, retried next pass."""

    def merged(tail: Tail, made: BuiltIndex) -> None:
        log.info(
            "account_index_merged",
            index=made.index_name,
            tail=tail.rows,
            chunks=made.chunks,
            seconds=round(made.seconds, 3),
            ef_search=made.ef_search,
        )

    count = 0
    for account_id in account_ids:  # one account's failing merge does not hold up the next
        try:
            count += len(await merge_due(engine, min_rows, [account_id], on_merge=merged))
        except DBAPIError as exc:
            log.warning("account_index_merge_failed", account_id=str(account_id), error=str(exc))
    return count


def _dense_embedder(
    registry: Registry, work: sql.AccountWork, report: PassReport
) -> Embedder | None:
    """The embedder of the account's dense model, if it names one this indexer has."""
    if work.dense is None:
        return None
    try:
        return WholePassages(registry.get(work.dense))
    except EmbedderUnavailable as exc:
        log.warning("dense_embedder_unavailable", account_id=str(work.account_id), reason=str(exc))
        report.degraded[work.account_id] = spend_cap.EMBEDDER_UNAVAILABLE
        return None


async def _embed_dense(
    engine: AsyncEngine,
    config: IndexerConfig,
    work: sql.AccountWork,
    embedder: Embedder,
    report: PassReport,
    now: datetime,
) -> None:
    """The second pass: the same passages embedded by the account's dense model, with its
    own batches, spend and cap (the account's cap covers both models)."""
    assert work.dense is not None
    async with engine.begin() as conn:
        await sql.forget_other_dense_models(conn, work.account_id, work.dense)
    dense_work = replace(work, identity=work.dense)
    await embed_account(engine, config, dense_work, embedder, report, now, VectorSlot.DENSE)


async def chunk_account(
    engine: AsyncEngine,
    config: IndexerConfig,
    work: sql.AccountWork,
    embedder: Embedder,
    report: PassReport,
) -> None:
    """Cut the account's stale sessions into chunks for its configured model: a dense model
    beside it embeds the same passages (reading as much of each as it can), so that the
    configured model's comparisons are the same with or without one."""
    async with engine.connect() as conn:
        stale = await chunk_writes.stale_sessions(
            conn, work.account_id, fingerprint(config.policy, embedder)
        )
    bar = tqdm(stale, desc="chunking", unit="session", disable=config.hide_progress, leave=False)
    for session in bar:
        written = await rechunk_session(engine, work.account_id, session, config.policy, embedder)
        if written is not None:
            report.sessions_chunked += 1
            report.chunks_written += written
    async with engine.begin() as conn:
        skipped = await sql.skip_repeated(conn, work.account_id, config.repeat, work.identity)
    report.chunks_skipped += skipped
    metrics.INDEXER_CHUNKS.labels("skipped").inc(skipped)


async def embed_account(
    engine: AsyncEngine,
    config: IndexerConfig,
    work: sql.AccountWork,
    embedder: Embedder,
    report: PassReport,
    now: datetime,
    slot: VectorSlot = VectorSlot.PRIMARY,
) -> None:
    """Embed the account's waiting chunks in the slot with `work.identity`, batch by batch."""
    summaries_only = work.scope == "summaries_only"
    async with engine.begin() as conn:
        total = await sql.pending_count(conn, work.account_id, summaries_only, slot)
        if total and slot is VectorSlot.PRIMARY:
            await ensure_model_index(conn, work.identity)
    if not total:
        return
    desc = "embedding" if slot is VectorSlot.PRIMARY else "embedding (dense)"
    with tqdm(total=total, desc=desc, unit="chunk", disable=config.hide_progress) as bar:
        while True:
            with tracer.start_as_current_span("indexer.batch") as span:
                span.set_attribute("similar_sessions.model_identity", str(work.identity))
                span.set_attribute("similar_sessions.account_id", str(work.account_id))
                outcome = await embed_batch(engine, config, work, embedder, now, slot)
                observe_batch(span, work.identity, outcome)
            embedded, capped = outcome.embedded, outcome.capped
            bar.update(embedded + outcome.skipped)
            report.zero_vectors_skipped += outcome.skipped
            if embedded or outcome.skipped:
                report.batches += 1
                report.chunks_embedded += embedded
            if outcome.error is not None:
                report.batches_failed += 1
                report.chunks_failed += outcome.failed
                log.warning(
                    "embedding_batch_failed",
                    account_id=str(work.account_id),
                    chunks=outcome.attempted,
                    now_failed=outcome.failed,
                    error=outcome.error,
                )
                return  # the provider is down or refusing: the next pass tries again
            if capped:
                await mark_degraded(engine, work, spend_cap.CAP_REACHED, spend_cap.next_day(now))
                report.degraded[work.account_id] = spend_cap.CAP_REACHED
                log.warning("daily_cap_reached", account_id=str(work.account_id))
                return
            if not embedded and not outcome.skipped:
                return


async def embed_batch(
    engine: AsyncEngine,
    config: IndexerConfig,
    work: sql.AccountWork,
    embedder: Embedder,
    now: datetime,
    slot: VectorSlot = VectorSlot.PRIMARY,
) -> BatchOutcome:
    """Claim, embed and write one batch in one transaction; a vector without direction is
    never stored (its chunk is `skipped`).

    An error or a cancellation anywhere rolls the whole batch back: no vector, no state
    change and no spend is left behind, and the chunks stay pending. A provider's failure
    (EmbeddingFailed, after its retries) writes only the attempt and error on the claimed
    chunks, in the same transaction."""
    summaries_only = work.scope == "summaries_only"
    async with engine.begin() as conn:
        price = embedder.usd_per_1k_tokens
        capped = work.daily_cap_usd is not None and price > 0
        if capped:
            await sql.lock_account_spend(conn, work.account_id)
        claimed = await sql.claim_pending(
            conn, work.account_id, summaries_only, config.batch_size, slot
        )
        if not claimed:
            return BatchOutcome()
        tokens = [billing.token_bound(embedder, c.content) for c in claimed]
        room = await _room(conn, work, now) if capped else None
        fits = spend_cap.affordable([spend_cap.batch_cost(n, price) for n in tokens], room)
        batch, units, cost, skipped = claimed[:fits], 0, 0.0, 0
        if batch:
            ids = [c.id for c in batch]
            try:
                embedded = await asyncio.to_thread(
                    billing.embed_metered, embedder, [c.content for c in batch]
                )
            except EmbeddingFailed as exc:
                failed = await sql.record_failure(
                    conn, work.account_id, ids, str(exc), config.max_attempts, slot
                )
                return BatchOutcome(error=str(exc), attempted=len(batch), failed=failed)
            units, cost = embedded.tokens, spend_cap.batch_cost(embedded.tokens, price)
            skipped = await _write(conn, work, ids, embedded, slot)
            await sql.record_usage(conn, work.account_id, work.identity, units, cost)
    # Cut short by the cap: stop, unless the batch cost less than its bound (a metered
    # embedder's bill), so the next batch may still fit more.
    capped = fits < len(claimed) and (not batch or units >= sum(tokens[:fits]))
    return BatchOutcome(len(batch) - skipped, capped, units, cost, skipped=skipped)


async def _room(conn: AsyncConnection, work: sql.AccountWork, now: datetime) -> float:
    """What the account may still spend today (its cap covers both of its models)."""
    assert work.daily_cap_usd is not None
    spent = await sql.spent_since(conn, work.account_id, spend_cap.day_start(now))
    return work.daily_cap_usd - spent


async def _write(
    conn: AsyncConnection,
    work: sql.AccountWork,
    ids: list[UUID],
    embedded: billing.Embedding,
    slot: VectorSlot,
) -> int:
    """Store the vectors with a direction, and the windows' vectors of a chunk read in
    several; a vector without one (nothing the embedder could read) is never stored: its
    chunk is `skipped` in the slot. The number skipped."""
    vectors = embedded.vectors
    live = np.linalg.norm(vectors, axis=1) > 0
    kept = [chunk for chunk, ok in zip(ids, live.tolist(), strict=True) if ok]
    texts = as_text(vectors[live])
    await sql.write_vectors(conn, work.account_id, work.identity, kept, texts, slot)
    if embedded.windows is not None and slot is VectorSlot.DENSE:
        windows = {
            chunk: as_text(rows)
            for chunk, rows, ok in zip(ids, embedded.windows, live.tolist(), strict=True)
            if ok
        }
        await sql.write_windows(conn, work.account_id, windows)
    await sql.skip_chunks(conn, work.account_id, [c for c in ids if c not in set(kept)], slot)
    return len(ids) - len(kept)


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


async def _unavailable(
    engine: AsyncEngine, work: sql.AccountWork, report: PassReport, exc: EmbedderUnavailable
) -> None:
    log.warning("embedder_unavailable", account_id=str(work.account_id), reason=str(exc))
    await mark_degraded(engine, work, spend_cap.EMBEDDER_UNAVAILABLE, None)
    report.degraded[work.account_id] = spend_cap.EMBEDDER_UNAVAILABLE
