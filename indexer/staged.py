"""A staged lexical fit (data/next_fits.py) embedded beside the served one, and swapped in
once complete. `index --watch` stages a new fit rather than installing it (indexer/fitting.py):
each pass embeds the account's passages under it into their NEXT slot, the sessions it just
chunked first, then the rest for `backlog_s`, while every comparison reads the served fit's
vectors; the pass that finds none waiting swaps them in, by one transaction."""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import replace
from datetime import datetime
from uuid import UUID

import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from data import fits, next_fits
from data import indexing as sql
from data.account_indexes import register
from data.engine import lift_statement_budget
from data.model_identity import ModelIdentity
from data.model_indexes import ensure_model_index
from data.vector_slots import VectorSlot
from indexer.embedders import Embedder, Registry
from indexer.embedding_pass import embed_account
from indexer.fitting import family
from indexer.lexical import Fit
from indexer.passes import IndexerConfig, PassReport

log = structlog.get_logger(__name__)


async def embed_staged(
    engine: AsyncEngine,
    registry: Registry,
    config: IndexerConfig,
    work: sql.AccountWork,
    report: PassReport,
    now: datetime,
    first: Collection[UUID] = (),
) -> None:
    """The account's passages embedded under its staged fit, if it has one (the sessions in
    `first` before the rest), and the fit swapped in once none waits; the account is in the
    report's backlog while some do, and among those it embedded once swapped (its served
    vectors changed: the hook and the own indexes' builds hear of it). Its seconds are the
    report's `staged_s`."""
    started = time.perf_counter()
    try:
        async with engine.begin() as conn:
            staged = await next_fits.staged_fit(conn, work.account_id)
            if staged is None:
                return
            await next_fits.mark_waiting(conn, work.account_id, work.summaries_only)
        identity = ModelIdentity.parse(staged.identity)
        embedder = await _embedder(engine, registry, work.account_id, identity)
        if embedder is None:  # swapped in or replaced by another indexer meanwhile
            return
        staged_work = replace(work, identity=identity)
        slot = VectorSlot.NEXT
        if await embed_account(engine, config, staged_work, embedder, report, now, slot, first):
            report.backlog.add(work.account_id)
        elif await swap(engine, work, config) is not None:
            report.embedded.add(work.account_id)
    finally:
        report.staged_s += time.perf_counter() - started


async def _embedder(
    engine: AsyncEngine, registry: Registry, account_id: UUID, identity: ModelIdentity
) -> Embedder | None:
    """The staged fit's embedder, kept by this process or made from its weights; None when
    it is no longer the one staged."""
    if (kept := registry.kept(identity)) is not None:
        return kept
    async with engine.connect() as conn:
        staged = await next_fits.staged_fit(conn, account_id, weights=True)
    if staged is None or staged.weights is None or staged.identity != str(identity):
        return None
    return registry.fitted(Fit.from_bytes(staged.sessions, staged.weights))


async def swap(engine: AsyncEngine, work: sql.AccountWork, config: IndexerConfig) -> int | None:
    """The account's staged fit swapped in, by one transaction, unless passages still wait
    under it (another indexer's, or written since); how many passages were swapped (None:
    none was). An account past `account_index_min_chunks` gets its own index of the new
    model registered, and its passages are kept out of the model's shared index (a graph
    insert each, in this transaction): looked up exactly until the index is built beside the
    passes (indexer/worker.build_own_indexes). The new model's shared index is registered
    and built in the same transaction."""
    account, started = work.account_id, time.perf_counter()
    async with engine.begin() as conn:
        # every passage of the account rewritten: 5 s (a request's budget) did not hold for
        # 40,000 passages read cold
        await lift_statement_budget(conn)
        staged = await next_fits.staged_fit(conn, account, lock=True)
        if staged is None:  # another indexer swapped it in
            return None
        if await next_fits.mark_waiting(
            conn, account, work.summaries_only, every=True
        ) or await next_fits.waiting(conn, account):
            return None
        identity = ModelIdentity.parse(staged.identity)
        embedded = await next_fits.embedded_count(conn, account, staged.identity)
        min_chunks = config.account_index_min_chunks
        own = min_chunks is not None and embedded > min_chunks
        if own:
            await register(conn, account, identity, embedded)
        swapped = await next_fits.swap(conn, account, family(), staged.identity, shared=not own)
        # the new model's shared index built here, before the own index's build beside the
        # passes can begin: the next pass's build of it, under SHARE, and that concurrent
        # build each waited for the other (a deadlock, the pass held 18 s)
        await ensure_model_index(conn, identity)
        await sql.skip_repeated(conn, account, config.repeat, identity)
        if str(work.identity) != staged.identity:
            await fits.drop_unused_model(conn, str(work.identity))
    log.info(
        "lexical_fit",
        account_id=str(account),
        identity=staged.identity,
        sessions=staged.sessions,
        swapped=swapped,
        embedded=embedded,
        own_index=own,
        seconds=round(time.perf_counter() - started, 3),
    )
    return swapped
