"""The embedding pass over an account: its waiting chunks claimed in batches, embedded, and
their vectors (and a dense model's windows) written, each batch (vectors, states, spend) in
one transaction, under the account's daily cap."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import datetime
from uuid import UUID

import numpy as np
import structlog
from opentelemetry import trace
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from tqdm import tqdm

from data import indexing as sql
from data import slot_chunks
from data.model_indexes import ensure_model_index
from data.repeats import mark_repeats
from data.vector_slots import VectorSlot
from indexer import billing, spend_cap
from indexer.batches import BatchOutcome, observe_batch
from indexer.embedders import Embedder
from indexer.passes import IndexerConfig, PassReport, mark_degraded
from indexer.providers import EmbeddingFailed
from indexer.vectors import as_text

log = structlog.get_logger(__name__)
tracer = trace.get_tracer(__name__)


async def embed_account(
    engine: AsyncEngine,
    config: IndexerConfig,
    work: sql.AccountWork,
    embedder: Embedder,
    report: PassReport,
    now: datetime,
    slot: VectorSlot = VectorSlot.PRIMARY,
    first: Collection[UUID] = (),
) -> bool:
    """Embed the account's waiting chunks in the slot with `work.identity`, batch by batch:
    the chunks of the sessions `first` names (the ones the pass chunked) before any other,
    then the rest, for `config.backlog_s` at most (at least one batch) when it is set. True
    when chunks were left waiting for the next pass."""
    async with engine.begin() as conn:
        total = await slot_chunks.pending_count(conn, work.account_id, work.summaries_only, slot)
        if total and slot is VectorSlot.PRIMARY:
            await ensure_model_index(conn, work.identity)
    if not total:
        return False
    touched: set[UUID] = set()  # the sessions of the chunks it embedded
    sessions, left = list(first) or None, False
    backlog_from = time.monotonic()
    desc = "embedding" if slot is VectorSlot.PRIMARY else "embedding (dense)"
    with tqdm(total=total, desc=desc, unit="chunk", disable=config.hide_progress) as bar:
        while True:
            with tracer.start_as_current_span("indexer.batch") as span:
                span.set_attribute("similar_sessions.model_identity", str(work.identity))
                span.set_attribute("similar_sessions.account_id", str(work.account_id))
                outcome = await embed_batch(engine, config, work, embedder, now, slot, sessions)
                observe_batch(span, work.identity, outcome)
            touched.update(outcome.sessions)
            bar.update(outcome.embedded + outcome.skipped)
            if sessions is not None and outcome == BatchOutcome():  # those sessions are done
                sessions, backlog_from = None, time.monotonic()
                continue
            if await _counted(engine, work, report, outcome, now):
                break
            if sessions is None and _spent(config, backlog_from):
                left = True
                break
    if touched and slot is VectorSlot.PRIMARY:
        # their repeats marked (data/repeats.py): the HNSW indexes built or merged from now
        # on leave them out
        async with engine.begin() as conn:
            await mark_repeats(conn, work.account_id, touched)
    return left


def _spent(config: IndexerConfig, since: float) -> bool:
    """Whether the pass has spent its time on the account's backlog (never, unset)."""
    return config.backlog_s is not None and time.monotonic() - since >= config.backlog_s


async def _counted(
    engine: AsyncEngine,
    work: sql.AccountWork,
    report: PassReport,
    outcome: BatchOutcome,
    now: datetime,
) -> bool:
    """The batch counted in the pass's report; True when the pass over the account stops
    there: the provider failed, the cap was reached, or nothing was left."""
    report.zero_vectors_skipped += outcome.skipped
    if outcome.embedded or outcome.skipped:
        report.batches += 1
        report.chunks_embedded += outcome.embedded
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
        return True  # the provider is down or refusing: the next pass tries again
    if outcome.capped:
        await mark_degraded(engine, work, spend_cap.CAP_REACHED, spend_cap.next_day(now))
        report.degraded[work.account_id] = spend_cap.CAP_REACHED
        log.warning("daily_cap_reached", account_id=str(work.account_id))
        return True
    return not outcome.embedded and not outcome.skipped


async def embed_dense(
    engine: AsyncEngine,
    config: IndexerConfig,
    work: sql.AccountWork,
    embedder: Embedder,
    report: PassReport,
    now: datetime,
    first: Collection[UUID] = (),
) -> bool:
    """The second pass: the same passages embedded by the account's dense model, with its
    own batches, spend and cap (the account's cap covers both models); True when chunks were
    left for the next pass."""
    assert work.dense is not None
    async with engine.begin() as conn:
        await sql.forget_other_dense_models(conn, work.account_id, work.dense)
    dense_work = replace(work, identity=work.dense)
    return await embed_account(
        engine, config, dense_work, embedder, report, now, VectorSlot.DENSE, first
    )


async def embed_batch(
    engine: AsyncEngine,
    config: IndexerConfig,
    work: sql.AccountWork,
    embedder: Embedder,
    now: datetime,
    slot: VectorSlot = VectorSlot.PRIMARY,
    sessions: Sequence[UUID] | None = None,
) -> BatchOutcome:
    """Claim (of the named sessions only, when named), embed and write one batch in one
    transaction; a vector without direction is never stored (its chunk is `skipped`).

    An error or a cancellation anywhere rolls the whole batch back: no vector, no state
    change and no spend is left behind, and the chunks stay pending. A provider's failure
    (EmbeddingFailed, after its retries) writes only the attempt and error on the claimed
    chunks, in the same transaction."""
    async with engine.begin() as conn:
        price = embedder.usd_per_1k_tokens
        if capped := work.daily_cap_usd is not None and price > 0:
            await sql.lock_account_spend(conn, work.account_id)
        claimed = await slot_chunks.claim_pending(
            conn, work.account_id, work.summaries_only, config.batch_size, slot, sessions
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
                failed = await slot_chunks.record_failure(
                    conn, work.account_id, ids, str(exc), config.max_attempts, slot
                )
                return BatchOutcome(error=str(exc), attempted=len(batch), failed=failed)
            units, cost = embedded.tokens, spend_cap.batch_cost(embedded.tokens, price)
            skipped = await _write(conn, work, ids, embedded, slot)
            await sql.record_usage(conn, work.account_id, work.identity, units, cost)
    # Cut short by the cap: stop, unless the batch cost less than its bound (a metered
    # embedder's bill), so the next batch may still fit more.
    capped = fits < len(claimed) and (not batch or units >= sum(tokens[:fits]))
    done = frozenset(c.session_id for c in batch)
    return BatchOutcome(len(batch) - skipped, capped, units, cost, skipped=skipped, sessions=done)


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
    await slot_chunks.write_vectors(conn, work.account_id, work.identity, kept, texts, slot)
    if embedded.windows is not None and slot is VectorSlot.DENSE:
        windows = {
            chunk: as_text(rows)
            for chunk, rows, ok in zip(ids, embedded.windows, live.tolist(), strict=True)
            if ok
        }
        await slot_chunks.write_windows(conn, work.account_id, windows)
    await slot_chunks.skip_chunks(
        conn, work.account_id, [c for c in ids if c not in set(kept)], slot
    )
    return len(ids) - len(kept)
