"""The indexing worker's pass over the accounts (its loop: indexer/watching.py). A pass
chunks an account's stale sessions, skips repeated content, then embeds its pending clear
chunks with its model and its dense one (indexer/embedding_pass.py), and builds or merges
its own indexes."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from uuid import UUID

import structlog
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine
from tqdm import tqdm

from data import chunk_writes
from data import indexing as sql
from data.account_indexes import BuiltIndex, ensure_large_account_indexes, without_own_index
from data.engine import lift_statement_budget
from data.model_identity import ModelIdentity
from data.own_index_rebuilds import fit_again, rebuild_concurrently
from data.own_index_tails import Tail, merge_due
from indexer import lexical, spend_cap
from indexer.embedders import Embedder, EmbedderUnavailable, Registry
from indexer.embedding_pass import embed_account, embed_dense
from indexer.fitting import Refits, ensure_fit
from indexer.passes import IndexerConfig, PassReport, mark_degraded
from indexer.rechunk import fingerprint, rechunk_session
from indexer.staged import embed_staged
from indexer.whole_passages import WholePassages
from observability import metrics
from transfer.live import make_sessions

log = structlog.get_logger(__name__)
# sessions chunked at once, each in its own transaction on its own connection: their round
# trips to the database overlap (of the engine's pool of 5, the watch's listener holds one and
# a merge beside the passes may hold another; fewer with a smaller pool)
CHUNKERS = 3


async def index_once(
    engine: AsyncEngine,
    registry: Registry,
    config: IndexerConfig,
    *,
    account_ids: list[UUID] | None = None,
    now: datetime | None = None,
    changed_only: bool = False,
    merge: bool = True,
    refits: Refits | None = None,
) -> PassReport:
    """One pass over every account with an enabled setting (or the ones named), after the
    export requests the live receiver acknowledged are made into sessions; then the own
    indexes' tails due for a merge, once every account's chunks are embedded (a merge builds
    a whole index again, which no other account's embedding waits on). `changed_only` (a
    pass the live receiver woke): of the accounts' sessions, only those it changed are
    chunked, and only their contents counted for repeats; a full pass looks at them all.
    `merge` False: the own indexes' first builds and their tails' merges are left to the
    caller (`watch` runs them beside its passes, build_own_indexes and merge_tails).
    `refits`: new lexical fits are built beside the passes (`watch`), not within this one."""
    report, began = PassReport(), time.perf_counter()
    await make_sessions(engine, timedelta(seconds=config.session_idle_s), account_ids)
    report.making_s = time.perf_counter() - began
    async with engine.connect() as conn:
        accounts = await sql.enabled_accounts(conn, account_ids)
    for work in accounts:
        report.accounts += 1
        at = now or datetime.now(UTC)
        await index_account(
            engine, registry, config, work, report, at, changed_only, refits, builds=merge
        )
    if merge and config.account_index_min_chunks is not None and accounts:
        merged, started = [work.account_id for work in accounts], time.perf_counter()
        report.tails_merged += await merge_tails(engine, config.account_index_min_chunks, merged)
        report.indexes_s += time.perf_counter() - started
    report.seconds = time.perf_counter() - began
    shown = {
        k: round(v, 3) if isinstance(v, float) else v
        for k, v in vars(report).items()
        if k not in ("degraded", "embedded", "backlog")
    }
    log.info("index_pass", full=account_ids is None, backlog=len(report.backlog), **shown)
    return report


async def index_account(
    engine: AsyncEngine,
    registry: Registry,
    config: IndexerConfig,
    work: sql.AccountWork,
    report: PassReport,
    now: datetime,
    changed_only: bool = False,
    refits: Refits | None = None,
    builds: bool = True,
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
    started = time.perf_counter()
    chunked = await chunk_account(engine, config, work, embedder, report, changed_only)
    report.chunking_s += time.perf_counter() - started
    started = time.perf_counter()
    if fitted:
        work, embedder = await ensure_fit(
            engine,
            registry,
            work,
            (config.refit_growth_percent, config.refit_min_interval_s),
            config.repeat,
            config.template_min_sessions,
            growth_checked=not changed_only,
            beside=refits,
        )
    report.fitting_s += time.perf_counter() - started
    capped = work.degraded_reason == spend_cap.CAP_REACHED
    if capped and work.degraded_until is not None and work.degraded_until > now:
        report.degraded[work.account_id] = spend_cap.CAP_REACHED
        return
    if work.degraded_reason is not None:
        await mark_degraded(engine, work, None, None)
    if not await _embed(engine, config, work, (embedder, dense), report, now, chunked):
        return
    # a fit staged (by a watch) embedded, and swapped in once complete, by any pass
    await embed_staged(engine, registry, config, work, report, now, chunked)
    if builds:  # else `watch` builds them beside its passes (build_own_indexes)
        await _build_large_index(engine, config, work.account_id, report)


async def _embed(
    engine: AsyncEngine,
    config: IndexerConfig,
    work: sql.AccountWork,
    embedders: tuple[Embedder, Embedder | None],
    report: PassReport,
    now: datetime,
    chunked: list[UUID],
) -> bool:
    """The account's waiting chunks embedded by its model, then by its dense one, the chunks
    of the sessions just chunked first (the account is in `report.backlog` when the pass
    left some waiting); False when the provider refused the account's key or model."""
    (embedder, dense), embedded = embedders, report.chunks_embedded
    started = time.perf_counter()
    try:
        left = await embed_account(engine, config, work, embedder, report, now, first=chunked)
        if dense is not None and work.dense is not None:
            left |= await embed_dense(engine, config, work, dense, report, now, chunked)
        if left:
            report.backlog.add(work.account_id)
    except EmbedderUnavailable as exc:
        await _unavailable(engine, work, report, exc)
        return False
    finally:
        report.embedding_s += time.perf_counter() - started
        if report.chunks_embedded > embedded:
            report.embedded.add(work.account_id)
    return True


async def _build_large_index(
    engine: AsyncEngine, config: IndexerConfig, account_id: UUID, report: PassReport
) -> None:
    """The account's own index of each model it now has more than `account_index_min_chunks`
    chunks of, in the pass (its seconds counted in the report's `indexes_s`), once every
    chunk is embedded (a bounded pass leaves the rest to the next one)."""
    min_chunks = config.account_index_min_chunks
    if min_chunks is None or account_id in report.backlog:
        return
    started = time.perf_counter()
    async with engine.begin() as conn:
        built = await ensure_large_account_indexes(conn, min_chunks, [account_id], fit=False)
    for index in built:  # fitted once the build's lock on the table is released
        fitted = await fit_again(engine, index.account_id, index.identity)
        _built(replace(index, ef_search=None if fitted is None else fitted.ef_search))
    report.indexes_s += time.perf_counter() - started


async def build_own_indexes(engine: AsyncEngine, min_chunks: int, account_ids: list[UUID]) -> int:
    """The accounts' own index of each model they have more than min_chunks chunks of and no
    index of, built beside the passes (`watch`): concurrently and by one process, where a
    pass's build holds every writer of the table (16 s at 33,000 chunks, after a refit). Not
    while more than min_chunks of the account's chunks wait to be embedded (a re-embedding
    after a new fit): they would all be its tail, looked up exactly. How many were built."""
    async with engine.connect() as conn:
        await lift_statement_budget(conn)
        missing = await without_own_index(conn, min_chunks, account_ids, most_waiting=min_chunks)
    count = 0
    for account_id, model in missing:  # one account's failing build does not hold up the next
        try:
            made = await rebuild_concurrently(engine, account_id, ModelIdentity.parse(model), 0)
        except DBAPIError as exc:
            log.warning("account_index_build_failed", account_id=str(account_id), error=str(exc))
            continue
        if made is not None:
            _built(made)
            count += 1
    return count


def _built(index: BuiltIndex) -> None:
    log.info(
        "account_index_built",
        index=index.index_name,
        chunks=index.chunks,
        seconds=round(index.seconds, 3),
        ef_search=index.ef_search,
    )


async def merge_tails(engine: AsyncEngine, min_rows: int, account_ids: list[UUID]) -> int:
    """The accounts' own indexes whose tails are due, built again over all their rows
    (data/own_index_tails.py), in the background: once each index has rested, by one
    process; a merge that fails leaves its tail, retried next pass."""

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
            made = await merge_due(engine, min_rows, [account_id], on_merge=merged, background=True)
            count += len(made)
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


async def chunk_account(
    engine: AsyncEngine,
    config: IndexerConfig,
    work: sql.AccountWork,
    embedder: Embedder,
    report: PassReport,
    changed_only: bool = False,
) -> list[UUID]:
    """Cut the account's stale sessions (or only those the live receiver changed) into
    chunks for its configured model: a dense model beside it embeds the same passages
    (reading as much of each as it can), so that the configured model's comparisons are the
    same with or without one. The sessions it chunked."""
    print_ = fingerprint(config.policy, embedder)
    stale = await _stale(engine, work.account_id, print_, changed_only)
    bar = tqdm(
        total=len(stale), desc="chunking", unit="session", leave=False, disable=config.hide_progress
    )
    chunked: list[UUID] = []
    waiting = iter(stale)  # shared by the chunkers: each session is taken once

    async def chunker() -> None:
        for session in waiting:
            written = await rechunk_session(
                engine, work.account_id, session, config.policy, embedder
            )
            bar.update(1)
            if written is not None:
                chunked.append(session.id)
                report.sessions_chunked += 1
                report.chunks_written += written

    with bar:
        async with asyncio.TaskGroup() as chunkers:
            for _ in range(min(_chunkers(engine), len(stale))):
                chunkers.create_task(chunker())
    if changed_only and not chunked:
        return chunked
    async with engine.begin() as conn:
        skipped = await sql.skip_repeated(
            conn, work.account_id, config.repeat, work.identity, chunked if changed_only else None
        )
    report.chunks_skipped += skipped
    metrics.INDEXER_CHUNKS.labels("skipped").inc(skipped)
    return chunked


async def _stale(
    engine: AsyncEngine, account_id: UUID, print_: str, changed_only: bool
) -> list[chunk_writes.StaleSession]:
    """The account's sessions to chunk: the stale ones, or only those the receiver changed."""
    async with engine.connect() as conn:
        if changed_only:
            return await chunk_writes.changed_sessions(conn, account_id)
        return await chunk_writes.stale_sessions(conn, account_id, print_)


def _chunkers(engine: AsyncEngine) -> int:
    """CHUNKERS, or fewer when the engine's pool is smaller than that, a listener and a
    merge's connection."""
    size = getattr(engine.pool, "size", None)
    return CHUNKERS if size is None else max(1, min(CHUNKERS, size() - 2))


async def _unavailable(
    engine: AsyncEngine, work: sql.AccountWork, report: PassReport, exc: EmbedderUnavailable
) -> None:
    log.warning("embedder_unavailable", account_id=str(work.account_id), reason=str(exc))
    await mark_degraded(engine, work, spend_cap.EMBEDDER_UNAVAILABLE, None)
    report.degraded[work.account_id] = spend_cap.EMBEDDER_UNAVAILABLE
