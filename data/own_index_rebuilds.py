"""An account's own index kept in one pass as rows come (issue #29).

pgvector inserts a row into an HNSW graph on disk one at a time: at m = 16 and
ef_construction 200, about 5-7 ms a row here, where a build in memory costs under 1 ms a row
of the whole graph. So before a file's chunks are written, the accounts it takes past the
exact-scan size have their own index registered (their rows then stay out of the shared
index, and the index is built after them in one pass, in the file's transaction). Rows
written to an account once its index is built are the index's tail (data/account_indexes.py):
looked up exactly beside it, until a merge (merge_concurrently) builds the index again over
all of them under its other name, concurrently, and drops the old one; a tail is merged once
it is `due` (data/own_index_tails.py: by the indexer after its pass, `similar-sessions
merge-indexes`, or the import with SIMILAR_SESSIONS_IMPORT_REBUILDS_OWN_INDEX).

An index built before migration 0012 has no watermark and takes rows into its graph; with
that setting, a file bringing it at least REBUILD_SHARE of its rows drops it, to be built
again after the transaction commits, concurrently (the account's comparisons take the exact
path until it is valid). The drop holds an ACCESS EXCLUSIVE lock on session_chunks until the
file's commit, so every read of every account waits meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from data import ef_fits
from data.account_indexes import (
    INDEX_TTL_S,
    BuiltIndex,
    account_index_name,
    account_predicate,
    fit_own_index,
    merged_name,
    rebuild_lock_key,
    register,
    valid_account_index,
    valid_own_index,
    written_so_far,
)
from data.model_identity import ModelIdentity
from data.model_indexes import BUILT_KIND, build_concurrently

# A file adding at least this share of an account's comparable rows of a model rebuilds its
# own index instead of inserting into it: one pass over all rows (about 1 ms a row) against
# the new rows one by one (about 5 ms each), measured with bench.importing.
REBUILD_SHARE = 0.2
# How long the drop may wait for the table (it waits for every statement reading it, and
# holds up those after it): past this the file's rows go into the index one by one.
DROP_LOCK_TIMEOUT_MS = 2000
LOCK_NOT_AVAILABLE = "55P03"
# How long an index moved to another kind is kept after the new one is registered: every
# process reads the indexes' kinds again within INDEX_TTL_S, and orders by the old kind's
# expression until then.
MOVE_GRACE_S = INDEX_TTL_S + 5.0


@dataclass(frozen=True, slots=True)
class OwnIndexPlan:
    """The own indexes a file's transaction dropped, to build again after it commits."""

    rebuilt: tuple[tuple[UUID, ModelIdentity], ...] = ()
    # own indexes the file brings REBUILD_SHARE of their rows or more to, inserted into: their
    # ef_search is fitted again after the commit (data/ef_fits.py)
    grown: tuple[tuple[UUID, ModelIdentity], ...] = ()
    # own indexes with a watermark the file writes rows to: their tail, merged by the
    # indexer (or by the import, with `rebuild`) when merge_due
    tails: tuple[tuple[UUID, ModelIdentity], ...] = ()

    @property
    def deferred(self) -> frozenset[tuple[UUID, str]]:
        """(account, model identity) of each, as ensure_large_account_indexes leaves out."""
        return frozenset((account_id, str(identity)) for account_id, identity in self.rebuilt)


async def plan_own_indexes(
    conn: AsyncConnection,
    min_chunks: int,
    incoming: list[tuple[UUID, str, int, int]],
    rebuild: bool,
) -> OwnIndexPlan:
    """Before the chunks of `incoming` (account, model, new comparable rows, rows it has)
    are written: register the own index of each the file takes past min_chunks (its rows
    stay out of the shared index; ensure_large_account_indexes builds it after them); with
    `rebuild`, drop the own index (one built before migration 0012, without a watermark)
    each gets REBUILD_SHARE of its rows or more from the file. The rows of an index with a
    watermark are its tail: nothing to do before they are written."""
    rebuilt, grown, tails = [], [], []
    for account_id, model, new, existing in incoming:
        if existing + new <= min_chunks:
            continue  # the exact path's: no own index to keep
        identity = ModelIdentity.parse(model)
        own = await valid_own_index(conn, account_id, identity)
        if own is None:
            await register(conn, account_id, identity, existing + new)
        elif own.watermark is not None:
            tails.append((account_id, identity))
        elif new >= REBUILD_SHARE * (existing + new):
            if rebuild and await _dropped(conn, own.name):
                rebuilt.append((account_id, identity))
            else:
                grown.append((account_id, identity))
    return OwnIndexPlan(tuple(rebuilt), tuple(grown), tuple(tails))


async def _dropped(conn: AsyncConnection, name: str) -> bool:
    """Drop the index in the transaction (its lock on the table lasts until the commit),
    unless the table cannot be had within DROP_LOCK_TIMEOUT_MS."""
    previous = (await conn.execute(text("SELECT current_setting('lock_timeout')"))).scalar_one()
    savepoint = await conn.begin_nested()
    try:
        await _lock_timeout(conn, str(DROP_LOCK_TIMEOUT_MS))
        await conn.execute(text(f"DROP INDEX {name}"))
        await _lock_timeout(conn, previous)
    except DBAPIError as exc:
        await savepoint.rollback()
        if getattr(exc.orig, "sqlstate", None) != LOCK_NOT_AVAILABLE:
            raise
        return False
    await savepoint.commit()
    return True


async def _lock_timeout(conn: AsyncConnection, value: str) -> None:
    await conn.execute(text("SELECT set_config('lock_timeout', :v, true)"), {"v": value})


async def rebuild_concurrently(
    engine: AsyncEngine, account_id: UUID, identity: ModelIdentity, workers: int | None = None
) -> BuiltIndex | None:
    """Build the account's own index again with CREATE INDEX CONCURRENTLY, outside any
    transaction; None when a valid one exists (another process built it meanwhile).
    `workers` as merge_concurrently's."""
    name = account_index_name(account_id, identity)
    async with maintenance(engine, _lock_key(account_id, identity)) as conn:
        if await valid_account_index(conn, account_id, identity) is not None:
            return None
        await _parallel_workers(conn, workers)
        await conn.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {name}"))  # invalid
        chunks, seconds = await _build_concurrently(conn, account_id, identity, name)
    return await _fitted(engine, account_id, identity, name, chunks, seconds)


async def merge_concurrently(
    engine: AsyncEngine,
    account_id: UUID,
    identity: ModelIdentity,
    grace_s: float = MOVE_GRACE_S,
    workers: int | None = None,
) -> BuiltIndex | None:
    """The account's own index built again over all its rows (its tail merged in), under its
    other name, as BUILT_KIND, concurrently: the old one serves the account's comparisons,
    with the tail looked up exactly beside it, until the new one is registered; then it is
    dropped, `grace_s` later when its kind was another (every process has read the new kind
    by then, data/account_indexes.INDEX_TTL_S). None when the account has no valid own index
    of the model. `workers`: the parallel workers the build may take besides its own process
    (None: the server's max_parallel_maintenance_workers; 0 for a merge beside a stream,
    which would otherwise hold every core of a small machine while it builds)."""
    async with maintenance(engine, _lock_key(account_id, identity)) as conn:
        own = await valid_own_index(conn, account_id, identity)
        if own is None:
            return None
        await _parallel_workers(conn, workers)
        name = merged_name(own.name, account_id, identity)
        await conn.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {name}"))  # a failed merge's
        chunks, seconds = await _build_concurrently(conn, account_id, identity, name)
        if own.kind is not BUILT_KIND:
            await asyncio.sleep(grace_s)
        await conn.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {own.name}"))
    return await _fitted(engine, account_id, identity, name, chunks, seconds)


async def _parallel_workers(conn: AsyncConnection, workers: int | None) -> None:
    """The parallel workers a build on the maintenance connection may take (None: the
    server's setting); `maintenance` resets it."""
    if workers is not None:
        await conn.execute(
            text("SELECT set_config('max_parallel_maintenance_workers', :n, false)"),
            {"n": str(workers)},
        )


def _lock_key(account_id: UUID, identity: ModelIdentity) -> str:
    """The account's index's rebuild lock: one build of it at a time (a rebuild, a merge, a
    move, or ensure_large_account_indexes, which leaves it alone)."""
    return rebuild_lock_key(account_index_name(account_id, identity))


@asynccontextmanager
async def maintenance(engine: AsyncEngine, lock: str) -> AsyncIterator[AsyncConnection]:
    """A connection outside any transaction (a concurrent build cannot run in one), without
    a statement timeout, holding the advisory lock of this key (one build of an index at a
    time)."""
    key = {"k": lock}
    async with engine.connect() as pooled:
        conn = await pooled.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(text("SET statement_timeout = 0"))  # the lock may wait for a build
        await conn.execute(text("SELECT pg_advisory_lock(hashtext(:k))"), key)
        try:
            yield conn
        finally:
            if not conn.invalidated:  # else it is closed, its settings and lock gone with it
                await _reset(conn, key)


async def _reset(conn: AsyncConnection, key: dict[str, str]) -> None:
    """A maintenance connection's settings reset and its advisory lock let go."""
    await conn.execute(text("RESET statement_timeout"))
    await conn.execute(text("RESET maintenance_work_mem"))
    await conn.execute(text("RESET max_parallel_maintenance_workers"))
    await conn.execute(text("SELECT pg_advisory_unlock(hashtext(:k))"), key)


async def _build_concurrently(
    conn: AsyncConnection, account_id: UUID, identity: ModelIdentity, name: str
) -> tuple[int, float]:
    """Build the index `name` over the account's rows written so far, concurrently, and
    register it (with its mark): (its chunks, the build's seconds). Rows written during the
    build are numbered past the mark: they are the new index's tail."""
    watermark = await written_so_far(conn)
    predicate = account_predicate(account_id, identity, watermark=watermark)
    chunks, seconds = await build_concurrently(conn, name, identity, predicate)
    await register(conn, account_id, identity, chunks, watermark, name, BUILT_KIND, seconds)
    return chunks, seconds


async def _fitted(
    engine: AsyncEngine,
    account_id: UUID,
    identity: ModelIdentity,
    name: str,
    chunks: int,
    seconds: float,
) -> BuiltIndex:
    fitted = await fit_again(engine, account_id, identity)
    ef_search = None if fitted is None else fitted.ef_search
    return BuiltIndex(account_id, identity, name, chunks, seconds, ef_search)


async def fit_again(
    engine: AsyncEngine, account_id: UUID, identity: ModelIdentity
) -> ef_fits.EfFit | None:
    """Fit the ef_search of the account's own index of the model again, in a transaction of
    its own (after a build concurrently, or a file that grew it); None without a valid one."""
    async with engine.begin() as conn:
        if await valid_account_index(conn, account_id, identity) is None:
            return None
        return await fit_own_index(conn, account_id, identity)


Fitted = tuple[UUID, ModelIdentity, ef_fits.EfFit]


async def fit_all(
    engine: AsyncEngine,
    unfitted_only: bool = True,
    on_fit: Callable[[Fitted], None] | None = None,
) -> list[Fitted]:
    """Fit every registered own index (only those without a fit unless told otherwise): for
    indexes built before fits existed (`similar-sessions fit-indexes`); `on_fit` hears of
    each as it is fitted."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT account_id, model_identity FROM account_model_indexes "
                "WHERE NOT CAST(:unfitted AS boolean) OR ef_fit IS NULL "
                "ORDER BY account_id, model_identity"
            ),
            {"unfitted": unfitted_only},
        )
        registered = rows.all()
    fitted = []
    for account_id, model in registered:
        identity = ModelIdentity.parse(model)
        made = await fit_again(engine, account_id, identity)
        if made is not None:
            fitted.append((account_id, identity, made))
            if on_fit is not None:
                on_fit(fitted[-1])
    return fitted
